"""The limits every call to one endpoint and model shares (a :class:`Lane`): a concurrency
limit that adapts to the endpoint's rate limiting, and the optional requests- and
tokens-per-minute limits.

The concurrency limit follows AIMD (additive increase, multiplicative decrease, as TCP's
congestion control). It starts at :data:`INITIAL_LIMIT` (or ``llm.max_concurrency`` if lower)
and, until the first 429, each reply while calls wait adds a slot (it doubles every round of
replies: "slow start", so a run does not open with a wave of 429s); a 429 multiplies it by
0.75 (once per wave: requests sent before the last decrease do not lower it again) and
remembers the limit it came at as the ceiling; each reply while calls are waiting for a
slot raises it by ``1 / limit``, about one slot per round of replies, up to one below the
ceiling, and above that eight times slower (probing whether the endpoint now takes more);
it stays within ``[1, llm.max_concurrency]``. So a provider that answers 429 above some
concurrency gets about that concurrency, not waves of 429s. See docs/llm.md (what the engine
does with each call) and docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from aiolimiter import AsyncLimiter

from graphrag_eval.config.llm import LLMConfig

__all__ = ["DECREASE_FACTOR", "INITIAL_LIMIT", "PROBE_ROUNDS", "Lane", "Ticket"]

DECREASE_FACTOR = 0.75
"""What a 429 multiplies the concurrency limit by."""
PROBE_ROUNDS = 8
"""Near the ceiling, rounds of replies per slot added."""
INITIAL_LIMIT = 8
"""Where the limit starts (slow start)."""


@dataclass(frozen=True, slots=True)
class Ticket:
    """A request's place in the lane: the decrease count when it was sent."""

    wave: int


class Lane:
    """The limits shared by every call to one endpoint and model: an adaptive concurrency
    limit of at most ``llm.max_concurrency`` calls in flight, and the optional requests- and
    tokens-per-minute limits."""

    def __init__(self, config: LLMConfig) -> None:
        self.max_concurrency = config.max_concurrency
        self.limit = float(min(INITIAL_LIMIT, config.max_concurrency))
        """The concurrency limit now (its whole part is the number of slots)."""
        self.lowest_limit = self.limit
        """The lowest the limit went in the run."""
        self.ceiling: float | None = None
        """The limit at the last 429 (``None`` before the first: slow start)."""
        self.in_flight = 0
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._wave = 0
        """Decreases so far: a 429 to a request sent before the last one is not news."""
        self.requests = (
            AsyncLimiter(config.requests_per_minute, 60) if config.requests_per_minute else None
        )
        self.tokens = (
            AsyncLimiter(config.tokens_per_minute, 60) if config.tokens_per_minute else None
        )

    @asynccontextmanager
    async def slot(self, tokens: int) -> AsyncIterator[Ticket]:
        """Hold a place in the lane for one request of about ``tokens`` tokens."""
        await self._acquire()
        try:
            if self.requests is not None:
                await self.requests.acquire()
            if self.tokens is not None:
                await self.tokens.acquire(min(tokens, self.tokens.max_rate))
            yield Ticket(self._wave)
        finally:
            self.in_flight -= 1
            self._wake()

    def succeeded(self) -> None:
        """A reply came back: one more slot per round of replies, while calls wait for one."""
        if self._waiting and self.limit < self.max_concurrency:
            if self.ceiling is None:
                step = 1.0  # slow start: doubling every round
            elif self.limit + 1 < self.ceiling:
                step = 1 / self.limit  # one slot a round
            else:
                step = 1 / (self.limit * PROBE_ROUNDS)
            self.limit = min(float(self.max_concurrency), self.limit + step)
            self._wake()

    def rate_limited(self, ticket: Ticket) -> None:
        """The endpoint answered 429 to the request of ``ticket``: lower the limit, unless
        it was already lowered after that request was sent."""
        if ticket.wave != self._wave:
            return
        self._wave += 1
        self.ceiling = self.limit
        self.limit = max(1.0, self.limit * DECREASE_FACTOR)
        self.lowest_limit = min(self.lowest_limit, self.limit)

    async def _acquire(self) -> None:
        if not self._waiting and self.in_flight < int(self.limit):
            self.in_flight += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.in_flight -= 1  # granted as it was cancelled: give the slot on
                self._wake()
            elif waiter in self._waiting:
                self._waiting.remove(waiter)
            raise

    def _wake(self) -> None:
        """Give free slots to the calls waiting longest."""
        while self._waiting and self.in_flight < int(self.limit):
            waiter = self._waiting.popleft()
            if not waiter.done():
                self.in_flight += 1
                waiter.set_result(None)
