"""How a request to an endpoint can fail, whatever client sent it (the engine's own HTTP
client, the ``openai`` SDK's or LiteLLM): an HTTP error reply (:class:`StatusError`), no
reply at all (:class:`Unreachable`), or a reply that is not the API's (:class:`UnusableReply`:
an HTML page with 200, say). The retry policy, the circuit breaker and the messages read
these, never a client's own exception classes (docs/llm.md, what the engine does with each
call).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "API_MARKERS",
    "StatusError",
    "Unreachable",
    "UnusableReply",
    "json_like",
    "status_error",
    "unreachable",
    "unusable_status",
]

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


class UnusableReply(Exception):
    """A reply that is not the API's though its status says success (an HTML page from a
    captive portal or a proxy), or that a caller's check refused (vectors of the wrong
    dimension): retried, and counted towards the endpoint's breaker like a 5xx."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail
        """What the reply was, in a few words (with its start, for a page)."""


def unusable_status(status: int) -> bool:
    """Whether an HTTP error status says the endpoint gives no usable reply: a server error
    (5xx: a gateway with nothing behind it) or a redirect (the base URL points elsewhere, a
    captive portal's login page)."""
    return status >= 500 or 300 <= status < 400


API_MARKERS = {"generation": b'"choices"', "embedding": b'"data"'}
"""The key every successful reply of an endpoint's API holds (a chat completion's
``choices``, an embeddings reply's ``data``), by the endpoint's role."""


def json_like(content: Any) -> bool:
    """Whether a successful reply's body may be the API's JSON (an object or a list): an HTML
    page, plain text or an empty body is not. Only its first bytes are looked at."""
    if not isinstance(content, bytes | bytearray):
        return False
    start = content[:1]
    if start in (b"{", b"["):
        return True
    return content[:4096].lstrip()[:1] in (b"{", b"[")


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
