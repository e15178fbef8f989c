"""What a run's judge and embedding calls amounted to: calls, requests, retries, cache hits,
tokens and dollars, in total and per metric, and (in a dry run) the calls that would be made.

The engine records here as it goes; the run summary (``run.yaml``) and the console report
read :meth:`CallStats.as_dict` and :meth:`CallStats.plan_dict`. See docs/llm.md (cost).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphrag_eval.llm.pricing import TokenUsage

__all__ = ["CallStats", "MetricCalls"]


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
        """This metric's part of :meth:`CallStats.as_dict`."""
        return {
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "failed_calls": self.failed,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "local_texts": self.local_texts,
        }


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
            "by_metric": {name: calls.summary() for name, calls in sorted(self.by_metric.items())},
        }

    def plan_dict(self) -> dict[str, Any]:
        """The dry-run estimate: calls, tokens and cost per metric and in total."""
        names = sorted(set(self.planned) | set(self.by_metric))
        empty = MetricCalls()
        metrics = {
            name: {
                "calls": self.planned.get(name, empty).calls,
                "cached": self.by_metric.get(name, empty).cache_hits,
                "input_tokens": self.planned.get(name, empty).input_tokens,
                "output_tokens": self.planned.get(name, empty).output_tokens,
                "cost_usd": round(self.planned.get(name, empty).cost_usd, 6),
                "local_texts": self.planned.get(name, empty).local_texts,
            }
            for name in names
        }
        return {
            "calls": sum(m.calls for m in self.planned.values()),
            "cached": sum(m["cached"] for m in metrics.values()),
            "input_tokens": sum(m.input_tokens for m in self.planned.values()),
            "output_tokens": sum(m.output_tokens for m in self.planned.values()),
            "cost_usd": round(sum(m.cost_usd for m in self.planned.values()), 6),
            "local_texts": sum(m.local_texts for m in self.planned.values()),
            "by_metric": metrics,
            "unpriced_models": sorted(self.unpriced_models),
        }
