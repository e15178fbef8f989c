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
    from graphrag_eval.results.model import QuestionResult

__all__ = ["INTERNAL_ERROR", "Failures", "failed_everywhere", "unexplained_failures"]

INTERNAL_ERROR = "internal error"
"""How the error of a metric that raised (a bug) starts (``scoring.py``)."""


def failed_everywhere(run: EvaluationRun) -> dict[str, str]:
    """Each metric that was attempted and failed on every question (and step) it applied
    to, with its commonest error; a metric that scored anything is not one."""
    failures = Failures()
    for item in run.items:
        failures.add(item)
    return failures.everywhere()


class Failures:
    """What :func:`failed_everywhere` needs, taken one result at a time (a run that keeps
    no result counts as its results come)."""

    def __init__(self) -> None:
        self.scored: set[str] = set()
        self.errors: dict[str, Counter[str]] = {}

    def add(self, item: QuestionResult) -> None:
        for key, outcome in item.outcomes.items():
            if isinstance(outcome, Scored):
                self.scored.add(key.metric)
            elif isinstance(outcome, Failed) and key.metric not in self.scored:
                self.errors.setdefault(key.metric, Counter())[outcome.error] += 1

    def everywhere(self) -> dict[str, str]:
        """:func:`failed_everywhere` of the results taken."""
        return {
            metric: counts.most_common(1)[0][0]
            for metric, counts in self.errors.items()
            if metric not in self.scored
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
