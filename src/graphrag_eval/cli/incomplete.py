"""Metrics that failed on every question, and which of them no known reason (an endpoint's
breaker, the cost limit) explains: a run where a judged metric did, or any metric did for an
internal error, is incomplete, exit 3 (docs/llm.md, endpoints that fail)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from graphrag_eval.metrics.base import Failed, Scored

if TYPE_CHECKING:
    from graphrag_eval.evaluation.runner import EvaluationRun

__all__ = ["INTERNAL_ERROR", "failed_everywhere", "unexplained_failures"]

INTERNAL_ERROR = "internal error"
"""How the error of a metric that raised (a bug) starts (``scoring.py``)."""


def failed_everywhere(run: EvaluationRun) -> dict[str, str]:
    """Each metric that was attempted and failed on every question (and step) it applied
    to, with its commonest error; a metric that scored anything is not one."""
    scored: set[str] = set()
    errors: dict[str, Counter[str]] = {}
    for item in run.items:
        for key, outcome in item.outcomes.items():
            if isinstance(outcome, Scored):
                scored.add(key.metric)
            elif isinstance(outcome, Failed):
                errors.setdefault(key.metric, Counter())[outcome.error] += 1
    return {
        metric: counts.most_common(1)[0][0]
        for metric, counts in errors.items()
        if metric not in scored
    }


def unexplained_failures(
    failing: dict[str, str], reasons: Iterable[str]
) -> list[tuple[list[str], str]]:
    """The metrics of ``failing`` whose error none of ``reasons`` (an endpoint's breaker,
    the cost limit) explains, grouped by error (at most 200 characters of it)."""
    known = list(reasons)
    grouped: dict[str, list[str]] = {}
    for metric, error in failing.items():
        if not any(reason in error for reason in known):
            text = " ".join(error.split())
            grouped.setdefault(text[:200] + ("..." if len(text) > 200 else ""), []).append(metric)
    return [(metrics, error) for error, metrics in grouped.items()]
