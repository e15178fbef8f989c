"""Where the local models used to live: they are in :mod:`graphrag_eval.embeddings` now
(:mod:`~graphrag_eval.embeddings.models`, :mod:`~graphrag_eval.embeddings.batching`,
:mod:`~graphrag_eval.embeddings.bert_score`). These names stay importable from here."""

from __future__ import annotations

from graphrag_eval.embeddings.batching import Batcher
from graphrag_eval.embeddings.bert_score import bert_score_of
from graphrag_eval.embeddings.models import (
    LocalModel,
    embeddings_extra_installed,
    hidden_layers,
    local_model,
    resolve_model,
)

__all__ = [
    "Batcher",
    "LocalModel",
    "bert_score_of",
    "embeddings_extra_installed",
    "hidden_layers",
    "local_model",
    "resolve_model",
]
