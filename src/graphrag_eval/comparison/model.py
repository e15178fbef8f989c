"""What a comparison of two runs returns: per-question changes, per-metric changes, and the
comparison as a whole, each with the dictionary ``graphrag-eval compare --json`` writes
(docs/report.md, "Comparing two runs")."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from graphrag_eval.comparison.graph_identity import InputChanges
from graphrag_eval.comparison.units import Unit
from graphrag_eval.metrics.base import JsonValue, OutputKey

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_ERROR_SAMPLES",
    "DEFAULT_SEED",
    "DEFAULT_TOP",
    "Comparison",
    "ErrorSamples",
    "Failures",
    "ItemChange",
    "JudgeRepeats",
    "MetricChange",
    "NoiseSummary",
    "Verdict",
]

Verdict = Literal["better", "worse", "unchanged", "too few pairs", "no pairs"]
ErrorSamples = Literal["zero", "exclude"]

# The defaults of compare_results, which `graphrag-eval compare` takes too: a notebook and a
# CI job comparing the same runs reach the same verdicts. Here, not in comparison/compare.py,
# so that the command line's options have them without importing numpy (every command
# starts faster).
DEFAULT_SEED = 0
DEFAULT_TOP = 10
DEFAULT_ERROR_SAMPLES: ErrorSamples = "zero"
DEFAULT_CONFIDENCE = 0.95

# The keys of ``as_dict()`` that are attributes of the same name, in output order.
_ITEM_KEYS = ("question_id", "template_id", "a", "b", "difference")
_MEANS_KEYS = ("pairs", "mean_a", "mean_b", "difference", "ci_low", "ci_high")
"""Of a metric's change: the pairs, both means, their difference and its interval."""
_COUNT_KEYS = (
    "lower_is_better",
    "improved",
    "regressed",
    "unchanged",
    "scored_only_in_a",
    "scored_only_in_b",
)
_RUN_KEYS = (
    "run_a",
    "run_b",
    "seed",
    "resamples",
    "confidence",
    "questions_a",
    "questions_b",
    "paired",
)


@dataclass(frozen=True, slots=True)
class Failures:
    """On how many questions of run A and of run B a metric failed (no value: an internal
    error, a judge that gave no reply...)."""

    a: int
    b: int


@dataclass(frozen=True, slots=True)
class NoiseSummary:
    """How much of a difference's interval is the judge's noise, where either run has judge
    repeats (docs/report.md, "Judge noise in a comparison")."""

    repeats_a: float
    """Run A's valid repeats per paired question, on average (1: no repeats, its values are
    taken as exact)."""
    repeats_b: float
    one_level_ci_low: float
    """The interval resampling the questions only (the values as they are): what the
    comparison gives without repeats."""
    one_level_ci_high: float
    without_judge_ci_low: float
    """The interval with the judge's noise taken out: the questions' stage alone."""
    without_judge_ci_high: float
    question_variance: float
    """``sigma_b^2 / n``: the variance of the mean difference from the choice of questions."""
    judge_variance: float
    """``mean(s^2 / k) / n``: the variance of the mean difference from the judge's noise."""
    judge_share: float
    narrows_most: Literal["questions", "repeats"]
    detectable_difference: float
    """The smallest difference the run could detect at the interval's level with 80% power."""
    power: float

    def as_dict(self) -> dict[str, JsonValue]:
        return _attributes(self, _NOISE_KEYS)


_NOISE_KEYS = (
    "repeats_a",
    "repeats_b",
    "one_level_ci_low",
    "one_level_ci_high",
    "without_judge_ci_low",
    "without_judge_ci_high",
    "question_variance",
    "judge_variance",
    "judge_share",
    "narrows_most",
    "detectable_difference",
    "power",
)


@dataclass(frozen=True, slots=True)
class JudgeRepeats:
    """The most judge repeats per question of any metric in each run, where either has some."""

    a: int
    b: int

    @property
    def note(self) -> str:
        """What the intervals of the metrics with repeats include."""
        text = (
            "intervals of metrics with judge repeats are two-level (questions, then each "
            "question's repeats): they include the judge's noise"
        )
        for label, count in (("A", self.a), ("B", self.b)):
            if count < 2:
                text += (
                    f"; run {label} has no repeats: its values are taken as exact (k = 1, no "
                    "judge noise measured)"
                )
        return text

    def as_dict(self) -> dict[str, JsonValue]:
        return {"a": self.a, "b": self.b, "note": self.note}


@dataclass(frozen=True, slots=True)
class ItemChange:
    """One question whose score differs between the runs."""

    question_id: str
    template_id: str
    a: float
    b: float

    @property
    def difference(self) -> float:
        return self.b - self.a

    def as_dict(self) -> dict[str, JsonValue]:
        return _attributes(self, _ITEM_KEYS)


