"""Each question's numeric values, as the aggregates count them, for comparing runs item by
item and for the report's histograms; and what a run's results show about which keys count
(:class:`KeyEvidence`), shared with :mod:`graphrag_eval.results.aggregation`.

Saved records are read one at a time, their scores only, as
:func:`~graphrag_eval.results.from_records.iter_scores` reads them (through a
:class:`~graphrag_eval.results.from_records.ScoreReader`), so the values of a large run are taken
without
holding the run's typed results (docs/benchmarks.md, "Run comparison" and "Follow-up").
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from math import isfinite
from typing import Any, NamedTuple

from graphrag_eval.config import ConfigSource
from graphrag_eval.metrics.base import Aggregation, Failed, JsonValue, OutputKey, Scored
from graphrag_eval.metrics.loading import load_config
from graphrag_eval.results.from_records import (
    NOT_SKIPPED,
    RecordShape,
    ScoreReader,
    iter_records,
    layout_for,
    records_layout,
)
from graphrag_eval.results.model import QuestionResult, ResultLayout, RunResult, is_number
from graphrag_eval.results.repeated import RepeatRows, RepeatValues

__all__ = ["ItemIdentity", "ItemValues", "KeyEvidence", "item_values"]

AggregatedKeys = dict[str, tuple[OutputKey, bool]]
"""Aggregated key -> (its declaration, whether it is written on steps), in output order."""


class ItemIdentity(NamedTuple):
    """Which question a row of :class:`ItemValues` holds (as text, for pairing runs)."""

    question_id: str
    template_id: str
    status: str


@dataclass(frozen=True, slots=True)
class ItemValues:
    """The numeric scores of each question, one number per key, as the aggregates count them."""

    keys: dict[str, OutputKey]
    """The numeric keys, in the aggregates' order, with their declarations."""
    values: list[dict[str, float]]
    """Per result, in order: key -> value (the mean over the steps for keys on steps). A key
    is absent where the question was not scored; error samples count as 0 under
    ``aggregation.error_samples: zero``, as in the aggregates."""
    questions: list[ItemIdentity]
    """Per result, in the same order: which question it is."""
    skipped: list[Mapping[str, str]]
    """Per result, in the same order: metric -> why it was skipped."""
    failed: Mapping[str, int] = field(default_factory=dict)
    """Key -> the questions without a value for it because its metric failed (wholly or in
    part: an internal error, a judge that gave no reply...), as the coverage counts them."""
    repeats: list[dict[str, RepeatValues]] = field(default_factory=list)
    """Per result, in the same order as ``values`` (an empty mapping where a result has no
    repeats, as every result of a run without them): key -> its N per-repeat values under
    ``llm.repeats`` (``None`` for a failed repeat; for a key on steps, each repeat's mean
    over the steps), for the numeric keys that have repeats on the question; ``values``
    holds their means. The contract compare builds on (docs/outputs.md, "Repeats"):
    stable."""

    def repeat_array(self, key: str) -> list[RepeatValues | None]:
        """Per result, ``key``'s repeats (``None`` where the result has none of it)."""
        return [row.get(key) for row in self.repeats]


