"""Metrics that failed on every question, and which of them no known reason (an endpoint's
breaker, the cost limit) explains: a run where a judged metric did, or any metric did for an
internal error, is incomplete, exit 3 (docs/llm.md, endpoints that fail)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from graphrag_eval.metrics.base import Failed, FailureKind, Scored

if TYPE_CHECKING:
    from graphrag_eval.results.model import QuestionResult
    from graphrag_eval.results.run import EvaluationRun

__all__ = [
    "INTERNAL_ERROR",
    "Failures",
    "failed_everywhere",
    "failures_everywhere",
    "incomplete_failures",
    "unexplained_failures",
]

INTERNAL_ERROR = "internal error"
"""How the error of a metric that raised (a bug) starts (``scoring.py``); its kind is
:attr:`~graphrag_eval.metrics.base.FailureKind.INTERNAL`."""


class Failures:
    """The metrics that failed on every question (and step) they applied to, taken one
    result at a time (a run that keeps no result counts them as its results come); a metric
    that scored anything is not one."""

    def __init__(self) -> None:
        self.scored: set[str] = set()
        self.failures: dict[str, Counter[Failed]] = {}

    def add(self, item: QuestionResult) -> None:
        for key, outcome in item.outcomes.items():
            if isinstance(outcome, Scored):
                self.scored.add(key.metric)
            elif isinstance(outcome, Failed) and key.metric not in self.scored:
                self.failures.setdefault(key.metric, Counter())[outcome] += 1

    def everywhere(self) -> dict[str, Failed]:
        """Each metric that failed everywhere, with its commonest failure (message and
        kind)."""
        return {
            metric: counts.most_common(1)[0][0]
            for metric, counts in self.failures.items()
            if metric not in self.scored
        }

    def incomplete(self, judged: Iterable[str]) -> dict[str, str]:
        """The metrics of :meth:`everywhere` that make a run incomplete, with their message:
        a judged one (of ``judged``), or any whose failure is an internal error (a metric
        that is not judged fails on bad input too, which the input notices report)."""
        names = set(judged)
        return {
            metric: failure.error
            for metric, failure in self.everywhere().items()
            if metric in names or failure.kind is FailureKind.INTERNAL
        }


def _taken(run: EvaluationRun) -> Failures:
    failures = Failures()
    for item in run.items:
        failures.add(item)
    return failures


def failures_everywhere(run: EvaluationRun) -> dict[str, Failed]:
    """:meth:`Failures.everywhere` of a whole run."""
    return _taken(run).everywhere()


def failed_everywhere(run: EvaluationRun) -> dict[str, str]:
    """:func:`failures_everywhere` with the message of each metric's failure."""
    return {metric: failure.error for metric, failure in failures_everywhere(run).items()}


def incomplete_failures(run: EvaluationRun, judged: Iterable[str]) -> dict[str, str]:
    """:meth:`Failures.incomplete` of a whole run."""
    return _taken(run).incomplete(judged)


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
