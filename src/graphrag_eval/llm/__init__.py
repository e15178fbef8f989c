"""The LLM judge engine: clients, limits, retries, cache, cost (see :mod:`.engine`)."""
