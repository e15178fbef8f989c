"""Reading OpenAI's Batch API (docs/llm.md, batch mode): a batch object's status, counts and
failure (:func:`batch_status`), and a line of its output or error file
(:func:`result_of`), in the protocol's shapes (:mod:`.protocol`); a reply that is not what
the API gives is read as far as it goes, never trusted for more."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from graphrag_eval.llm.batch.protocol import BatchError, BatchResult, BatchState, BatchStatus

__all__ = ["batch_status", "result_of"]

_STATES: dict[str, BatchState] = {
    "validating": "running",
    "in_progress": "running",
    "finalizing": "running",
    "cancelling": "running",
    "completed": "ended",
    "expired": "expired",
    "cancelled": "cancelled",
    "failed": "failed",
}
_ENCODER = msgspec.json.Encoder()


def batch_status(batch_id: str, batch: dict[str, Any]) -> BatchStatus:
    status = batch.get("status")
    status = status if isinstance(status, str) else "unknown"
    counts = batch.get("request_counts")
    counts = counts if isinstance(counts, dict) else {}

    def count(key: str) -> int:
        value = counts.get(key)
        return value if isinstance(value, int) and value >= 0 else 0

    state = _STATES.get(status, "running")
    return BatchStatus(
        batch_id,
        _printable(status, 40),
        state,
        count("completed"),
        count("failed"),
        count("total"),
        _failure(batch.get("errors")),
    )


def _failure(errors: Any) -> str | None:
    """The first of a failed batch's ``errors`` (``{data: [{code, message, line}]}``)."""
    data = errors.get("data") if isinstance(errors, dict) else None
    first = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else {}
    parts = [str(first[key]) for key in ("code", "message") if first.get(key)]
    return _printable(": ".join(parts), 300) if parts else None


def _printable(text: str, limit: int) -> str:
    """``text`` without control characters (a terminal's escapes), at most ``limit``."""
    return "".join(char for char in text[: limit * 4] if char.isprintable())[:limit]


def result_of(line: bytes) -> BatchResult | None:
    """The result of one line of a result file; ``None`` for a line that is not one."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("custom_id"), str):
        return None
    custom_id = record["custom_id"]
    response = record.get("response")
    error = record.get("error")
    if isinstance(response, dict):
        status = response.get("status_code")
        body = response.get("body")
        if status == 200 and isinstance(body, dict):
            return BatchResult(custom_id, body=_ENCODER.encode(body))
        if isinstance(status, int):
            detail = body.get("error") if isinstance(body, dict) else None
            message = detail.get("message") if isinstance(detail, dict) else None
            return BatchResult(
                custom_id,
                error=BatchError(f"Error code: {status} - {message or 'no message'}", status),
            )
    code = error.get("code") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return BatchResult(
        custom_id,
        error=BatchError(
            str(message or code or "no result"), None, code if isinstance(code, str) else None
        ),
    )
