"""Typed aggregates: what :mod:`graphrag_eval.results.aggregation` computes, with ``to_dict()``
giving the seed's aggregate dictionaries exactly (docs/outputs.md, "Aggregates")."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from graphrag_eval.metrics.base import JsonValue

__all__ = [
    "Aggregates",
    "Coverage",
    "GroupAggregates",
    "KeyAggregate",
    "RepeatSpread",
    "Statistics",
    "StepCounts",
]


@dataclass(frozen=True, slots=True)
class Statistics:
    """A numeric key's statistics over the questions (or steps) that have it."""

    sum: float
    mean: float
    median: float
    min: float
    max: float

    def to_dict(self) -> dict[str, JsonValue]:
        """Each field, in order: ``sum``, ``mean``, ``median``, ``min``, ``max``."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(slots=True)
class Coverage:
    """How many questions a key was scored on, failed on, or did not apply to."""

    scored: int = 0
    failed: int = 0
    skipped: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    """The errors of the failures, counted; the commonest is written as ``failed_reason``."""
    failed_repeats: int = 0
    """Under ``llm.repeats``: the repeats that failed on the questions counted as scored
    (their value is the mean of the others), written as ``failed_repeats`` when any did."""

    @property
    def failed_reason(self) -> str | None:
        """The commonest error of the failures, if any failed."""
        return self.reasons.most_common(1)[0][0] if self.reasons else None

    def to_dict(self) -> dict[str, JsonValue]:
        out: dict[str, JsonValue] = {
            "scored": self.scored,
            "failed": self.failed,
            "skipped": self.skipped,
        }
        if self.reasons:
            out["failed_reason"] = self.reasons.most_common(1)[0][0]
        if self.failed_repeats:
            out["failed_repeats"] = self.failed_repeats
        return out


@dataclass(slots=True)
class StepCounts:
    """Actual steps by name: in all, once per question, with empty results, with errors."""

    total: dict[str, int] = field(default_factory=dict)
    once_per_sample: dict[str, int] = field(default_factory=dict)
    empty_results: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, JsonValue]:
        """Each field, in order, as a copy."""
        return {f.name: _copy(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True, slots=True)
class RepeatSpread:
    """A judged key's noise over the questions of a group under ``llm.repeats``
    (docs/outputs.md, "Repeats"; docs/llm.md, "Repeats and judge noise"): how far the judge's
    repeats of a question fall apart, how far the questions do, and the share of the
    variance of one judgement that is the judge's noise; for a pass/fail key, pass^k and
    pass@k."""

    repeats: int
    """k: the repeats each question was judged with (the most any question has)."""
    questions: int
    """Questions with at least one successful repeat."""
    judged_repeats: int
    """Successful repeats, over those questions' N each."""
    failed_repeats: int
    """Repeats that failed (a ``null`` among the per-repeat values): counted, never hidden."""
    judge_variance: float | None
    """The within-question variance, pooled over the questions with two or more successful
    repeats (each question's sum of squared deviations from its mean, over their degrees of
    freedom); ``None`` without any such question."""
    between_variance: float | None
    """The variance of the questions' true values: the variance of the question means less
    the judge noise left in them (``judge_variance`` times the mean of 1/n), at least 0;
    ``None`` below two questions."""
    noise_share: float | None
    """``judge_variance / (judge_variance + between_variance)``: the share of one judgement's
    variance that is the judge's noise (0: a deterministic judge; 1: the questions differ
    only by noise); ``None`` where either is unknown or both are 0."""
    unanimous: float
    """The share of the questions whose successful repeats all gave the same value."""
    pass_rate: float | None = None
    """For a pass/fail key: the share of successful repeats that pass (pass^1)."""
    pass_hat_k: float | None = None
    """For a pass/fail key: pass^k, the share of the questions judged k times without a
    failed repeat whose k repeats all pass."""
    pass_at_k: float | None = None
    """For a pass/fail key: pass@k, the share of those questions where at least one passes."""

    @property
    def judge_std(self) -> float | None:
        """The judge's within-question standard deviation."""
        return None if self.judge_variance is None else self.judge_variance**0.5

    @property
    def between_std(self) -> float | None:
        """The standard deviation between the questions' true values."""
        return None if self.between_variance is None else self.between_variance**0.5

    def to_dict(self) -> dict[str, JsonValue]:
        """In order; the pass keys only for a pass/fail key."""
        out: dict[str, JsonValue] = {
            "repeats": self.repeats,
            "questions": self.questions,
            "judged_repeats": self.judged_repeats,
            "failed_repeats": self.failed_repeats,
            "judge_std": self.judge_std,
            "judge_variance": self.judge_variance,
            "between_questions_std": self.between_std,
            "between_questions_variance": self.between_variance,
            "judge_noise_share": self.noise_share,
            "unanimous": self.unanimous,
        }
        if self.pass_rate is not None:
            out["pass_rate"] = self.pass_rate
            out["pass_hat_k"] = self.pass_hat_k
            out["pass_at_k"] = self.pass_at_k
        return out


