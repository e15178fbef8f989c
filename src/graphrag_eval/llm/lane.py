"""The limits every call to one endpoint and model shares (a :class:`Lane`): a concurrency
limit that adapts to the endpoint's rate limiting, the optional requests- and
tokens-per-minute limits, and a deadline per request from the latencies observed.

The concurrency limit follows AIMD (additive increase, multiplicative decrease, as TCP's
congestion control). It starts at :data:`INITIAL_LIMIT` (or ``llm.max_concurrency`` if lower)
and, until the first decrease, each reply while calls wait adds :data:`SLOW_START_STEP` of a
slot (x 1.5 every round of replies: "slow start", so a run does not open with a wave of
429s). Each request carries its *level*: the requests in flight when it was sent, itself
included.

* A 429 is read as rate limiting only when it is not *isolated*: among the last
  :data:`RECENT` replies, those to requests sent at its level or above were mostly 429s too
  (more than :data:`ISOLATED_SHARE` of them; while fewer than :data:`ISOLATED_EVIDENCE`
  succeeded, more than succeeded). A 429 among replies that succeeded at the same
  concurrency (an endpoint that answers 429 to a share of requests whatever the load)
  changes nothing: lowering the limit would not make it go away. With too few replies at
  its level to tell, it is isolated when the replies two levels and more below got 429s too
  (:data:`BACKGROUND_SHARE`). Nor does one 429 alone while no reply came at its level yet:
  a second one confirms it (or a level at or above the ceiling, which failed before).
* A 429 that is rate limiting lowers the limit (once per wave: requests sent before the last
  decrease do not lower it again) to below its level and at most :data:`DECREASE_FACTOR`
  times what it was, never below :data:`LOWEST_FACTOR` times, and its level becomes the
  ceiling. A concurrency cap of 8 that answers 429 to a 9th request brings the limit to 8,
  not lower.
* Each reply while calls are waiting for a slot raises the limit by ``1 / limit``, about one
  slot per round of replies, up to one below the ceiling, and above that
  :data:`PROBE_ROUNDS` times slower (probing whether the endpoint now takes more), twice
  slower again each time the probe finds the same ceiling (up to
  :data:`MAX_PROBE_ROUNDS`). Replies that mostly succeed at or above the ceiling, to
  requests sent after the last decrease (:data:`ISOLATED_EVIDENCE` of them, with few 429s),
  lift it above their level.

It stays within ``[1, llm.max_concurrency]``. So a provider that answers 429 above some
concurrency gets about that concurrency, not waves of 429s, and one that answers 429 at
random keeps its concurrency.

The deadline (:meth:`Lane.deadline_s`): once :data:`LATENCY_SAMPLES` replies came back, a
request still going after :data:`DEADLINE_FACTOR` times the 95th percentile of the recent
replies' latencies (at least :data:`DEADLINE_FLOOR_S`) is abandoned and retried, with twice
the deadline for each attempt abandoned before, the last attempt with the configured
timeouts. So a hung request holds its slot for seconds, not for the whole read timeout;
requests sent before the deadline was known get it when it is. See docs/llm.md (what the
engine does with each call, hung servers) and docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass

from aiolimiter import AsyncLimiter

from graphrag_eval.config.llm import LLMConfig

__all__ = [
    "BACKGROUND_EVIDENCE",
    "BACKGROUND_SHARE",
    "DEADLINE_FACTOR",
    "DEADLINE_FLOOR_S",
    "DECREASE_FACTOR",
    "INITIAL_LIMIT",
    "ISOLATED_EVIDENCE",
    "ISOLATED_SHARE",
    "LATENCY_SAMPLES",
    "LOWEST_FACTOR",
    "MAX_PROBE_ROUNDS",
    "PROBE_ROUNDS",
    "RECENT",
    "Lane",
    "Ticket",
]

DECREASE_FACTOR = 0.9
"""The most a decrease leaves of the concurrency limit."""
LOWEST_FACTOR = 0.7
"""The least a decrease leaves of it."""
PROBE_ROUNDS = 8
"""Near the ceiling, rounds of replies per slot added; twice as many each time a probe finds
the same ceiling again, up to :data:`MAX_PROBE_ROUNDS`."""
MAX_PROBE_ROUNDS = 64
INITIAL_LIMIT = 8
"""Where the limit starts (slow start)."""
SLOW_START_STEP = 0.5
"""Before the first decrease, what a reply adds to the limit (x 1.5 each round)."""
RECENT = 64
"""Replies remembered (their level and whether they were 429s) to tell an isolated 429."""
ISOLATED_SHARE = 0.25
"""A 429 is isolated when at most this share of the recent replies at its level and above
were 429s, and at least :data:`ISOLATED_EVIDENCE` of them succeeded (with fewer, when no
fewer succeeded than got 429s)."""
ISOLATED_EVIDENCE = 4
BACKGROUND_SHARE = 0.05
"""With too few replies at a 429's level to tell, it is isolated when at least this share of
the recent replies below its level were 429s too ..."""
BACKGROUND_EVIDENCE = 16
"""... and there were at least this many."""
LATENCY_SAMPLES = 20
"""Replies needed before requests get a deadline from the latencies observed."""
LATENCY_WINDOW = 200
"""Recent replies whose latencies the deadline is taken from."""
DEADLINE_FACTOR = 4.0
"""The deadline, in 95th percentiles of the recent latencies."""
DEADLINE_FLOOR_S = 1.0
"""The shortest deadline."""


@dataclass(frozen=True, slots=True)
class Ticket:
    """A request's place in the lane: the decrease count when it was sent, and its level
    (the requests in flight then, itself included)."""

    wave: int
    level: int = 1


class Lane:
    """The limits shared by every call to one endpoint and model: an adaptive concurrency
    limit of at most ``llm.max_concurrency`` calls in flight, the optional requests- and
    tokens-per-minute limits, and the requests' deadline."""

    def __init__(self, config: LLMConfig) -> None:
        self.max_concurrency = config.max_concurrency
        self.limit = float(min(INITIAL_LIMIT, config.max_concurrency))
        """The concurrency limit now (its whole part is the number of slots)."""
        self.lowest_limit = self.limit
        """The lowest the limit went in the run."""
        self.ceiling: float | None = None
        """The lowest level that failed at the last decrease (``None`` before: slow start)."""
        self.in_flight = 0
        self.isolated = 0
        """429s read as isolated (the limit left alone)."""
        self.abandoned = 0
        """Requests abandoned at a deadline shorter than the configured timeouts."""
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._wave = 0
        """Decreases so far: a 429 to a request sent before the last one is not news."""
        self._probe_rounds = PROBE_ROUNDS
        """Rounds of replies per slot above the ceiling now."""
        self._lowest_429: int | None = None
        """The lowest level of this wave's 429s so far."""
        self._recent: deque[tuple[int, bool]] = deque(maxlen=RECENT)
        """The last replies: (level, whether a 429)."""
        self._latencies: deque[float] = deque(maxlen=LATENCY_WINDOW)
        self._percentile: float | None = None
        """The 95th percentile of ``_latencies`` (``None``: to compute again)."""
        self._new_latencies = 0
        """Latencies added since ``_percentile`` was computed."""
        self._early: dict[asyncio.Timeout, float] = {}
        """The timers of requests in flight sent before the deadline was known, with the
        loop time they were sent."""
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
            yield Ticket(self._wave, self.in_flight)
        finally:
            self.in_flight -= 1
            self._wake()

    def succeeded(self, ticket: Ticket | None = None, latency_s: float | None = None) -> None:
        """A reply came back (to the request of ``ticket``, after ``latency_s``): one more
        slot per round of replies, while calls wait for one."""
        if ticket is not None:
            self._recent.append((ticket.level, False))
            if self.ceiling is not None and ticket.level >= self.ceiling:
                self._raise_ceiling(ticket)
        if latency_s is not None:
            self._latencies.append(latency_s)
            self._new_latencies += 1
            if self._new_latencies >= 16:
                self._percentile = None
            if len(self._latencies) == LATENCY_SAMPLES and self._early:
                self._bound_early()
        if self._waiting and self.limit < self.max_concurrency:
            if self.ceiling is None:
                step = SLOW_START_STEP
            elif self.limit + 1 < self.ceiling:
                step = 1 / self.limit  # one slot a round
            else:
                step = 1 / (self.limit * self._probe_rounds)
            self.limit = min(float(self.max_concurrency), self.limit + step)
            self._wake()

    def rate_limited(self, ticket: Ticket) -> None:
        """The endpoint answered 429 to the request of ``ticket``: lower the limit, unless
        it was already lowered after that request was sent or the 429 is isolated."""
        self._recent.append((ticket.level, True))
        if ticket.wave != self._wave:
            return
        level = min(ticket.level, self._lowest_429 or ticket.level)
        succeeded, limited = self._replies_from(level)
        if _isolated(succeeded, limited) or self._background(level, succeeded):
            self.isolated += 1
            self._lowest_429 = None
            return
        self._lowest_429 = level
        at_ceiling = self.ceiling is not None and ticket.level >= self.ceiling
        if limited < 2 and not at_ceiling:
            return  # one 429 and no reply there yet: wait for a second one
        self._wave += 1
        self._lowest_429 = None
        below = min(self.limit * DECREASE_FACTOR, level - 1.0)
        self.limit = max(1.0, self.limit * LOWEST_FACTOR, below)
        ceiling = max(float(level), self.limit + 1)
        if ceiling == self.ceiling:  # the same limit again: probe it half as often
            self._probe_rounds = min(MAX_PROBE_ROUNDS, 2 * self._probe_rounds)
        else:
            self._probe_rounds = PROBE_ROUNDS
        self.ceiling = ceiling
        self.lowest_limit = min(self.lowest_limit, self.limit)

    def _replies_from(self, level: int) -> tuple[int, int]:
        """How many of the recent replies at ``level`` and above succeeded, how many were
        429s."""
        succeeded = limited = 0
        for seen, was_limited in self._recent:
            if seen >= level:
                if was_limited:
                    limited += 1
                else:
                    succeeded += 1
        return succeeded, limited

    def _background(self, level: int, succeeded: int) -> bool:
        """Whether, with too few replies at ``level`` and above to tell (``succeeded`` of
        them succeeded), the recent replies at least two levels below it got 429s too (at
        least :data:`BACKGROUND_SHARE` of them): 429s at any concurrency, not a limit above
        it. (Not the level just below: at a concurrency cap, a request sent as a reply
        leaves may find the cap still full.)"""
        if succeeded >= ISOLATED_EVIDENCE:
            return False
        below = [was_limited for seen, was_limited in self._recent if seen < level - 1]
        return len(below) >= BACKGROUND_EVIDENCE and sum(below) >= BACKGROUND_SHARE * len(below)

    def _raise_ceiling(self, ticket: Ticket) -> None:
        """A reply at or above the ceiling to a request sent after the last decrease: when
        the recent replies there mostly succeeded, the ceiling goes above its level."""
        if ticket.wave != self._wave:
            return
        succeeded, limited = self._replies_from(ticket.level)
        if succeeded >= ISOLATED_EVIDENCE and _isolated(succeeded, limited):
            self.ceiling = ticket.level + 1.0
            self._probe_rounds = PROBE_ROUNDS

    def deadline_s(self, timeout_s: float, abandoned: int, last: bool) -> float:
        """How long an attempt of a request may take: ``timeout_s`` (the configured
        timeouts) for the ``last`` one and until enough replies came back, else the deadline
        from the latencies observed, doubled for each attempt of the request ``abandoned``
        at its deadline before."""
        if last or len(self._latencies) < LATENCY_SAMPLES:
            return timeout_s
        if self._percentile is None:
            ordered = sorted(self._latencies)
            self._new_latencies = 0
            self._percentile = ordered[math.ceil(0.95 * len(ordered)) - 1]
        base = max(DEADLINE_FLOOR_S, DEADLINE_FACTOR * self._percentile)
        return min(timeout_s, base * 2.0**abandoned)

    @contextmanager
    def bounding(self, timer: asyncio.Timeout, started: float, last: bool) -> Iterator[None]:
        """While a request sent at loop time ``started`` runs under ``timer``: if it was
        sent with the configured timeouts because too few replies had come back (and it is
        not the ``last`` attempt), shorten ``timer`` to the deadline from the latencies as
        soon as they are known (a request that hung at the start of a run is abandoned
        then, not at the end of its timeout)."""
        if last or len(self._latencies) >= LATENCY_SAMPLES:
            yield
            return
        self._early[timer] = started
        try:
            yield
        finally:
            self._early.pop(timer, None)

    def _bound_early(self) -> None:
        """Give the requests sent before the deadline was known that deadline."""
        deadline = self.deadline_s(math.inf, 0, last=False)
        now = asyncio.get_running_loop().time()
        for timer, started in self._early.items():
            when = timer.when()
            if when is None or started + deadline < when:
                timer.reschedule(max(now, started + deadline))
        self._early.clear()

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


def _isolated(succeeded: int, limited: int) -> bool:
    """Whether replies at some level (``succeeded`` of them, ``limited`` 429s) mostly
    succeeded: a 429 among them is isolated. With fewer than :data:`ISOLATED_EVIDENCE` that
    succeeded, when they are no fewer than the 429s."""
    if succeeded < ISOLATED_EVIDENCE:
        return 0 < succeeded >= limited
    return limited <= ISOLATED_SHARE * (succeeded + limited)