class KeyEvidence:
    """What a run's results show about its keys, gathered one result at a time: which
    declared keys occur (on the question, or on a step for a metric of steps) or were
    attempted and failed (so a metric that failed everywhere is still counted), and which an
    error sample would have had (some success has the key, or the evaluation wrote a number
    for it on an error sample, as it does for ``steps_score`` under ``error_samples: zero``).
    """

    def __init__(self, layout: ResultLayout) -> None:
        self.declared = layout.outputs()
        self._on_successes: set[str] = set()
        """Keys a success has: they occur, and the run computed them."""
        self._present: set[str] = set()
        """Other keys that occur: on an error sample, or on a step."""
        self._computed: set[str] = set()
        """Other keys the run computed: a number on an error sample."""
        self._failed: set[str] = set()
        """Error keys some result has: their metrics were attempted."""

    def add(
        self,
        is_error: bool,
        scores: Mapping[str, Any],
        step_scores: Iterable[Mapping[str, Any]],
        failed: Iterable[str] = (),
    ) -> None:
        """Take one result: whether it is an error sample, its
        :meth:`~graphrag_eval.results.model.QuestionResult.values`,
        :meth:`~graphrag_eval.results.model.QuestionResult.step_scores` and the error keys of
        what failed on it or its steps."""
        self._failed.update(failed)
        if is_error:
            self._present.update(scores)
            self._computed.update(name for name, value in scores.items() if is_number(value))
        else:
            self._on_successes.update(scores)
        for step in step_scores:
            # A value no metric declares on steps stays a step field when read back: skipped.
            self._present.update(key for key in step if self.declared.get(key, (None, False))[1])

    def keys(self) -> AggregatedKeys:
        """Aggregated keys in a stable order: declared keys that occur (or must always
        appear), then the numeric keys no metric declares, in order of first appearance (the
        reader gives each a metric of its own,
        :func:`~graphrag_eval.results.from_records.read_records`)."""
        return {
            name: entry
            for name, entry in self.declared.items()
            if entry[0].aggregation is not Aggregation.NONE
            and (
                name in self._on_successes
                or name in self._present
                or entry[0].always
                or not self._failed.isdisjoint(entry[0].error_keys)
            )
        }

    def zeroable(self, keys: AggregatedKeys) -> dict[str, OutputKey]:
        """The keys (of ``keys``) an error sample counts as 0 on under
        ``aggregation.error_samples: zero``: declared zeroable, and the run computed them."""
        return {
            name: spec
            for name, (spec, on_steps) in keys.items()
            if spec.zero_for_error_samples
            and not on_steps
            and (name in self._on_successes or name in self._computed)
        }


def item_values(
    evaluation_results: Sequence[Mapping[str, Any]] | RunResult,
    config: ConfigSource = None,
    layout: ResultLayout | None = None,
) -> ItemValues:
    """Each question's value of every numeric key (for comparing runs item by item); flat
    records are read one at a time, their scores only (an error sample's whole typed result,
    whose fields decide its zeros). ``layout``: the records' layout when the caller has it
    (:func:`~graphrag_eval.results.from_records.records_layout`), else worked out here."""
    settings = load_config(config)
    if isinstance(evaluation_results, RunResult):
        taken = _Taken(evaluation_results.layout)
        _take_results(taken, evaluation_results.results)
    else:
        if layout is None:
            layout = records_layout(evaluation_results, layout_for(settings))
        taken = _Taken(layout)
        _take_records(taken, evaluation_results)
    return taken.item_values(settings.aggregation.error_samples == "zero")


