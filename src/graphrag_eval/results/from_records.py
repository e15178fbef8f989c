"""Saved flat records (docs/outputs.md) read back into typed results: the reading half of the
output edge (:mod:`graphrag_eval.results.to_records` writes them). Each key goes to the metric that
declares it, so nothing after this reads a key suffix.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple, overload

from graphrag_eval.collector import collection_paused
from graphrag_eval.config import ConfigSource
from graphrag_eval.metrics.base import JsonValue
from graphrag_eval.metrics.loading import load_config
from graphrag_eval.metrics.registry import IDENTITY_KEYS, configured_metrics
from graphrag_eval.results.model import (
    FAILURE_KINDS_KEY,
    SKIPPED_KEY,
    MetricLayout,
    QuestionResult,
    ResultLayout,
    RunResult,
    is_number,
    undeclared_metric,
)
from graphrag_eval.results.record_reading import Owners, is_reasons, read_typed

__all__ = [
    "NOT_SKIPPED",
    "RecordScores",
    "RecordShape",
    "ScoreReader",
    "TypedRecords",
    "iter_records",
    "iter_scores",
    "layout_for",
    "read_record",
    "read_records",
    "records_layout",
]


def layout_for(config: ConfigSource = None) -> ResultLayout:
    """The layout of the metrics a config knows: the registered ones and its custom
    evaluations (so their keys are read back as theirs)."""
    return ResultLayout.of(configured_metrics(load_config(config)))


def read_records(
    records: Sequence[Mapping[str, Any]], layout: ResultLayout | None = None
) -> RunResult:
    """Typed results of saved flat records (``layout``: by default the registered metrics').

    Each key goes to the metric that declares it (an output, or an error key); a numeric key
    no metric declares becomes a metric of its own (with ``<key>_error`` as its error key),
    as the aggregates have always counted such keys; other keys are kept as fields."""
    layout = records_layout(records, layout)
    with collection_paused():
        return RunResult(list(iter_records(records, layout)), layout)


def records_layout(
    records: Iterable[Mapping[str, Any]], layout: ResultLayout | None = None
) -> ResultLayout:
    """``layout`` (by default the registered metrics') with a metric of its own for each
    numeric key of the records that no metric declares (see :func:`read_records`)."""
    # A copy: the metrics of undeclared keys belong to these records, not to the caller's.
    layout = ResultLayout(dict(layout.metrics)) if layout is not None else layout_for()
    for metric in _undeclared_numeric_keys(records, layout).values():
        layout.add(metric)
    return layout


def iter_records(
    records: Iterable[Mapping[str, Any]], layout: ResultLayout
) -> Iterator[QuestionResult]:
    """The typed result of each record, one at a time (``layout`` from
    :func:`records_layout`): a caller that keeps only what it takes from each result never
    holds a whole run of typed results."""
    owners = Owners(layout)
    return (read_typed(record, layout, owners) for record in records)


def read_record(record: Mapping[str, Any], layout: ResultLayout | None = None) -> QuestionResult:
    """The typed result of one saved flat record (see :func:`read_records`)."""
    return read_records([record], layout).results[0]


class TypedRecords(Sequence[QuestionResult]):
    """The typed results of records read one at a time when asked for (``records``: a
    :class:`~graphrag_eval.results.records_file.RecordsFile`, say), so that a reader of a
    large run (the HTML report ``evaluate`` writes) holds only the results it keeps."""

    def __init__(self, records: Sequence[Mapping[str, Any]], layout: ResultLayout) -> None:
        self.records = records
        self.layout = layout
        self._owners = Owners(layout)

    def __len__(self) -> int:
        return len(self.records)

    @overload
    def __getitem__(self, index: int) -> QuestionResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[QuestionResult]: ...

    def __getitem__(self, index: int | slice) -> QuestionResult | list[QuestionResult]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return read_typed(self.records[index], self.layout, self._owners)

    def __iter__(self) -> Iterator[QuestionResult]:
        return (read_typed(record, self.layout, self._owners) for record in self.records)


class RecordScores(NamedTuple):
    """What a saved record scored, read without building its outcomes (for a pass over many
    records that needs only the values): exactly what its typed result's
    :meth:`~graphrag_eval.results.model.QuestionResult.values` and
    :meth:`~graphrag_eval.results.model.QuestionResult.step_scores` give, since a value is only
    ever kept by a :class:`Scored` outcome."""

    question_id: JsonValue
    template_id: JsonValue
    status: JsonValue
    values: dict[str, JsonValue]
    step_scores: list[dict[str, JsonValue]]
    record: Mapping[str, Any]
    skipped: Mapping[str, str]
    """Metric -> why it was skipped, as the typed result's
    :meth:`~graphrag_eval.results.model.QuestionResult.skipped` gives it."""


NOT_SKIPPED: Mapping[str, str] = MappingProxyType({})
"""The skip reasons of a record that has none."""
_SHAPES_KEPT = 1024  # sets of keys remembered: a run has a few; a hostile file gets no more


class RecordShape(NamedTuple):
    """What every record with one set of keys holds (worked out once per set of keys)."""

    scored: tuple[str, ...]
    """Its keys that are outputs of the metrics on the question, in the record's order (the
    keys of :attr:`RecordScores.values`)."""
    numbers: tuple[str, ...]
    """Those of :attr:`scored` the reader was asked to read as numbers, in the same order."""
    has_steps: bool
    skippable: bool
    """Whether it may have skip reasons: else :meth:`ScoreReader.skipped` is
    :data:`NOT_SKIPPED`."""
    failed: tuple[str, ...] = ()
    """The metrics whose error keys it has on the question (they failed, wholly or in part)."""


class ScoreReader:
    """Reads what saved records scored without building their outcomes (``layout`` from
    :func:`records_layout`): which of a record's keys are scores is worked out once per set
    of keys (:meth:`shape`); ``numbers``: the keys on the question whose values the caller
    reads as numbers (:attr:`RecordShape.numbers`)."""

    def __init__(self, layout: ResultLayout, numbers: Container[str] = ()) -> None:
        self._owners = owners = Owners(layout)
        self._item = {key for key, (_, out) in owners.item.items() if out} - IDENTITY_KEYS
        self._step = {key for key, (_, is_output) in owners.step.items() if is_output}
        self._errors = {key for key, (_, out) in owners.item.items() if not out} - IDENTITY_KEYS
        self._step_errors = {
            key: metric for key, (metric, is_output) in owners.step.items() if not is_output
        }
        self._numbers = numbers
        self._shapes: dict[tuple[Any, ...], RecordShape] = {}

    def shape(self, record: Mapping[str, Any]) -> RecordShape:
        """The shape of a record's set of keys."""
        keys = tuple(record)
        shape = self._shapes.get(keys)
        if shape is None:
            scored = tuple(key for key in keys if key in self._item)
            numbers = tuple(key for key in scored if key in self._numbers)
            failed = {self._owners.item[key][0].metric: None for key in keys if key in self._errors}
            shape = RecordShape(
                scored, numbers, "actual_steps" in keys, SKIPPED_KEY in keys, tuple(failed)
            )
            if len(self._shapes) < _SHAPES_KEPT:
                self._shapes[keys] = shape
        return shape

    def step_scores(self, record: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The scores of the record's steps that have some (:attr:`RecordScores.step_scores`)."""
        steps = record.get("actual_steps")
        step_scores = []
        if isinstance(steps, list):
            for each in steps:
                if isinstance(each, Mapping):
                    scored = {key: value for key, value in each.items() if key in self._step}
                    if scored:
                        step_scores.append(scored)
        return step_scores

    def step_failures(self, record: Mapping[str, Any]) -> set[str]:
        """The metrics whose error keys the record's steps have."""
        steps = record.get("actual_steps")
        return {
            self._step_errors[key]
            for step in (steps if isinstance(steps, list) else ())
            if isinstance(step, Mapping)
            for key in step
            if key in self._step_errors
        }

    def skipped(self, record: Mapping[str, Any]) -> Mapping[str, str]:
        """The record's skip reasons (:attr:`RecordScores.skipped`)."""
        return _skip_reasons(record, self._owners) if SKIPPED_KEY in record else NOT_SKIPPED


def iter_scores(
    records: Iterable[Mapping[str, Any]], layout: ResultLayout
) -> Iterator[RecordScores]:
    """The scores of each record, one at a time (``layout`` from :func:`records_layout`)."""
    reader = ScoreReader(layout)
    for record in records:
        shape = reader.shape(record)
        yield RecordScores(
            record.get("question_id"),
            record.get("template_id"),
            record.get("status"),
            {key: record[key] for key in shape.scored},
            reader.step_scores(record) if shape.has_steps else [],
            record,
            reader.skipped(record) if shape.skippable else NOT_SKIPPED,
        )


def _skip_reasons(record: Mapping[str, Any], owners: Owners) -> Mapping[str, str]:
    """The record's skip reasons as its typed result reads them (:func:`_read`): only when
    no metric they name has a value or an error on the question."""
    skipped = record[SKIPPED_KEY]
    if not skipped or not is_reasons(skipped):
        return NOT_SKIPPED
    for key in record:
        owner = owners.item.get(key)
        if owner is not None and key not in IDENTITY_KEYS and owner[0].metric in skipped:
            return NOT_SKIPPED
    return dict(skipped)


def _undeclared_numeric_keys(
    records: Iterable[Mapping[str, Any]], layout: ResultLayout
) -> dict[str, MetricLayout]:
    owners = Owners(layout)
    found: dict[str, MetricLayout] = {}
    # Records of a run share a few sets of keys: which of a record's keys could be an
    # undeclared number is worked out once per set of keys, not per key of every record.
    candidates_of: dict[tuple[str, ...], tuple[str, ...]] = {}
    for record in records:
        keys = tuple(record)
        candidates = candidates_of.get(keys)
        if candidates is None:
            candidates = candidates_of[keys] = tuple(
                key
                for key in keys
                if key not in owners.item
                and key not in IDENTITY_KEYS
                and key != SKIPPED_KEY
                and key != FAILURE_KINDS_KEY
            )
        for key in candidates:
            if key not in found and is_number(record[key]):
                undeclared = undeclared_metric(key)
                if undeclared is not None:
                    found[key] = undeclared
    return found
