"""The run's spending policies: the cost cap and the dry run.

* **Cost cap** (``llm.max_cost_usd`` or ``--max-cost``): each request reserves its estimated
  cost before it is sent (the prompt's tokens and ``max_tokens``, or 300, reply tokens) and
  gives the reservation back when its reply is counted at its real cost. A request starts
  only while what was spent plus what is reserved plus its own estimate stays within the cap
  (it waits for the requests in flight when only their reservations are in the way), so the
  cap holds within what one reply costs beyond its estimate.
* **Dry run**: every call is counted with estimated tokens and cost instead of being made.

See docs/llm.md (cost).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from graphrag_eval.errors import BudgetExhausted, NotCalled
from graphrag_eval.llm.pricing import PriceTable, TokenUsage, estimate_tokens
from graphrag_eval.llm.stats import CallStats

__all__ = ["DRY_RUN_REPLY_TOKENS", "Budget", "FollowUp"]

DRY_RUN_REPLY_TOKENS = 300
"""Reply tokens assumed per judge call in a dry run when ``max_tokens`` is not set."""


@dataclass(frozen=True, slots=True)
class FollowUp:
    """The calls a metric would make after a judge call, from its reply. A dry run does not
    make that call, so it counts these with it instead (the metric says what they would
    be; the engine decides whether to count them)."""

    judge_prompt: str | None = None
    """A judge call that would follow, with this prompt (approximating the real one)."""
    embedding_tokens: int = 0
    """Estimated tokens of the embeddings that would follow."""
    embedding_texts: int = 0
    """How many texts would be embedded (none: no embedding call)."""


class Budget:
    """Whether a call may be made, and the dry run's estimate of those that are not."""

    def __init__(
        self,
        stats: CallStats,
        prices: PriceTable,
        *,
        dry_run: bool,
        max_cost_usd: float | None,
    ) -> None:
        self.stats = stats
        self.prices = prices
        self.dry_run = dry_run
        self.max_cost_usd = max_cost_usd
        stats.max_cost_usd = max_cost_usd
        self._planned: set[str] = set()
        """Dry run: the judge requests counted so far."""
        self.reserved_usd = 0.0
        """The estimated cost of the requests in flight (:meth:`reserve`)."""
        self._reservations = 0
        """Requests in flight with a reservation (none: nothing can make room)."""
        self._freed: asyncio.Event | None = None
        """Set when a reservation is given back (for the requests waiting for room)."""

    def check(self) -> None:
        """Before a call: a dry run stops here, and so does a run past its cost limit. Each
        request then reserves its cost when it gets its slot (:meth:`reserve`)."""
        if self.dry_run:
            raise NotCalled("dry run: the call was counted, not made")
        if self.max_cost_usd is not None and self.stats.cost_usd >= self.max_cost_usd:
            self._reached()

    async def reserve(self, cost_usd: float) -> float:
        """Before a request of about ``cost_usd``: reserve it under the cost limit, waiting
        while the reservations of requests in flight leave no room for it;
        :class:`BudgetExhausted` when what was spent leaves none. Returns what was reserved,
        for :meth:`release` once the reply's real cost is counted."""
        self.check()
        limit = self.max_cost_usd
        if limit is None or not cost_usd:
            return 0.0  # nothing to reserve (an unpriced model costs $0)
        while self.stats.cost_usd + self.reserved_usd + cost_usd > limit:
            if not self._reservations or self.stats.cost_usd + cost_usd > limit:
                self._reached()  # nothing in flight can make room for it
            if self._freed is None:
                self._freed = asyncio.Event()
            await self._freed.wait()
        self.reserved_usd += cost_usd
        self._reservations += 1
        return cost_usd

    def release(self, reserved_usd: float) -> None:
        """Give back a reservation of :meth:`reserve`. The requests waiting for room run
        after the reply, if any, is counted at its real cost: its caller counts it before it
        awaits anything."""
        if not reserved_usd:
            return
        self._reservations -= 1
        # Without requests in flight, nothing is reserved (no rounding left over).
        self.reserved_usd = self.reserved_usd - reserved_usd if self._reservations else 0.0
        if self._freed is not None:
            self._freed.set()
            self._freed = None

    def _reached(self) -> NoReturn:
        assert self.max_cost_usd is not None
        self.stats.budget_reached = True
        raise BudgetExhausted(f"not computed: the cost limit of ${self.max_cost_usd:g} was reached")

    def first_time(self, key: str) -> bool:
        """Whether a dry run meets the request ``key`` for the first time (the same request
        twice in a run is made once: merged, then cached)."""
        if not self.dry_run or key in self._planned:
            return False
        self._planned.add(key)
        return True

    def plan_judge_call(
        self,
        metric: str,
        model: str,
        messages: Sequence[Mapping[str, str]],
        schema_json: Mapping[str, Any] | None,
        max_tokens: int | None,
    ) -> None:
        """Count a judge call with its estimated prompt and reply tokens."""
        prompt = "".join(message["content"] for message in messages)
        if schema_json is not None:
            prompt += json.dumps(schema_json)
        reply = max_tokens if max_tokens is not None else DRY_RUN_REPLY_TOKENS
        self.plan_tokens(metric, model, estimate_tokens(prompt), reply)

    def plan_tokens(
        self, metric: str, model: str, prompt: int, reply: int, batches: int = 1
    ) -> None:
        """Count ``batches`` calls to ``model`` using ``prompt`` and ``reply`` tokens."""
        planned = self.stats.planned_for(metric)
        planned.calls += batches
        planned.input_tokens += prompt
        planned.output_tokens += reply
        planned.cost_usd += self.prices.cost_usd(model, TokenUsage(prompt, reply))

    def plan_local(self, metric: str, texts: int) -> None:
        """Count ``texts`` that a local model would run on."""
        self.stats.planned_for(metric).local_texts += texts
