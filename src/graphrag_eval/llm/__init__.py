"""The LLM judge engine (:mod:`.engine`) and what it is made of: endpoints and their limits,
retries, structured replies, the cache, cost, budget and dry run, redaction, prompts and
reply parsers. See docs/llm.md."""
