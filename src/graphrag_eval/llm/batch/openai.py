"""OpenAI's Batch API (docs/llm.md, batch mode): the requests of a batch go as one JSONL file
(``POST /files``, ``purpose=batch``; each line ``{custom_id, method, url, body}``), the batch
is created on it (``POST /batches``, ``completion_window: 24h``), polled
(``GET /batches/{id}``: its ``status`` and ``request_counts``) and its results read from its
output and error files (``GET /files/{id}/content``: each line ``{id, custom_id, response:
{status_code, body}, error}``), in any order.

Its calls go with the headers, proxy and certificates of the engine's own client
(:mod:`graphrag_eval.llm.wire`): the key from the config, sent only to the endpoint and never
written; a redirect is not followed; 408, 409, 429 and 5xx replies, and calls that get no
reply, are retried with backoff (honouring ``Retry-After``), at most ``llm.max_retries``
times. A result file is read line by line, each line at most :data:`MAX_LINE_BYTES` and the
file at most :data:`MAX_FILE_BYTES`.
"""

from __future__ import annotations

import asyncio
import json
import random
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from graphrag_eval.config.secrets import url_credentials
from graphrag_eval.errors import CallFailed
from graphrag_eval.llm.batch.ids import usable_id
from graphrag_eval.llm.batch.openai_replies import batch_status, result_of
from graphrag_eval.llm.batch.protocol import (
    BatchRequest,
    BatchResult,
    BatchStatus,
    SubmitUncertain,
)
from graphrag_eval.llm.failures import UnusableReply, status_error, unreachable
from graphrag_eval.llm.providers import ClientSpec, api_key_of
from graphrag_eval.llm.retrying import retry_after_s, retryable
from graphrag_eval.llm.wire import (
    Timeouts,
    _headers,
    _proxy_for,
    _read,
    _ssl_context,
    _without_credentials,
    default_base_url,
)

if TYPE_CHECKING:
    import aiohttp

__all__ = ["MAX_FILE_BYTES", "MAX_LINE_BYTES", "OpenAIBatches", "batch_provider"]

MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest line of a result file read (one reply)."""
MAX_FILE_BYTES = 4 * 1024 * 1024 * 1024
"""The largest result file read (50,000 replies of 80 KB)."""

_ENCODER = msgspec.json.Encoder()


def batch_provider(spec: ClientSpec) -> OpenAIBatches:
    """The batch provider of an OpenAI(-compatible) judge (see :mod:`.registry`)."""
    settings = spec.settings
    base_url = settings.base_url or default_base_url()
    api_key = api_key_of(spec)
    spec.redactor.add(api_key, *url_credentials(base_url))
    config = spec.config
    return OpenAIBatches(
        base_url,
        api_key,
        timeouts=Timeouts(config.connect_timeout_s, config.timeout_s),
        max_retries=config.max_retries,
        backoff=(config.backoff_initial_s, config.backoff_max_s),
    )


class OpenAIBatches:
    """OpenAI's Batch API at one base URL (a :class:`~.protocol.BatchProvider`)."""

    name = "openai"
    max_requests = 50_000
    max_bytes = 190 * 1024 * 1024  # 200 MB a file, less the lines' framing

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        timeouts: Timeouts,
        max_retries: int,
        backoff: tuple[float, float],
    ) -> None:
        self._url, credentials = _without_credentials(base_url.rstrip("/"))
        headers = _headers(api_key, credentials)
        headers.pop("Content-Type")  # multipart for files, JSON for batches
        self._headers = headers
        self._timeouts = timeouts
        self._max_retries = max_retries
        self._backoff = backoff
        self._proxy = _proxy_for(self._url)
        self._session: aiohttp.ClientSession | None = None

    async def submit(self, requests: Sequence[BatchRequest]) -> str:
        lines = b"".join(
            _ENCODER.encode(
                {
                    "custom_id": request.custom_id,
                    "method": "POST",
                    "url": "/v1" + request.path,
                    "body": request.body,
                }
            )
            + b"\n"
            for request in requests
        )
        uploaded = await self._call("POST", "/files", upload=lines)
        file_id = _text(uploaded, "id", "the uploaded file")
        endpoint = "/v1" + (requests[0].path if requests else "/chat/completions")
        body = {"input_file_id": file_id, "endpoint": endpoint, "completion_window": "24h"}
        try:
            created = await self._call("POST", "/batches", body=body, create=True)
            return _text(created, "id", "the batch created")
        except SubmitUncertain:
            raise
        except CallFailed as exc:  # a success whose reply is not the batch's
            raise SubmitUncertain(f"{exc}: it may have been created (and be paid for)") from None

    async def status(self, batch_id: str) -> BatchStatus:
        return batch_status(batch_id, await self._call("GET", f"/batches/{batch_id}"))

    async def results(self, batch_id: str) -> AsyncIterator[BatchResult]:
        batch = await self._call("GET", f"/batches/{batch_id}")
        for key in ("output_file_id", "error_file_id"):
            file_id = batch.get(key)
            if file_id and not usable_id(file_id):
                raise CallFailed(f"the batch's {key} is not a file id: {str(file_id)[:60]!r}")
            if isinstance(file_id, str) and file_id:
                async for line in self._lines(f"/files/{file_id}/content"):
                    result = result_of(line)
                    if result is not None:
                        yield result

    async def cancel(self, batch_id: str) -> None:
        await self._call("POST", f"/batches/{batch_id}/cancel", body={})

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- HTTP -----------------------------------------------------------------------------

    async def _call(
        self,
        method: str,
        path: str,
        *,
        body: dict[str, Any] | None = None,
        upload: bytes | None = None,
        create: bool = False,
    ) -> dict[str, Any]:
        """One call of the API (with its retries): the reply's JSON object. A batch's
        creation (``create``) is sent again only after a reply saying it was not made (a
        4xx: 408, 409 and 429 retried, the others raised) or a connection never made; else
        :class:`SubmitUncertain`."""
        attempt = 0
        while True:
            try:
                return _json_object(await self._once(method, path, body, upload, create))
            except UnusableReply as exc:  # a proxy's page: retried, unless it may have created
                if create:
                    raise _uncertain(exc) from None
                error: Exception = UnusableReply(f"the batch API's reply to {method} {path}: {exc}")
                attempt += 1
                if attempt > self._max_retries:
                    raise error from None
                await asyncio.sleep(self._wait_s(error, attempt))
            except Exception as exc:
                attempt += 1
                if not retryable(exc) or attempt > self._max_retries:
                    raise
                await asyncio.sleep(self._wait_s(exc, attempt))

    def _wait_s(self, exc: BaseException, attempt: int) -> float:
        initial, longest = self._backoff
        asked = retry_after_s(exc)
        if asked is not None:
            return min(asked, longest)
        ceiling = min(longest, initial * 2 ** (attempt - 1))
        return random.uniform(ceiling / 2, ceiling)

    async def _once(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None,
        upload: bytes | None,
        create: bool = False,
    ) -> bytes:
        import aiohttp

        session = self._session or self._open()
        data: Any = None
        headers = dict(self._headers)
        if upload is not None:
            form = aiohttp.FormData()
            form.add_field("purpose", "batch")
            name = f"graphrag-eval-{uuid.uuid4().hex}.jsonl"
            form.add_field("file", upload, filename=name, content_type="application/jsonl")
            data = form
        elif body is not None:
            data = _ENCODER.encode(body)
            headers["Content-Type"] = "application/json"
        try:
            async with session.request(
                method,
                self._url + path,
                data=data,
                headers=headers,
                allow_redirects=False,
                proxy=self._proxy,
                timeout=self._timeout(),
            ) as response:
                content = await _read(response)
                if response.status >= 300:
                    error = status_error(response.status, content, response.headers)
                    if create and response.status >= 500:
                        raise _uncertain(error) from None
                    raise error
                return content
        except aiohttp.ClientConnectorError as exc:  # never sent: not created either
            raise unreachable(exc, isinstance(exc, TimeoutError)) from exc
        except (aiohttp.ClientError, TimeoutError) as exc:
            lost = unreachable(exc, isinstance(exc, TimeoutError))
            raise (_uncertain(lost) if create else lost) from exc

    async def _lines(self, path: str) -> AsyncIterator[bytes]:
        """The lines of a file's content, read as they come (retried while none was read)."""
        import aiohttp

        session = self._session or self._open()
        attempt = 0
        while True:
            try:
                async with session.get(
                    self._url + path,
                    headers=self._headers,
                    allow_redirects=False,
                    proxy=self._proxy,
                    timeout=self._timeout(),
                ) as response:
                    if response.status >= 300:
                        raise status_error(response.status, await _read(response), response.headers)
                    async for line in _split_lines(response.content.iter_any()):
                        yield line
                    return
            except (aiohttp.ClientError, TimeoutError) as exc:
                error: Exception = unreachable(exc, isinstance(exc, TimeoutError))
            except Exception as exc:
                error = exc
            attempt += 1
            if not retryable(error) or attempt > self._max_retries:
                raise error
            await asyncio.sleep(self._wait_s(error, attempt))

    def _timeout(self) -> aiohttp.ClientTimeout:
        """The configured connect and read timeouts (no bound on the whole call: a file of
        200 MB takes its time)."""
        import aiohttp

        connect, read = self._timeouts.connect, self._timeouts.read
        return aiohttp.ClientTimeout(sock_connect=connect, sock_read=read, connect=read)

    def _open(self) -> aiohttp.ClientSession:
        import aiohttp

        ssl: Any = _ssl_context() if self._url.startswith("https:") else True
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=8, ssl=ssl),
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        return self._session


async def _split_lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The non-empty lines of a stream of ``chunks``, bounded (:data:`MAX_LINE_BYTES`,
    :data:`MAX_FILE_BYTES`)."""
    buffer = b""
    total = 0
    async for chunk in chunks:
        total += len(chunk)
        if total > MAX_FILE_BYTES:
            raise CallFailed(f"a batch result file is larger than {MAX_FILE_BYTES} bytes")
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        if len(buffer) > MAX_LINE_BYTES:
            raise CallFailed(f"a line of a batch result file is over {MAX_LINE_BYTES} bytes")
        for line in lines:
            if line.strip():
                yield line
    if buffer.strip():
        yield buffer


def _json_object(content: bytes) -> dict[str, Any]:
    """The JSON object of a reply; :class:`UnusableReply` for anything else."""
    try:
        reply = json.loads(content)
    except (ValueError, RecursionError):
        raise UnusableReply("not JSON") from None
    if not isinstance(reply, dict):
        raise UnusableReply("not a JSON object")
    return reply


def _uncertain(error: Exception) -> SubmitUncertain:
    return SubmitUncertain(
        f"the batch API gave no usable reply to the creation of a batch ({error}): "
        "it may have been created (and be paid for)"
    )


def _text(reply: dict[str, Any], key: str, what: str) -> str:
    value = reply.get(key)
    if not isinstance(value, str) or not value:
        raise CallFailed(f"the batch API's reply for {what} has no {key}")
    return value
