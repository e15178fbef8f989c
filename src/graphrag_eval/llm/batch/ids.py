"""The custom id of a request in a batch (:func:`custom_id`), and what an error line says of
it (:func:`not_reached`). See docs/llm.md (batch mode)."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from graphrag_eval.llm.batch.protocol import BatchResult
from graphrag_eval.llm.repeat import current_repeat

__all__ = ["custom_id", "not_reached"]

_CANONICAL = msgspec.json.Encoder(order="sorted")


def custom_id(path: str, body: dict[str, Any]) -> str:
    """The custom id of a request: a hash of its canonical JSON (the endpoint, model,
    messages, parameters and schema, as the cache key of the call is made of them), so a
    resumed run finds the same ids; with the judge repeat the call belongs to (``llm.repeats``)
    past the first, as the cache key is, so the repeats are requests of their own."""
    keyed: dict[str, Any] = {"path": path, "body": body}
    repeat = current_repeat()
    if repeat:
        keyed["repeat"] = repeat
    digest = hashlib.sha256(_CANONICAL.encode(keyed)).hexdigest()
    return "ge-" + digest[:40]


def not_reached(result: BatchResult) -> bool:
    """Whether the error of ``result`` says the batch ended before its request was made
    (OpenAI's ``batch_expired``, ``batch_cancelled``), rather than the request failing."""
    error = result.error
    if error is None:
        return False
    return error.status_code is None and (error.code or "").startswith("batch_")