class _Taken:
    """What :func:`item_values` has taken so far, one result after another."""

    def __init__(self, layout: ResultLayout) -> None:
        self.layout = layout
        self.evidence = KeyEvidence(layout)
        self.numeric = {
            name: on_steps
            for name, (spec, on_steps) in self.evidence.declared.items()
            if spec.aggregation is Aggregation.NUMERIC
        }
        self.on_questions = {name for name, on_steps in self.numeric.items() if not on_steps}
        self.rows: list[dict[str, float]] = []
        self.identities: list[ItemIdentity] = []
        self.skipped: list[Mapping[str, str]] = []
        self.errors: list[tuple[dict[str, float], QuestionResult | Mapping[str, Any]]] = []
        self.failed: Counter[str] = Counter()
        self._metric_keys = {
            metric.name: tuple(out.name for out in metric.outputs if out.name in self.numeric)
            for metric in layout.metrics.values()
        }
        self.repeat_rows = RepeatRows(layout.metrics.values())
        self.repeats: list[dict[str, RepeatValues]] = []

    def count_failures(self, metrics: Iterable[str], row: Mapping[str, float]) -> None:
        """Count the keys of the metrics that failed on a question that has no value for
        them (its row)."""
        for metric in metrics:
            for key in self._metric_keys.get(metric, ()):
                if key not in row:
                    self.failed[key] += 1

    def add(
        self,
        question_id: Any,
        template_id: Any,
        status: Any,
        scores: Mapping[str, Any],
        steps: list[dict[str, Any]],
        source: QuestionResult | Mapping[str, Any],
    ) -> None:
        """Take one result (its skip reasons are appended by the caller)."""
        is_error = status == "error"
        self.evidence.add(is_error, scores, steps)
        row: dict[str, float] = {}
        if is_error:
            self.errors.append((row, source))
        else:
            on_questions = self.on_questions
            row = _numbers(scores, [name for name in scores if name in on_questions])
            if steps:
                row.update(_step_means(steps, self.numeric))
        self.rows.append(row)
        self.identities.append(ItemIdentity(str(question_id), str(template_id), str(status)))

    def item_values(self, zero_errors: bool) -> ItemValues:
        """The values taken, with the error samples' zeros under ``error_samples: zero``."""
        evidence = self.evidence
        keys = {name: spec for name, (spec, _) in evidence.keys().items() if name in self.numeric}
        if zero_errors:
            zeroable = evidence.zeroable(evidence.keys())
            for row, source in self.errors:
                result = (
                    source if isinstance(source, QuestionResult) else _typed(source, self.layout)
                )
                row.update(
                    (name, 0.0)
                    for name, spec in zeroable.items()
                    if name in keys and all(result.has(field) for field in spec.requires)
                )
        return ItemValues(
            keys, self.rows, self.identities, self.skipped, dict(self.failed), self.repeats
        )


def _take_records(taken: _Taken, records: Iterable[Mapping[str, Any]]) -> None:
    """:meth:`_Taken.add` for each saved record, read as
    :func:`~graphrag_eval.results.from_records.iter_scores` reads it
    (:class:`~graphrag_eval.results.from_records.ScoreReader`), without building its scores for
    a success without step scores: its numbers are read by the keys of its shape, and the
    evidence takes a shape's keys once, not once per record."""
    reader = ScoreReader(taken.layout, taken.on_questions)
    evidence, rows, identities = taken.evidence, taken.rows, taken.identities
    skipped = taken.skipped
    last: RecordShape | None = None  # the shape whose keys the evidence has from a success
    for record in records:
        shape = reader.shape(record)
        skipped.append(reader.skipped(record) if shape.skippable else NOT_SKIPPED)
        status = record.get("status")
        steps = reader.step_scores(record) if shape.has_steps else []
        if status == "error" or steps:
            scores = {key: record[key] for key in shape.scored}
            question_id, template_id = record.get("question_id"), record.get("template_id")
            taken.add(question_id, template_id, status, scores, steps, record)
        else:
            if shape is not last:
                evidence.add(False, {key: record[key] for key in shape.scored}, ())
                last = shape
            rows.append(_numbers(record, shape.numbers))
            identities.append(
                ItemIdentity(
                    str(record.get("question_id")), str(record.get("template_id")), str(status)
                )
            )
        taken.repeats.append(taken.repeat_rows.row(record, steps, shape.scored))
        if shape.failed:
            taken.count_failures(shape.failed, rows[-1])
        if shape.has_steps:
            taken.count_failures(reader.step_failures(record), rows[-1])


class _Shape(NamedTuple):
    """What :func:`_take_results` works out once per set of keys of a success without step
    scores."""

    numbers: list[str]
    """Its keys that may hold a numeric value on the question, in its order."""
    repeated: bool
    """Some key of it holds a metric's per-repeat values (else its repeats row is empty)."""


