"""What an agreement check gives (docs/outputs.md, ``graphrag-eval agreement --json``): per
metric, the judge against the humans and the humans among themselves, each statistic with its
bootstrap interval or the reason it has none."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphrag_eval.agreement.scales import Scale

__all__ = ["Agreement", "Confusion", "Estimate", "MetricAgreement"]

DEFAULT_SEED = 0
DEFAULT_RESAMPLES = 1000
DEFAULT_CONFIDENCE = 0.95
MIN_QUESTIONS = 5
"""Fewer questions with both a judge value and a human label (or, for the humans' alpha,
with two labels) give no statistic: the metric says it has too few labels."""


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


@dataclass(frozen=True, slots=True)
class Estimate:
    """A statistic and its interval, or why there is none (``note``)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    note: str | None = None

    @classmethod
    def missing(cls, note: str) -> Estimate:
        return cls(None, note=note)

    def as_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "value": _rounded(self.value),
            "ci_low": _rounded(self.low),
            "ci_high": _rounded(self.high),
        }
        if self.note is not None:
            found["note"] = self.note
        return found


@dataclass(frozen=True, slots=True)
class Confusion:
    """How many labels a human gave each label (rows) where the judge gave each (columns)."""

    labels: tuple[str, ...]
    counts: list[list[int]]

    def as_dict(self) -> dict[str, Any]:
        return {"labels": list(self.labels), "human_by_judge": self.counts}


@dataclass(frozen=True, slots=True)
class MetricAgreement:
    """One metric's agreement: the judge (the run's value) against every human label of the
    questions it scored, and the annotators among themselves."""

    metric: str
    scale: Scale
    questions: int
    """Questions with a judge value and at least one human label."""
    labels: int
    """Human labels on those questions (the pairs the judge statistic is over)."""
    unjudged: int
    """Human labels of questions the run has no value of this metric for (failed, skipped,
    an error response): left out of every statistic."""
    annotators: tuple[str, ...]
    judge: Estimate
    """Cohen's kappa (categorical, pass/fail), quadratic-weighted kappa (grades) or
    Spearman's rho (scores) of the judge against the humans."""
    offset: Estimate | None
    """Scores: the mean of judge minus human."""
    alpha_humans: Estimate
    alpha_with_judge: Estimate
    confusion: Confusion | None

    @property
    def statistic(self) -> str:
        return self.scale.statistic

    def as_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "scale": self.scale.value,
            "statistic": self.statistic,
            "questions": self.questions,
            "labels": self.labels,
            "unjudged_labels": self.unjudged,
            "annotators": list(self.annotators),
            self.statistic: self.judge.as_dict(),
        }
        if self.offset is not None:
            found["mean_offset"] = self.offset.as_dict()
        found["alpha_annotators"] = self.alpha_humans.as_dict()
        found["alpha_with_judge"] = self.alpha_with_judge.as_dict()
        if self.confusion is not None:
            found["confusion"] = self.confusion.as_dict()
        return found


@dataclass(slots=True)
class Agreement:
    """The agreement of a run with human labels, per metric."""

    run: str
    sources: list[str]
    labels_read: int
    labels_used: int
    seed: int
    resamples: int
    confidence: float
    metrics: dict[str, MetricAgreement] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    """One located line per label left out (a bad row, an unknown question or metric)."""
    unlisted: int = 0
    """Labels left out beyond those listed in ``problems`` (a file's bad rows past
    ``MAX_PROBLEMS``)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "agreement": {
                "run": self.run,
                "label_sources": self.sources,
                "labels_read": self.labels_read,
                "labels_used": self.labels_used,
                "seed": self.seed,
                "resamples": self.resamples,
                "confidence": self.confidence,
                "min_questions": MIN_QUESTIONS,
                "metrics": {name: metric.as_dict() for name, metric in self.metrics.items()},
                "problems": self.problems,
                "problems_not_listed": self.unlisted,
            }
        }
