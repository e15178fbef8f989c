"""Typed per-question results: each metric's outcome keyed by (metric, step), with the
question's identity, status, copies of its inputs and anything else the record holds.

A :class:`QuestionResult` is what every layer after the run reads (aggregation, report,
compare, gating); the seed's flat dictionary (docs/outputs.md) is produced from it, and read
back into it, only in :mod:`graphrag_eval.results.to_records`. Which keys belong to which metric,
and
where a metric's keys go, is a :class:`ResultLayout` built from the metrics' own
declarations (:class:`~graphrag_eval.metrics.base.Metric`, ``outputs`` and ``error_keys``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from graphrag_eval.metrics.base import (
    Failed,
    ItemMetric,
    JsonValue,
    Metric,
    Outcome,
    OutputKey,
    Placement,
    Scored,
    Skipped,
    StepMetric,
)
from graphrag_eval.metrics.repeats import is_judged, with_repeat_companions
from graphrag_eval.results.repeated import repeat_values

__all__ = [
    "FAILURE_KINDS_KEY",
    "SKIPPED_KEY",
    "MetricLayout",
    "OutcomeKey",
    "QuestionResult",
    "ResultLayout",
    "RunResult",
    "StepOutcomes",
    "is_number",
    "undeclared_metric",
]


FAILURE_KINDS_KEY = "failure_kinds"
"""The flat record's key for ``{metric: the kind of its failure}`` (only when some metric
failed with a known kind; docs/outputs.md). A metric on steps gets the kind of its first
failure on them."""

SKIPPED_KEY = "skipped"
"""The flat record's key for ``{metric: why it did not apply}`` (only when some metric was
skipped on the question)."""


class OutcomeKey(NamedTuple):
    """Which metric, on which actual step (its index; ``None``: the question as a whole)."""

    metric: str
    step: int | None = None


@dataclass(frozen=True, slots=True)
class MetricLayout:
    """Where one metric's outcome goes in a flat result record, and how its keys aggregate."""

    name: str
    outputs: tuple[OutputKey, ...]
    """Its keys, each with the error keys that report its failure filled in."""
    error_keys: tuple[str, ...]
    """The keys a :class:`Failed` outcome is written to."""
    on_steps: bool = False
    """Its keys are written on the actual steps it scored."""
    before_steps: bool = False
    """Its keys come before ``actual_steps`` in the record."""
    declared: bool = True
    """Declared by a metric; ``False`` for a numeric key of a saved record no known metric
    declares (a custom output read without its config), aggregated numerically anyway."""
    repeats: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """A judged metric's score key -> its companions under ``llm.repeats`` (the per-repeat
    values' key first; :func:`~graphrag_eval.metrics.repeats.repeat_companions`)."""

    @classmethod
    def of(cls, metric: Metric) -> MetricLayout:
        """The layout a metric declares (worked out once per metric: every scored question
        asks for it)."""
        try:
            return _layout_of(metric)
        except TypeError:  # a metric that cannot be a cache key (not hashable)
            return cls.declared_by(metric)

    @classmethod
    def declared_by(cls, metric: Metric) -> MetricLayout:
        """The layout a metric declares, worked out anew."""
        declared = with_repeat_companions(metric.outputs) if is_judged(metric) else metric.outputs
        outputs = tuple(
            output
            if output.error_keys
            else dataclasses.replace(output, error_keys=metric.error_keys)
            for output in declared
        )
        repeats: dict[str, tuple[str, ...]] = {}
        for output in outputs:
            if output.repeats_of is not None:
                repeats[output.repeats_of] = (*repeats.get(output.repeats_of, ()), output.name)
        placement = metric.placement if isinstance(metric, ItemMetric) else Placement.AFTER_STEPS
        return cls(
            name=metric.name,
            outputs=outputs,
            error_keys=tuple(metric.error_keys),
            on_steps=isinstance(metric, StepMetric),
            before_steps=placement is Placement.BEFORE_STEPS,
            repeats=repeats,
        )


@functools.lru_cache(maxsize=1024)
def _layout_of(metric: Metric) -> MetricLayout:
    return MetricLayout.declared_by(metric)


@dataclass(slots=True)
class ResultLayout:
    """The metrics results are laid out with, by name, in output order."""

    metrics: dict[str, MetricLayout] = field(default_factory=dict)

    @classmethod
    def of(cls, metrics: Iterable[Metric]) -> ResultLayout:
        """The layout of the given metrics (later ones replace earlier ones of that name)."""
        return cls({metric.name: MetricLayout.of(metric) for metric in metrics})

    def add(self, layout: MetricLayout) -> MetricLayout:
        """Add a metric (an undeclared key found in a record) unless it is known; the known one."""
        return self.metrics.setdefault(layout.name, layout)

    def outputs(self) -> dict[str, tuple[OutputKey, bool]]:
        """``key -> (declaration, is step-level)`` for every key of every metric."""
        return {
            output.name: (output, layout.on_steps)
            for layout in self.metrics.values()
            for output in layout.outputs
        }


