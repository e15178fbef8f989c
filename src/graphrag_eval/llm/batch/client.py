"""The judge's client in batch mode (:class:`BatchingClient`): a
:class:`~graphrag_eval.llm.chat_client.ChatClient` whose chat requests go to the batch lane
(:mod:`.lane`), so the engine's cache, re-ask, usage, cost and statistics see one request and
one reply as for any other client; and the endpoint's limits in batch mode
(:class:`BatchSlots`): no concurrency limit and no deadline, since the requests wait for
their batch, not for a connection (docs/llm.md, batch mode).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from graphrag_eval.config.llm import LLMConfig
from graphrag_eval.llm.batch.lane import BatchLane
from graphrag_eval.llm.batch.registry import batch_provider_for
from graphrag_eval.llm.chat_client import ChatClient, RequestOptions
from graphrag_eval.llm.client import Endpoint
from graphrag_eval.llm.lane import Lane, Ticket
from graphrag_eval.llm.providers import ClientSpec
from graphrag_eval.llm.redaction import Redactor

if TYPE_CHECKING:
    import asyncio

__all__ = ["BATCH_DEADLINE_S", "BatchSlots", "BatchingClient", "batch_lane_of", "enable_batch"]

BATCH_DEADLINE_S = 7 * 24 * 3600.0
"""How long a call may wait for its batch (a batch has 24 hours; a resumed run's waited
before)."""

CHAT_PATH = "/chat/completions"


class BatchingClient:
    """The judge's client in batch mode: chat requests go to the batch lane; anything else
    (none today) to the endpoint's own client."""

    def __init__(self, client: ChatClient, lane: BatchLane) -> None:
        self.client = client
        self.lane = lane

    @property
    def base_url(self) -> str:
        return self.client.base_url

    def request_parameters(self, role: str, configured: Mapping[str, Any]) -> dict[str, Any]:
        return self.client.request_parameters(role, configured)

    async def post(self, path: str, fields: dict[str, Any], options: RequestOptions) -> bytes:
        """A chat request in a batch (``options``, the request's headers, query and timeout,
        do not apply to a line of a batch); anything else as the endpoint's client sends
        it."""
        if path != CHAT_PATH:
            return await self.client.post(path, fields, options)
        return await self.lane.post(path, fields)

    def price(self, model: str) -> tuple[float, float] | None:
        return self.client.price(model)

    async def close(self) -> None:
        try:
            await self.lane.close()
        finally:
            await self.client.close()


class BatchSlots(Lane):
    """An endpoint's limits in batch mode: every call may wait on its batch at once, for as
    long as a batch takes (:data:`BATCH_DEADLINE_S`)."""

    def __init__(self, config: LLMConfig) -> None:
        super().__init__(config)
        self.requests = self.tokens = None  # a batch is not sent request by request

    @contextlib.asynccontextmanager
    async def slot(self, tokens: int) -> AsyncIterator[Ticket]:
        self.in_flight += 1
        try:
            yield Ticket(0, 1)
        finally:
            self.in_flight -= 1

    def succeeded(self, ticket: Ticket | None = None, latency_s: float | None = None) -> None:
        pass

    def rate_limited(self, ticket: Ticket) -> None:
        pass

    def deadline_s(self, timeout_s: float, abandoned: int, last: bool) -> float:
        return BATCH_DEADLINE_S

    @contextlib.contextmanager
    def bounding(self, timer: asyncio.Timeout, started: float, last: bool) -> Iterator[None]:
        yield


def enable_batch(endpoint: Endpoint, config: LLMConfig, redactor: Redactor) -> BatchLane:
    """Put the judge's ``endpoint`` in batch mode: its chat requests go to the batch API of
    its provider (:func:`~.registry.batch_provider_for`: a :class:`ConfigError` naming the
    option when it has none, before anything is sent)."""
    provider = batch_provider_for(ClientSpec(endpoint.role, endpoint.settings, config, redactor))
    lane = BatchLane(provider, config.batch_poll_s, endpoint.breaker, redactor)
    endpoint.client = BatchingClient(endpoint.client, lane)
    endpoint.lane = BatchSlots(config)
    return lane


def batch_lane_of(generation: Endpoint | None) -> BatchLane | None:
    """The batch lane of the judge's endpoint (``None``: not in batch mode)."""
    client = generation.client if generation is not None else None
    return client.lane if isinstance(client, BatchingClient) else None