@dataclass(frozen=True, slots=True)
class MetricChange:
    """How one metric moved between the runs, over the questions scored in both."""

    metric: str
    pairs: int
    mean_a: float | None
    mean_b: float | None
    difference: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: Verdict
    lower_is_better: bool
    improved: int
    """Questions whose score changed for the better."""
    regressed: int
    unchanged: int
    scored_only_in_a: int
    """Questions scored in run A but not in run B (a new error, a missing response...)."""
    scored_only_in_b: int
    better_items: list[ItemChange] = field(default_factory=list)
    """The questions that improved most, best first (at most ``top`` of them)."""
    worse_items: list[ItemChange] = field(default_factory=list)
    unit: Unit = "score"
    """What the metric measures: a score, or what a run used (dollars, tokens, seconds)."""
    noise: NoiseSummary | None = None
    """Where either run has judge repeats of the metric: the judge's part of the interval
    (``ci_low`` and ``ci_high`` are then the two-level interval)."""

    @property
    def is_score(self) -> bool:
        return self.unit == "score"

    @property
    def direction(self) -> str:
        """What a resource did: ``lower`` or ``higher`` where the verdict is significant (the
        verdict itself otherwise); a score's verdict."""
        if self.is_score or self.verdict not in ("better", "worse"):
            return self.verdict
        return "lower" if (self.verdict == "better") == self.lower_is_better else "higher"

    def resource_dict(self) -> dict[str, JsonValue]:
        """The change of a cost, token count or time: its unit, means, difference, interval
        and ``change`` (``lower``, ``higher``, ``unchanged``, ``too few pairs``, ``no
        pairs``)."""
        return {"unit": self.unit, **_attributes(self, _MEANS_KEYS), "change": self.direction}

    def as_dict(self) -> dict[str, JsonValue]:
        data: dict[str, JsonValue] = {
            **_attributes(self, _MEANS_KEYS),
            "change": self.verdict,
            **_attributes(self, _COUNT_KEYS),
            "better_items": [item.as_dict() for item in self.better_items],
            "worse_items": [item.as_dict() for item in self.worse_items],
            "unit": self.unit,
        }
        if self.noise is not None:  # only with repeats: without, the output is unchanged
            data["noise"] = self.noise.as_dict()
        return data


@dataclass(slots=True)
class Comparison:
    """The comparison of run B against run A."""

    run_a: str
    run_b: str
    seed: int
    resamples: int
    confidence: float
    questions_a: int
    questions_b: int
    paired: int
    only_in_a: list[str]
    """Question ids of run A that run B does not have."""
    only_in_b: list[str]
    status_changes: dict[str, list[str]]
    """``"success -> error"`` (and the other way) -> the question ids whose status changed."""
    keys: dict[str, OutputKey]
    overall: dict[str, MetricChange]
    per_template: dict[str, dict[str, MetricChange]]
    error_samples: ErrorSamples = "zero"
    """How error responses counted in the means: 0 on the scores they would have had
    (``zero``), or left out of the pairs (``exclude``)."""
    failed: dict[str, Failures] = field(default_factory=dict)
    """Per metric that failed in either run: on how many questions of each (an internal
    error counts as any failure does)."""
    graph_warning: str | None = None
    """Set when the runs were scored against different graphs (or one against none):
    docs/knowledge-graph.md, "The graph's identity"."""
    changed_inputs: InputChanges = field(default_factory=InputChanges)
    """The paired questions whose reference or response differs between the runs."""
    repeats: JudgeRepeats | None = None
    """Set when either run has judge repeats (docs/report.md, "Judge noise in a comparison")."""

    def cause(self, question_id: str) -> str:
        """What changed in a question's inputs: ``reference changed``, ``response
        changed``, both, or nothing (empty)."""
        return self.changed_inputs.cause(question_id)

    def significant(self, verdict: Verdict) -> list[str]:
        """The metrics that got significantly ``better`` or ``worse`` overall (costs, tokens
        and seconds included: :meth:`significant_scores` leaves them out)."""
        return [name for name, change in self.overall.items() if change.verdict == verdict]

    def significant_scores(self, verdict: Verdict) -> list[str]:
        """The scores that got significantly ``better`` or ``worse`` overall: the headline
        of a comparison (a cheaper or faster run is not a better one)."""
        return [
            name
            for name, change in self.overall.items()
            if change.is_score and change.verdict == verdict
        ]

    def resources(self) -> dict[str, MetricChange]:
        """The overall changes of costs, tokens and seconds."""
        return {name: change for name, change in self.overall.items() if not change.is_score}

    def as_dict(self) -> dict[str, JsonValue]:
        data: dict[str, JsonValue] = {
            **_attributes(self, _RUN_KEYS),
            "only_in_a": _texts(self.only_in_a),
            "only_in_b": _texts(self.only_in_b),
            "status_changes": {change: _texts(ids) for change, ids in self.status_changes.items()},
            "metrics": {name: change.as_dict() for name, change in self.overall.items()},
            "per_template": {
                template: {name: change.as_dict() for name, change in changes.items()}
                for template, changes in self.per_template.items()
            },
            "error_samples": self.error_samples,
            "significant_scores": {
                verdict: _texts(self.significant_scores(verdict)) for verdict in ("better", "worse")
            },
            "resources": {
                name: change.resource_dict() for name, change in self.resources().items()
            },
            "failed": {name: {"a": count.a, "b": count.b} for name, count in self.failed.items()},
            "graph_warning": self.graph_warning,
            "reference_changed": _texts(self.changed_inputs.reference),
            "response_changed": _texts(self.changed_inputs.response),
        }
        if self.repeats is not None:  # only with repeats: without, the output is unchanged
            data["judge_repeats"] = self.repeats.as_dict()
        return data


def _texts(texts: Iterable[str]) -> list[JsonValue]:
    copy: list[JsonValue] = list(texts)
    return copy


def _attributes(source: object, names: Iterable[str]) -> dict[str, JsonValue]:
    """``{name: source.name}`` for each of ``names``, in their order."""
    return {name: getattr(source, name) for name in names}
