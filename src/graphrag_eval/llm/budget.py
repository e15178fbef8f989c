"""The run's spending policies: the cost cap and the dry run.

* **Cost cap** (``llm.max_cost_usd`` or ``--max-cost``): no new call starts once what the run
  actually spent reaches it; calls already in flight may overshoot it.
* **Dry run**: every call is counted with estimated tokens and cost instead of being made.

See docs/llm.md (cost).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
        self._planned: set[str] = set()
        """Dry run: the judge requests counted so far."""

    def check(self) -> None:
        """Before a call: a dry run stops here, and so does a run past its cost limit. Checked
        again when the call gets its slot, so at most the calls in flight overshoot."""
        if self.dry_run:
            raise NotCalled("dry run: the call was counted, not made")
        if self.max_cost_usd is not None and self.stats.cost_usd >= self.max_cost_usd:
            self.stats.budget_reached = True
            raise BudgetExhausted(
                f"not computed: the cost limit of ${self.max_cost_usd:g} was reached"
            )

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
