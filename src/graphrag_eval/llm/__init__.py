"""The LLM judge engine (:mod:`.engine`) and what it is made of: endpoints and their limits,
the clients of the providers behind one protocol and their registry (:mod:`.chat_client`,
:mod:`.providers`), retries, structured replies, the cache, cost, budget and dry run,
redaction, prompts and reply parsers, and the protocols of the embedding and BERTScore models
it is given (:mod:`.services`). See docs/llm.md."""