@dataclass(slots=True)
class QuestionResult:
    """One question's result: what identifies it and copies of its inputs (``fields``, in
    output order, without any metric's keys) and each metric's outcome."""

    fields: dict[str, JsonValue]
    """Every key that is not a metric's: ``template_id``, ``question_id``, ``question_text``,
    ``reference_answer``, ``reference_steps``, ``status``, ``error``, ``missing_response``,
    ``input_errors``, ``actual_answer``, ``actual_steps`` (copies without metric keys) and
    any key a saved record holds that no metric declares."""
    outcomes: dict[OutcomeKey, Outcome] = field(default_factory=dict)
    layout: ResultLayout = field(default_factory=ResultLayout)

    @property
    def template_id(self) -> JsonValue:
        return self.fields.get("template_id")

    @property
    def question_id(self) -> JsonValue:
        return self.fields.get("question_id")

    @property
    def status(self) -> JsonValue:
        return self.fields.get("status")

    @property
    def is_error(self) -> bool:
        """An error sample: no usable response, never scored."""
        return self.fields.get("status") == "error"

    @property
    def missing_response(self) -> bool:
        return bool(self.fields.get("missing_response"))

    @property
    def error(self) -> JsonValue:
        return self.fields.get("error")

    @property
    def actual_steps(self) -> list[JsonValue]:
        """The actual steps (without metric keys); empty when there are none."""
        steps = self.fields.get("actual_steps")
        return steps if isinstance(steps, list) else []

    def at(self, step: int | None = None) -> Iterator[tuple[str, Outcome]]:
        """``(metric, outcome)`` of the question as a whole, or of one actual step."""
        return ((key.metric, outcome) for key, outcome in self.outcomes.items() if key.step == step)

    def values(self, step: int | None = None) -> dict[str, JsonValue]:
        """Every value the metrics scored on the question (or on one step), by key."""
        values: dict[str, JsonValue] = {}
        for key, outcome in self.outcomes.items():
            if key.step == step and isinstance(outcome, Scored):
                values.update(outcome.values)
        return values

    def repeat_values(self, key: str, step: int | None = None) -> tuple[float | None, ...] | None:
        """The N per-repeat values of a judged numeric key under ``llm.repeats`` (``None``
        for a repeat that failed), on the question or one step (``step``); ``None`` when the
        key has no repeats on it (a run without repeats, a label, a key not scored). A key
        of a metric of steps, asked on the question (``step`` ``None``), gives each repeat's
        mean over the steps, as compare takes such keys. The contract compare builds on
        (docs/outputs.md, "Repeats"): stable."""
        return repeat_values(self.layout.metrics.values(), self.outcomes, key, step)

    def has(self, name: str) -> bool:
        """Whether the result has a field (``reference_steps``) or a scored value of that name."""
        return name in self.fields or name in self.values()

    def step_positions(self) -> list[int]:
        """The positions of the actual steps that are mappings (the others carry no scores)."""
        return [i for i, step in enumerate(self.actual_steps) if isinstance(step, Mapping)]

    def step_scores(self) -> list[dict[str, JsonValue]]:
        """The values scored on each actual step that is a mapping, in step order (steps with
        no value left out): :meth:`values` of each such step, in one pass."""
        by_step: dict[int, dict[str, JsonValue]] = {}
        for key, outcome in self.outcomes.items():
            if key.step is not None and isinstance(outcome, Scored):
                by_step.setdefault(key.step, {}).update(outcome.values)
        if not by_step:
            return []
        steps = self.actual_steps
        return [
            values
            for i, values in sorted(by_step.items())
            if i < len(steps) and isinstance(steps[i], Mapping)
        ]

    def failed_keys(self, step: int | None = None) -> dict[str, str]:
        """Error key -> message for what failed on the question (or on one step)."""
        failed: dict[str, str] = {}
        for name, outcome in self.at(step):
            if isinstance(outcome, Failed):
                layout = self.layout.metrics.get(name)
                failed.update(dict.fromkeys(layout.error_keys if layout else (), outcome.error))
            elif isinstance(outcome, Scored):
                failed.update(outcome.failures)
        return failed

    def failed_metrics(self) -> set[str]:
        """The metrics that failed, wholly or in part, on the question or on a step."""
        return {
            key.metric
            for key, outcome in self.outcomes.items()
            if isinstance(outcome, Failed) or (isinstance(outcome, Scored) and outcome.failures)
        }

    def failures(self) -> Iterator[tuple[OutcomeKey, Failed]]:
        """Each failure on the question or a step, as a :class:`Failed` (a partial failure of
        a :class:`Scored` outcome too: its first message, with its kind)."""
        for key, outcome in self.outcomes.items():
            if isinstance(outcome, Failed):
                yield key, outcome
            elif isinstance(outcome, Scored) and outcome.failures:
                message = next(iter(outcome.failures.values()))
                yield key, Failed(message, outcome.failure_kind, key.metric)

    def failure_kinds(self) -> dict[str, str]:
        """Metric -> the kind of its (first) failure, for the metrics that failed with a known
        kind: what :data:`FAILURE_KINDS_KEY` holds."""
        kinds: dict[str, str] = {}
        for key, failure in self.failures():
            if failure.kind is not None:
                kinds.setdefault(key.metric, failure.kind.value)
        return kinds

    def skipped(self) -> dict[str, str]:
        """Metric -> why it was skipped, in metric order (one reason per metric)."""
        skipped: dict[str, str] = {}
        for key, outcome in self.outcomes.items():
            if isinstance(outcome, Skipped):
                skipped.setdefault(key.metric, outcome.reason)
        return skipped

    def by_step(self) -> StepOutcomes:
        """:meth:`values` and :meth:`failed_keys` of the question and of every step at once,
        and which steps some value was scored on, in one pass over the outcomes."""
        found = StepOutcomes({None: {}}, {}, set(), False)
        layouts = self.layout.metrics
        for key, outcome in self.outcomes.items():
            step = key.step
            if isinstance(outcome, Scored):
                values = found.values.get(step)
                if values is None:
                    values = found.values[step] = {}
                values.update(outcome.values)
                if step is not None:
                    found.scored_steps.add(step)
                if outcome.failures:
                    found.any_failed = True
                    found.failed.setdefault(step, {}).update(outcome.failures)
            elif isinstance(outcome, Failed):
                found.any_failed = True
                layout = layouts.get(key.metric)
                errors = dict.fromkeys(layout.error_keys if layout else (), outcome.error)
                found.failed.setdefault(step, {}).update(errors)
        return found

    def step_indices(self) -> list[int]:
        """The actual steps some metric scored or tried to."""
        return sorted({key.step for key in self.outcomes if key.step is not None})


