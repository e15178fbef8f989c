"""What a run's judge and embedding calls amounted to: calls, requests, retries, cache hits,
tokens and dollars, in total and per metric, and (in a dry run) the calls that would be made.

The engine records here as it goes; the run summary (``run.yaml``) and the console report
read :meth:`CallStats.as_dict` and :meth:`CallStats.plan_dict`. See docs/llm.md (cost).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from graphrag_eval.llm.pricing import TokenUsage

__all__ = ["CallStats", "MetricCalls"]

_SUMMARY_KEYS = {"failed": "failed_calls"}
"""The keys of :meth:`MetricCalls.summary` that are not their field's name."""


@dataclass(slots=True)
class MetricCalls:
    """Calls made for one metric in a run (and, in :class:`CallStats`, for the whole run)."""

    calls: int = 0
    """Calls that got a reply (re-asks included; retries of one call are one call)."""
    cache_hits: int = 0
    failed: int = 0
    """Calls that gave no usable reply."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    """Dollars actually spent in this run (cache hits are free)."""
    local_texts: int = 0
    """Texts run through a local model (embeddings, BERTScore): free, not calls."""

    def summary(self) -> dict[str, Any]:
        """This metric's part of :meth:`CallStats.as_dict`: each field of
        :class:`MetricCalls` in order (``failed`` as ``failed_calls``), the cost rounded."""
        values = {
            _SUMMARY_KEYS.get(part.name, part.name): getattr(self, part.name)
            for part in fields(MetricCalls)
        }
        values["cost_usd"] = round(self.cost_usd, 6)
        return values

    def plan_summary(self, cached: int) -> dict[str, Any]:
        """These calls as a dry-run estimate (:meth:`CallStats.plan_dict`): the calls,
        ``cached`` (those the cache would serve), tokens, cost and local texts."""
        values = self.summary()
        del values["cache_hits"], values["failed_calls"]
        return {"calls": values.pop("calls"), "cached": cached, **values}


@dataclass(slots=True)
class CallStats(MetricCalls):
    """What a run's calls amounted to, for the run summary: the totals of every metric's
    calls, and what only the run as a whole has."""

    requests: int = 0
    """HTTP requests, retries included."""
    retries: int = 0
    budget_reached: bool = False
    max_cost_usd: float | None = None
    """The run's cost limit (``None``: none), for :attr:`budget_exceeded`."""
    unusable_endpoints: list[str] = field(default_factory=list)
    """Why each endpoint whose breaker opened got no more calls (docs/llm.md, endpoints that
    fail)."""
    unpriced_models: set[str] = field(default_factory=set)
    batch_prices: dict[str, float] = field(default_factory=dict)
    """Batch mode: the models priced at their provider's batch price, and its share of the
    synchronous price (docs/llm.md, batch prices); the costs are the batch prices'."""
    by_metric: dict[str, MetricCalls] = field(default_factory=dict)
    planned: dict[str, MetricCalls] = field(default_factory=dict)
    """Dry run: the calls that would be made, with estimated tokens and cost."""

    @property
    def budget_exceeded(self) -> bool:
        """Whether the run spent more than its cost limit (a reply that cost more than its
        request's estimate, docs/llm.md, cost)."""
        return self.max_cost_usd is not None and round(self.cost_usd, 6) > self.max_cost_usd

    def metric(self, name: str) -> MetricCalls:
        return self.by_metric.setdefault(name, MetricCalls())

    def planned_for(self, name: str) -> MetricCalls:
        """The dry-run estimate of one metric (created empty)."""
        return self.planned.setdefault(name, MetricCalls())

    def record_call(self, metric: str, usage: TokenUsage, cost_usd: float) -> None:
        """A call that got a reply, with what it used and cost."""
        for stats in (self, self.metric(metric)):
            stats.calls += 1
            stats.input_tokens += usage.input_tokens
            stats.output_tokens += usage.output_tokens
            stats.cost_usd += cost_usd

    def record_failure(self, metric: str) -> None:
        """A call that gave no usable reply."""
        self.failed += 1
        self.metric(metric).failed += 1

    def record_cache_hit(self, metric: str) -> None:
        """A call served (at least in part) from the cache."""
        self.cache_hits += 1
        self.metric(metric).cache_hits += 1

    def record_local(self, metric: str, texts: int) -> None:
        """Texts run through a local model."""
        self.local_texts += texts
        self.metric(metric).local_texts += texts

    def as_dict(self) -> dict[str, Any]:
        """The summary written to ``run.yaml``."""
        totals = self.summary()
        return {
            "calls": totals.pop("calls"),
            "requests": self.requests,
            "retries": self.retries,
            **totals,
            "budget_reached": self.budget_reached,
            "budget_exceeded": self.budget_exceeded,
            "unusable_endpoints": list(self.unusable_endpoints),
            "unpriced_models": sorted(self.unpriced_models),
            **self._batch_prices(),
            "by_metric": {name: calls.summary() for name, calls in sorted(self.by_metric.items())},
        }

    def _batch_prices(self) -> dict[str, Any]:
        """``batch_prices`` (model: share of the synchronous price) in batch mode only."""
        return (
            {"batch_prices": dict(sorted(self.batch_prices.items()))} if self.batch_prices else {}
        )

    def plan_dict(self) -> dict[str, Any]:
        """The dry-run estimate: calls, tokens and cost per metric and in total."""
        names = sorted(set(self.planned) | set(self.by_metric))
        empty = MetricCalls()
        metrics = {
            name: self.planned.get(name, empty).plan_summary(
                self.by_metric.get(name, empty).cache_hits
            )
            for name in names
        }
        total = _total(list(self.planned.values()))
        return {
            **total.plan_summary(sum(m["cached"] for m in metrics.values())),
            "by_metric": metrics,
            "unpriced_models": sorted(self.unpriced_models),
            **self._batch_prices(),
        }


def _total(parts: Sequence[MetricCalls]) -> MetricCalls:
    """The sum of ``parts``, field by field."""
    return MetricCalls(
        **{part.name: sum(getattr(p, part.name) for p in parts) for part in fields(MetricCalls)}
    )
