"""The custom id of a request in a batch (:func:`custom_id`), what an error line says of it
(:func:`not_reached`), and which ids a provider gives are used (:func:`usable_id`). See
docs/llm.md (batch mode)."""

from __future__ import annotations

import hashlib
import re
from typing import Any, TypeGuard

import msgspec

from graphrag_eval.llm.batch.protocol import BatchResult

__all__ = ["ID_PATTERN", "custom_id", "not_reached", "usable_id"]

ID_PATTERN = re.compile(r"(?!\.{1,2}\Z)[A-Za-z0-9_.:-]{1,200}")
"""A batch's or a file's id as graphrag-eval puts it in a URL's path and in the checkpoint:
letters, digits and ``_.:-``, at most 200, not ``.`` or ``..``."""

_CANONICAL = msgspec.json.Encoder(order="sorted")


def custom_id(path: str, body: dict[str, Any], repeat: int = 0) -> str:
    """The custom id of a request: a hash of its canonical JSON (the endpoint, model,
    messages, parameters and schema, as the cache key of the call is made of them) and of
    its ``repeat`` (``llm.repeats``: each repeat a request of its own; repeat 0 keeps the id
    of a run without repeats), so a resumed run finds the same ids."""
    key: dict[str, Any] = {"path": path, "body": body}
    if repeat:
        key["repeat"] = repeat
    digest = hashlib.sha256(_CANONICAL.encode(key)).hexdigest()
    return "ge-" + digest[:40]


def not_reached(result: BatchResult) -> bool:
    """Whether the error of ``result`` says the batch ended before its request was made
    (OpenAI's ``batch_expired``, ``batch_cancelled``), rather than the request failing."""
    error = result.error
    if error is None:
        return False
    return error.status_code is None and (error.code or "").startswith("batch_")


def usable_id(value: object) -> TypeGuard[str]:
    """Whether a provider's id of a batch or a file is one :data:`ID_PATTERN` takes (else it
    is not put in a path: it could name another of the API's routes)."""
    return isinstance(value, str) and ID_PATTERN.fullmatch(value) is not None