@dataclass(slots=True)
class StepOutcomes:
    """:meth:`QuestionResult.by_step`: by step (``None``: the question), the values scored
    and the error keys of what failed (error key -> message)."""

    values: dict[int | None, dict[str, JsonValue]]
    failed: dict[int | None, dict[str, str]]
    scored_steps: set[int]
    """The steps with a scored outcome."""
    any_failed: bool
    """Some metric failed, wholly or in part (:meth:`QuestionResult.failed_metrics`)."""

    def step_scores(self, actual_steps: Sequence[JsonValue]) -> list[dict[str, JsonValue]]:
        """:meth:`QuestionResult.step_scores` (``actual_steps``: the result's)."""
        return [
            self.values[i]
            for i in sorted(self.scored_steps)
            if i < len(actual_steps) and isinstance(actual_steps[i], Mapping)
        ]


@dataclass(slots=True)
class RunResult:
    """The per-question results of a run, in reference order."""

    results: Sequence[QuestionResult]
    """In reference order; read one at a time from a file where a run is too large to hold
    (:class:`~graphrag_eval.results.from_records.TypedRecords`)."""
    layout: ResultLayout

    @classmethod
    def of(cls, results: Sequence[QuestionResult], layout: ResultLayout) -> RunResult:
        """A run of results made in this process: ``layout`` with every metric the results
        hold (an undeclared key read back from a kept record, or a numeric value a metric
        wrote without declaring it: a metric of its own, as
        :func:`~graphrag_eval.results.from_records.read_records` makes it), so the run aggregates
        exactly
        as its flat records read back would (docs/architecture.md, "Results")."""
        layout = ResultLayout(dict(layout.metrics))
        outputs = set(layout.outputs())
        for result in results:
            for metric in result.layout.metrics.values():
                if layout.add(metric) is metric:
                    outputs.update(output.name for output in metric.outputs)
            for name, value in result.values().items():
                if name not in outputs and is_number(value):
                    undeclared = undeclared_metric(name)
                    if undeclared is not None:
                        layout.add(undeclared)
                        outputs.add(name)
        return cls(list(results), layout)

    def __len__(self) -> int:
        return len(self.results)

    def by_question(self) -> Mapping[str, QuestionResult]:
        return {str(result.question_id): result for result in self.results}


def undeclared_metric(name: str) -> MetricLayout | None:
    """The metric a numeric key that no metric declares is read as (a key of a saved record
    read without the config that declared it: docs/outputs.md): a score of its own
    (:class:`OutputKey`'s defaults), with ``<key>_error`` as its error key. The one rule that
    reads a key's name: a key named ``..._error`` is an error key, never a metric."""
    if name.endswith(_ERROR_SUFFIX):
        return None
    error_key = name + _ERROR_SUFFIX
    output = OutputKey(name, error_keys=(error_key,))
    return MetricLayout(name, (output,), (error_key,), declared=False)


_ERROR_SUFFIX = "_error"


def is_number(value: object) -> bool:
    """A real, finite number: booleans are labels, and NaN or infinity (which older tools
    wrote for a failure) is not a score."""
    if type(value) is float:  # the common case first: this runs for every value read
        return math.isfinite(value)
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float (10**400) is no score either
        return False
