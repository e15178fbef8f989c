"""How a request to an endpoint can fail, whatever client sent it (the engine's own HTTP
client, the ``openai`` SDK's or LiteLLM): an HTTP error reply (:class:`StatusError`), or no
reply at all (:class:`Unreachable`). The retry policy, the circuit breaker and the messages
read these two, never a client's own exception classes (docs/llm.md, what the engine does
with each call).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["StatusError", "Unreachable", "status_error", "unreachable"]

_CHAIN_LIMIT = 20
"""How far down a chain of exceptions to look for the one at its root."""


class StatusError(Exception):
    """The endpoint answered with an HTTP error status."""

    def __init__(
        self, status_code: int, message: str, body: Any, headers: Mapping[str, str]
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        """``Error code: 429 - <the reply's error message>``, worded as the SDK words it."""
        self.body = body
        """The reply's ``error`` object (or the whole JSON reply, or its text)."""
        self.headers = headers
        """The reply's headers (``retry-after-ms``, ``Retry-After``)."""


class Unreachable(Exception):
    """The request got no HTTP reply: the connection failed (refused, DNS, TLS, reset) or
    timed out."""

    def __init__(self, detail: str, timed_out: bool) -> None:
        super().__init__(detail)
        self.detail = detail
        """What the error at the root of the client's exception chain said."""
        self.timed_out = timed_out


def status_error(status: int, content: bytes, headers: Mapping[str, str]) -> StatusError:
    """The error for an HTTP error reply of ``content``: its message names the status and the
    reply's own ``error.message`` when it is JSON that has one."""
    message = f"Error code: {status}"
    text = content.decode("utf-8", "replace").strip()
    body: Any = text
    with contextlib.suppress(ValueError):
        body = json.loads(text)
    error = body.get("error", body) if isinstance(body, dict) else None
    detail = error.get("message") if isinstance(error, dict) else None
    if isinstance(detail, str) and detail:
        message += f" - {detail}"
    elif 300 <= status < 400 and headers.get("location"):
        message += f" - redirected to {headers['location']}: set base_url to where it points"
    return StatusError(status, message, error if error is not None else body, headers)


def unreachable(exc: BaseException, timed_out: bool) -> Unreachable:
    """The :class:`Unreachable` for a client's exception ``exc`` (``timed_out``: the client
    called it a timeout): told from the exception at the root of its chain, since a client
    may report a refused connection as a connect timeout."""
    root = exc
    for _ in range(_CHAIN_LIMIT):
        if root.__cause__ is None:
            break
        root = root.__cause__
    timed_out = isinstance(root, TimeoutError) or (root is exc and timed_out)
    detail = " ".join(str(root).split())[:200] or type(root).__name__
    return Unreachable(detail, timed_out)