KeyAggregate = Statistics | dict[str, int] | int
"""A numeric key's statistics, a label key's ``{label: count}``, or a label count."""


@dataclass(slots=True)
class GroupAggregates:
    """The aggregates of one template, or of all questions (``micro``)."""

    error_samples: int
    success_samples: int
    missing_samples: int
    keys: dict[str, KeyAggregate] = field(default_factory=dict)
    """In output order: each aggregated key, and the label counts (``correct_answers_count``)."""
    steps: StepCounts = field(default_factory=StepCounts)
    coverage: dict[str, Coverage] = field(default_factory=dict)
    diagnosed_steps: int = 0
    """SPARQL reference steps with a ``query_diagnosis`` (docs/knowledge-graph.md)."""
    query_diagnosis: dict[str, int] = field(default_factory=dict)
    """How many of them have each label, the commonest first."""
    repeats: dict[str, RepeatSpread] = field(default_factory=dict)
    """Per judged key with repeats (``llm.repeats`` above 1), its noise; empty without."""

    @property
    def questions(self) -> int:
        """Questions in the group: the successes and the error samples (missing included)."""
        return self.success_samples + self.error_samples

    def statistics(self, name: str) -> Statistics | None:
        value = self.keys.get(name)
        return value if isinstance(value, Statistics) else None

    def label_counts(self, name: str) -> dict[str, int] | None:
        """The ``{label: count}`` of a label key, or ``None``."""
        value = self.keys.get(name)
        return value if isinstance(value, dict) else None

    def counts(self, name: str) -> Coverage:
        """How many questions the key was scored on, failed on or skipped (none: zeros)."""
        return self.coverage.get(name) or Coverage()

    def to_dict(self) -> dict[str, JsonValue]:
        out: dict[str, JsonValue] = {
            "number_of_error_samples": self.error_samples,
            "number_of_success_samples": self.success_samples,
            "number_of_missing_samples": self.missing_samples,
        }
        for name, value in self.keys.items():
            out[name] = value.to_dict() if isinstance(value, Statistics) else _copy(value)
        out["steps"] = self.steps.to_dict()
        if self.diagnosed_steps:
            out["query_diagnosis"] = {
                "diagnosed_steps": self.diagnosed_steps,
                "labels": dict(self.query_diagnosis),
            }
        out["coverage"] = {name: counts.to_dict() for name, counts in self.coverage.items()}
        if self.repeats:
            out["repeats"] = {name: spread.to_dict() for name, spread in self.repeats.items()}
        return out


@dataclass(slots=True)
class Aggregates:
    """``per_template``, ``micro`` and ``macro`` (the mean of the template means)."""

    per_template: dict[str, GroupAggregates]
    micro: GroupAggregates
    macro: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, JsonValue]:
        return {
            "per_template": {name: group.to_dict() for name, group in self.per_template.items()},
            "micro": self.micro.to_dict(),
            "macro": {name: {"mean": mean} for name, mean in self.macro.items()},
        }


def _copy(value: Mapping[str, int] | int) -> JsonValue:
    if isinstance(value, Mapping):
        copy: dict[str, JsonValue] = dict(value)
        return copy
    return value
