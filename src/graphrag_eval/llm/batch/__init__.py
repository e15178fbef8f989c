"""Batch mode (``llm.batch: true``, ``--batch``): the judge's requests go to the provider's
batch API, at half the price, instead of one call each (docs/llm.md, batch mode).

* :mod:`.protocol`: what a provider's batch API does (:class:`BatchProvider`) and the
  requests, statuses and results that cross it, in the engine's own request and reply shapes;
* :mod:`.registry`: the batch providers by name, and which one a judge uses (a judge without
  one is a configuration error before anything is sent);
* :mod:`.openai`: OpenAI's Batch API (files and batches); :mod:`.openai_replies` reads its
  batch objects and result lines.
"""

from graphrag_eval.llm.batch.protocol import (
    BatchError,
    BatchProvider,
    BatchRequest,
    BatchResult,
    BatchState,
    BatchStatus,
    chat_completion,
)
from graphrag_eval.llm.batch.registry import (
    BatchFactory,
    batch_provider_for,
    batch_provider_name,
    register_batch_provider,
    registered_batch_providers,
    unregister_batch_provider,
)

__all__ = [
    "BatchError",
    "BatchFactory",
    "BatchProvider",
    "BatchRequest",
    "BatchResult",
    "BatchState",
    "BatchStatus",
    "batch_provider_for",
    "batch_provider_name",
    "chat_completion",
    "register_batch_provider",
    "registered_batch_providers",
    "unregister_batch_provider",
]
