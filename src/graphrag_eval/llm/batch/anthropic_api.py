"""Anthropic's Message Batches API over HTTP (aiohttp, the ``llm`` extra): create a batch,
retrieve it, cancel it, and read its results (docs/llm.md, "Anthropic Message Batches").

* ``POST /v1/messages/batches`` ``{"requests": [{"custom_id", "params"}]}``, ``GET
  /v1/messages/batches/{id}``, ``POST /v1/messages/batches/{id}/cancel``: each answers the
  batch, a :class:`MessageBatch` here (its ``processing_status``: ``in_progress``,
  ``canceling`` or ``ended``, and its ``request_counts``);
* the results, once the batch has ended: JSON Lines of ``{"custom_id", "result"}`` in any
  order, read line by line (each line bounded, :data:`MAX_RESULT_LINE_BYTES`).

Every request carries the key (``x-api-key``) and ``anthropic-version``; redirects are not
followed (the key would go with them), and the results are read from the batch's
``results_url`` only when it is under the configured base URL (else from the API's own path
under it): a reply never sends the key elsewhere. Failures are :mod:`..failures`' (an HTTP
error reply, no reply, a reply that is not the API's).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graphrag_eval.errors import CallFailed
from graphrag_eval.llm.batch.ids import usable_id
from graphrag_eval.llm.failures import UnusableReply, status_error, unreachable
from graphrag_eval.llm.wire import Timeouts, _proxy_for, _read, _ssl_context
from graphrag_eval.version import __version__

if TYPE_CHECKING:
    import aiohttp

__all__ = [
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_VERSION",
    "MAX_RESULT_LINE_BYTES",
    "MessageBatch",
    "MessageBatches",
]

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
MAX_RESULT_LINE_BYTES = 16 * 1024 * 1024
"""The longest line of a batch's results read (one request's result: a judge reply is far
smaller)."""

STATUSES = ("in_progress", "canceling", "ended")
COUNTS = ("processing", "succeeded", "errored", "canceled", "expired")


@dataclass(frozen=True, slots=True)
class MessageBatch:
    """A Message Batch as the API describes it."""

    id: str
    status: str
    """``in_progress``, ``canceling`` or ``ended``."""
    counts: Mapping[str, int]
    """Its requests by state: processing, succeeded, errored, canceled, expired."""
    results_url: str | None

    @property
    def ended(self) -> bool:
        return self.status == "ended"

    @classmethod
    def of(cls, body: Any) -> MessageBatch:
        """The batch of a reply; :class:`UnusableReply` for what is not one."""
        if not isinstance(body, dict) or body.get("type") != "message_batch":
            raise UnusableReply("the reply is not a message batch")
        batch_id, status, counts = body.get("id"), body.get("processing_status"), {}
        raw = body.get("request_counts")
        for key in COUNTS:
            value = raw.get(key) if isinstance(raw, dict) else None
            counts[key] = value if isinstance(value, int) and value >= 0 else 0
        if not usable_id(batch_id) or status not in STATUSES:
            raise UnusableReply("the message batch has no id or an unknown processing_status")
        url = body.get("results_url")
        return cls(batch_id, str(status), counts, url if isinstance(url, str) else None)


class MessageBatches:
    """The Message Batches API of one endpoint; its aiohttp session opens with the first
    request."""

    def __init__(self, base_url: str, api_key: str, timeouts: Timeouts) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeouts = timeouts
        self._headers = {
            "x-api-key": api_key,
            "anthropic-version": ANTHROPIC_VERSION,
            "content-type": "application/json",
            "accept": "application/json",
            "user-agent": f"graphrag-eval/{__version__}",
        }
        self._session: aiohttp.ClientSession | None = None
        self._proxy = _proxy_for(self.base_url)

    async def create(self, requests: list[dict[str, Any]]) -> MessageBatch:
        """Submit ``requests`` (``{"custom_id", "params"}`` each) as one batch."""
        body = json.dumps({"requests": requests}, ensure_ascii=False).encode()
        return MessageBatch.of(await self._json("POST", "/v1/messages/batches", body))

    async def retrieve(self, batch_id: str) -> MessageBatch:
        return MessageBatch.of(await self._json("GET", f"/v1/messages/batches/{batch_id}"))

    async def cancel(self, batch_id: str) -> MessageBatch:
        path = f"/v1/messages/batches/{batch_id}/cancel"
        return MessageBatch.of(await self._json("POST", path, b""))

    async def results(self, batch: MessageBatch) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Each request's ``(custom_id, result)`` of an ended batch, in the order they come;
        a line that is not a result is skipped (its request gets none, and is retried as
        one that failed)."""
        import aiohttp

        url = batch.results_url
        if not (url and url.startswith(self.base_url + "/")):
            # the key goes nowhere but the configured endpoint
            url = f"{self.base_url}/v1/messages/batches/{batch.id}/results"
        try:
            async with self._send("GET", url, None) as response:
                if response.status >= 300:
                    raise status_error(response.status, await _read(response), response.headers)
                async for line in _lines(response):
                    found = _result(line)
                    if found is not None:
                        yield found
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise unreachable(exc, isinstance(exc, TimeoutError)) from exc

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _json(self, method: str, path: str, body: bytes | None = None) -> Any:
        """``method path`` with ``body``; the reply's JSON (an error for an error reply)."""
        import aiohttp

        try:
            async with self._send(method, self.base_url + path, body) as response:
                content = await _read(response)
                if response.status >= 300:
                    raise status_error(response.status, content, response.headers)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise unreachable(exc, isinstance(exc, TimeoutError)) from exc
        try:
            return json.loads(content)
        except ValueError:
            raise UnusableReply(f"the reply is not JSON: {content[:80]!r}") from None

    def _send(self, method: str, url: str, body: bytes | None) -> Any:
        import aiohttp

        session = self._session or self._open()
        timeout = aiohttp.ClientTimeout(
            sock_connect=self.timeouts.connect,
            sock_read=self.timeouts.read,
            connect=self.timeouts.read,
        )
        return session.request(
            method,
            url,
            data=body,
            headers=self._headers,
            timeout=timeout,
            allow_redirects=False,
            proxy=self._proxy,
        )

    def _open(self) -> aiohttp.ClientSession:
        import aiohttp

        ssl = _ssl_context() if self.base_url.startswith("https:") else True
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=8, ssl=ssl),
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        return self._session


async def _lines(response: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """The reply's non-empty lines, each refused past :data:`MAX_RESULT_LINE_BYTES`."""
    pending = bytearray()
    async for chunk in response.content.iter_any():
        searched = len(pending)
        pending += chunk
        start = 0
        while (end := pending.find(b"\n", max(start, searched))) >= 0:
            if pending[start:end].strip():
                yield bytes(pending[start:end])
            start = end + 1
        del pending[:start]
        if len(pending) > MAX_RESULT_LINE_BYTES:
            raise CallFailed(
                f"a line of the batch's results is longer than {MAX_RESULT_LINE_BYTES} bytes"
            )
    if pending.strip():
        yield bytes(pending)


def _result(line: bytes) -> tuple[str, dict[str, Any]] | None:
    """A results line's ``(custom_id, result)``; ``None`` for what is not one."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # nested past the parser: not a result either
        return None
    if not isinstance(record, dict):
        return None
    custom_id, result = record.get("custom_id"), record.get("result")
    if not isinstance(custom_id, str) or not isinstance(result, dict):
        return None
    return custom_id, result