def _take_results(taken: _Taken, results: Iterable[QuestionResult]) -> None:
    """:meth:`_Taken.add` for each typed result, in one pass over its outcomes (its values,
    whether it has step scores, why metrics were skipped); for a success without step scores,
    which of its keys are numbers or repeats is worked out once per set of keys, and the
    evidence takes a set of keys once, as :func:`_take_records` does. This runs for every
    outcome of every result the report shows (docs/benchmarks.md, "Report render, 100,000
    questions"): a plain :class:`~graphrag_eval.metrics.base.Scored` outcome, the common one,
    is taken first by its exact type."""
    on_questions = taken.on_questions
    companions = {values_key for _, values_key in taken.repeat_rows.keys.values()}
    evidence, rows, identities = taken.evidence, taken.rows, taken.identities
    skipped, repeats, repeat_row = taken.skipped, taken.repeats, taken.repeat_rows.row
    shapes: dict[tuple[str, ...], _Shape] = {}
    last: _Shape | None = None  # the shape whose keys the evidence has from a success
    new_identity = tuple.__new__  # ItemIdentity(...) without its Python-level __new__
    for result in results:
        values: dict[str, JsonValue] = {}
        on_steps = False  # some outcome is a step's: read as the typed result gives it
        unusual = False  # some outcome is not a plain Scored one on the question
        for key, outcome in result.outcomes.items():
            if type(outcome) is Scored and not outcome.failures and key[1] is None:
                values |= outcome.values
            else:
                unusual = True
                on_steps = on_steps or key[1] is not None
                if key[1] is None and isinstance(outcome, Scored):
                    values |= outcome.values
        skipped.append((result.skipped() or NOT_SKIPPED) if unusual else NOT_SKIPPED)
        steps = result.step_scores() if on_steps else []
        fields = result.fields
        status = fields.get("status")
        if status == "error" or steps:
            question_id, template_id = fields.get("question_id"), fields.get("template_id")
            taken.add(question_id, template_id, status, values, steps, result)
            repeats.append(repeat_row(values, steps))
        else:
            keys = tuple(values)
            shape = shapes.get(keys)
            if shape is None:
                numbers = [name for name in keys if name in on_questions]
                shape = shapes[keys] = _Shape(numbers, not companions.isdisjoint(keys))
            if shape is not last:
                evidence.add(False, values, ())
                last = shape
            rows.append(_numbers(values, shape.numbers))
            question_id, template_id = (
                str(fields.get("question_id")),
                str(fields.get("template_id")),
            )
            identities.append(new_identity(ItemIdentity, (question_id, template_id, str(status))))
            repeats.append(repeat_row(values, steps, keys) if shape.repeated else {})
        if unusual:
            taken.count_failures(_failed(result), rows[-1])


def _failed(result: QuestionResult) -> dict[str, None]:
    """The metrics that failed on a result, wholly or in part, on the question or a step
    (:meth:`QuestionResult.failed_metrics`), in the order of its outcomes."""
    return dict.fromkeys(
        key.metric
        for key, outcome in result.outcomes.items()
        if isinstance(outcome, Failed) or (isinstance(outcome, Scored) and outcome.failures)
    )


def _typed(record: Mapping[str, Any], layout: ResultLayout) -> QuestionResult:
    return next(iter_records([record], layout))


def _numbers(values: Mapping[str, Any], names: Iterable[str]) -> dict[str, float]:
    """The numbers among ``values`` of the keys ``names`` (all of them keys of ``values``),
    as floats, in the order of ``names`` (plain floats and ints checked in line: this runs for
    every value of a run)."""
    row: dict[str, float] = {}
    for name in names:
        value = values[name]
        if type(value) is float:
            if isfinite(value):
                row[name] = value
        elif type(value) is int:
            try:
                number = float(value)
            except OverflowError:  # an int too large for a float is not a number
                continue
            row[name] = number
        elif is_number(value):
            row[name] = float(value)
    return row


def _step_means(steps: list[dict[str, Any]], numeric: Mapping[str, bool]) -> dict[str, float]:
    """Key -> the mean of its numbers over the steps, for the numeric keys of step metrics."""
    found: dict[str, list[Any]] = {}
    for step in steps:
        for name, value in step.items():
            if numeric.get(name) is True and is_number(value):
                found.setdefault(name, []).append(value)
    return {name: statistics.fmean(numbers) for name, numbers in found.items()}
