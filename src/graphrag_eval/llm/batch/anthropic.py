"""Anthropic's Message Batches as a batch provider (:class:`~.protocol.BatchProvider`,
registered as ``anthropic``, the provider name Anthropic judges have): the judge's
chat-completions requests go as Messages API requests of one batch, and each result comes
back as the chat completion the engine reads (docs/llm.md, "Anthropic Message Batches").

The batch provider talks to the API directly over HTTP (:mod:`.anthropic_api`, aiohttp), not
through LiteLLM; the requests are those LiteLLM makes on the synchronous path
(:mod:`.anthropic_messages`), so a run gives the same values in batch mode. The key is the
judge's (``api_key``, ``api_key_env``, else ``ANTHROPIC_API_KEY``), sent only to the
configured endpoint and redacted from every message.

The API's statuses map to the protocol's states: ``in_progress`` and ``canceling`` are
running; an ``ended`` batch is ``cancelled`` when some of its requests were cancelled,
``expired`` when some expired (and is shown as ``canceled`` or ``expired``, the API's words
for those requests), else ``ended``. Result lines of requests the batch never
reached (``canceled``, ``expired``) give no result (the protocol's "a request without a
result"); an ``errored`` line is an error with the HTTP status its error type stands for.

Requests to the API are retried as the engine retries a request (429, 408, 409, 5xx, no
reply), with backoff; but a batch is created at most once: its creation is sent again only
after a reply that says it was not (429, 529 overloaded), never after a timeout, where the
batch may exist already.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from graphrag_eval.config.llm import LLMConfig
from graphrag_eval.config.secrets import url_credentials
from graphrag_eval.errors import ConfigError
from graphrag_eval.llm.batch.anthropic_api import ANTHROPIC_BASE_URL, MessageBatch, MessageBatches
from graphrag_eval.llm.batch.anthropic_messages import message_params, reply_body
from graphrag_eval.llm.batch.protocol import (
    BatchError,
    BatchProvider,
    BatchRequest,
    BatchResult,
    BatchState,
    BatchStatus,
    SubmitUncertain,
)
from graphrag_eval.llm.failures import StatusError, Unreachable, UnusableReply
from graphrag_eval.llm.providers import ClientSpec
from graphrag_eval.llm.redaction import Redactor
from graphrag_eval.llm.retrying import retry_after_s, retryable
from graphrag_eval.llm.wire import Timeouts

__all__ = ["ERROR_STATUS", "AnthropicBatches", "batch_provider"]

T = TypeVar("T")

KEY_VARIABLE = "ANTHROPIC_API_KEY"
MAX_REQUESTS = 100_000
"""The most requests one Message Batch takes."""
MAX_BYTES = 200_000_000
"""The largest batch, in bytes of request bodies (the API takes 256 MB: a margin for the
Messages API's form of each request)."""

ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status of each of the API's error types (its errors page)."""

_NOT_CREATED = (429, 529)
"""Statuses after which a batch's creation is sent again: the API says it did not create it."""


class AnthropicBatches:
    """The Message Batches API of the judge's endpoint, as a batch provider."""

    name = "anthropic"
    max_requests = MAX_REQUESTS
    max_bytes = MAX_BYTES

    def __init__(self, api: MessageBatches, config: LLMConfig, redactor: Redactor) -> None:
        self.api = api
        self.config = config
        self.redactor = redactor

    async def submit(self, requests: Sequence[BatchRequest]) -> str:
        entries = [{"custom_id": r.custom_id, "params": message_params(r.body)} for r in requests]
        try:
            created = await self._retried(
                lambda: self.api.create(entries),
                lambda exc: isinstance(exc, StatusError) and exc.status_code in _NOT_CREATED,
            )
        except StatusError as exc:
            if exc.status_code < 500 or exc.status_code in _NOT_CREATED:
                raise  # refused: not created
            raise _uncertain(exc) from None
        except (Unreachable, UnusableReply) as exc:  # the reply was lost or is not a batch
            raise _uncertain(exc) from None
        return created.id

    async def status(self, batch_id: str) -> BatchStatus:
        batch = await self._retried(lambda: self.api.retrieve(batch_id))
        return batch_status(batch)

    async def results(self, batch_id: str) -> AsyncIterator[BatchResult]:
        batch = await self._retried(lambda: self.api.retrieve(batch_id))
        async for custom_id, result in self.api.results(batch):
            found = self._result(custom_id, result)
            if found is not None:
                yield found

    async def cancel(self, batch_id: str) -> None:
        await self._retried(lambda: self.api.cancel(batch_id))

    async def close(self) -> None:
        await self.api.close()

    def _result(self, custom_id: str, result: Mapping[str, Any]) -> BatchResult | None:
        """One results line as the protocol's result (``None``: the request got none)."""
        kind = result.get("type")
        if kind == "succeeded":
            message = result.get("message")
            try:
                return BatchResult(custom_id, body=reply_body(message or {}))
            except (ValueError, AttributeError):
                error = BatchError("the result is not a message of the Messages API", 500)
                return BatchResult(custom_id, error=error)
        if kind == "errored":
            return BatchResult(custom_id, error=self._error(result.get("error")))
        return None  # canceled, expired: the batch never reached it

    def _error(self, error: Any) -> BatchError:
        """An ``errored`` result's error (``{"type": "error", "error": {"type", "message"}}``)."""
        inner = error.get("error") if isinstance(error, Mapping) else None
        inner = inner if isinstance(inner, Mapping) else {}
        kind = inner.get("type")
        text = inner.get("message")
        message = self.redactor.redact(str(text)) if text else "the request failed"
        code = str(kind) if isinstance(kind, str) else None
        return BatchError(message, ERROR_STATUS.get(code or "", 500), code)

    async def _retried(
        self,
        send: Callable[[], Awaitable[T]],
        again: Callable[[BaseException], bool] = retryable,
    ) -> T:
        """``send()``, sent again while it fails in a way ``again`` retries, with the
        engine's backoff (``llm.max_retries``, ``backoff_initial_s``, ``backoff_max_s``,
        honouring ``Retry-After``)."""
        config = self.config
        for attempt in range(config.max_retries + 1):
            try:
                return await send()
            except Exception as exc:
                if attempt == config.max_retries or not again(exc):
                    raise
                asked = retry_after_s(exc)
                delay = config.backoff_initial_s * 2**attempt * random.uniform(0.5, 1.0)
                await asyncio.sleep(min(config.backoff_max_s, asked if asked else delay))
        raise AssertionError("unreachable")  # pragma: no cover


def _uncertain(error: Exception) -> SubmitUncertain:
    return SubmitUncertain(
        f"the Message Batches API gave no usable reply to the creation of a batch ({error}): "
        "it may have been created (and be paid for)"
    )


def batch_status(batch: MessageBatch) -> BatchStatus:
    """The protocol's status of a Message Batch."""
    counts = batch.counts
    state: BatchState = "running"
    word = batch.status
    if batch.ended and counts["canceled"]:
        state, word = "cancelled", "canceled"  # the API's word for its requests
    elif batch.ended and counts["expired"]:
        state, word = "expired", "expired"
    elif batch.ended:
        state = "ended"
    return BatchStatus(
        batch_id=batch.id,
        status=word,
        state=state,
        done=counts["succeeded"] + counts["errored"],
        failed=counts["errored"],
        total=sum(counts.values()),
    )


def batch_provider(spec: ClientSpec) -> BatchProvider:
    """The Message Batches API of the judge's endpoint (``spec``: its synchronous client's);
    :class:`ConfigError` without a key."""
    settings, role = spec.settings, spec.role
    if settings.api_key is not None:
        key = settings.api_key.get_secret_value()
    else:
        variable = settings.api_key_env or KEY_VARIABLE
        key = os.environ.get(variable, "")
        if not key:
            raise ConfigError(
                f"no API key: set the environment variable {variable} (or llm.{role}.api_key)",
                field=f"llm.{role}",
            )
    base_url = settings.base_url or ANTHROPIC_BASE_URL
    spec.redactor.add(key, *url_credentials(base_url))
    timeouts = Timeouts(spec.config.connect_timeout_s, spec.config.timeout_s)
    return AnthropicBatches(MessageBatches(base_url, key, timeouts), spec.config, spec.redactor)
