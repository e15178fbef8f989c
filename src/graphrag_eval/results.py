"""The output edge: typed results (:mod:`graphrag_eval.result_types`) to the seed's flat
per-question dictionaries and back (docs/outputs.md).

This is the one place that knows the flat keys, in both directions: where a
:class:`~graphrag_eval.metrics.base.Failed` outcome turns into ``<metric>_error`` keys, a
:class:`~graphrag_eval.metrics.base.Skipped` one into an entry of ``skipped``, and where
``matches`` and step metric keys are written onto copies of the user's steps (the user's
objects are never mutated); and where a saved record is read back into a typed result, each
key given to the metric that declares it.

Keys added by graphrag-eval beyond the seed (never renamed, only added):

* ``missing_response: true`` on a question that had no response (its ``status`` is
  ``error``);
* ``input_errors``: located messages about malformed response fields that were ignored;
* ``input_error`` on a reference or actual step that is malformed (or whose data is broken)
  and therefore cannot match;
* ``output_error`` on an unmatched actual step whose output could not be read as the reference
  step it was compared with expects (not SPARQL results JSON, not a list of contexts, ...);
* ``skipped``: ``{metric: reason}`` for the metrics that did not apply to the question.
"""

from __future__ import annotations

import contextlib
import copy
import gc
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from graphrag_eval.config import ConfigSource, load_config
from graphrag_eval.inputs import ReferenceQuestion, Response
from graphrag_eval.metrics.base import (
    IDENTITY_KEYS,
    Failed,
    ItemMetric,
    Metric,
    Outcome,
    OutputKey,
    Scored,
    Skipped,
    StepMetric,
    configured_metrics,
)
from graphrag_eval.result_types import (
    MetricLayout,
    OutcomeKey,
    QuestionResult,
    ResultLayout,
    RunResult,
    is_number,
)
from graphrag_eval.steps.matching import StepsOutcome

__all__ = [
    "MISSING_RESPONSE_ERROR",
    "SKIPPED_KEY",
    "RecordScores",
    "is_number",
    "iter_records",
    "iter_scores",
    "layout_for",
    "read_record",
    "read_records",
    "records_layout",
    "to_record",
    "to_records",
    "typed_error_result",
    "typed_missing_result",
    "typed_success_result",
]

MISSING_RESPONSE_ERROR = "no response for this question"
SKIPPED_KEY = "skipped"
"""Metric name -> why it did not apply to the question (only when some metric was skipped)."""


def _head(
    question: ReferenceQuestion, steps: StepsOutcome | None = None, response: Response | None = None
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "template_id": question.template_id,
        "question_id": question.id,
        "question_text": question.question_text,
    }
    if question.reference_answer is not None:
        result["reference_answer"] = question.reference_answer
    if question.reference_steps is not None:
        result["reference_steps"] = _reference_steps_copy(question, steps, response)
    return result


def _reference_steps_copy(
    question: ReferenceQuestion, steps: StepsOutcome | None, response: Response | None
) -> list[list[dict[str, Any]]]:
    actual = response.actual_steps if response is not None else None
    groups = []
    for g, group in enumerate(question.reference_steps or ()):
        copies = []
        for i, step in enumerate(group):
            item = copy.deepcopy(dict(step.raw))
            item.pop("matches", None)  # a stale value from an earlier run's output
            matched = steps.actual_for(g, i) if steps is not None else None
            if matched is not None and actual is not None:
                item["matches"] = actual[matched].label
            if step.problem is not None:
                item["input_error"] = step.problem
            copies.append(item)
        groups.append(copies)
    return groups


def typed_missing_result(question: ReferenceQuestion) -> QuestionResult:
    """The typed result of a reference question that got no response."""
    fields = _head(question)
    fields["status"] = "error"
    fields["error"] = MISSING_RESPONSE_ERROR
    fields["missing_response"] = True
    return QuestionResult(fields)


def typed_error_result(question: ReferenceQuestion, response: Response) -> QuestionResult:
    """The typed result of an error response: counted, never scored."""
    fields = _head(question)
    fields["status"] = "error"
    fields["error"] = response.error
    if response.problems:
        fields["input_errors"] = list(response.problems)
    return QuestionResult(fields)


def typed_success_result(
    question: ReferenceQuestion,
    response: Response,
    steps: StepsOutcome | None,
    item_outcomes: Sequence[tuple[ItemMetric, Outcome]],
    step_outcomes: Mapping[int, Sequence[tuple[StepMetric, Outcome]]],
    output_errors: Mapping[int, str] | None = None,
) -> QuestionResult:
    """The typed result of a usable response; each metric outcome is flattened to its keys
    only by :func:`to_record`."""
    fields = _head(question, steps, response)
    fields["status"] = "success"
    if response.problems:
        fields["input_errors"] = list(response.problems)
    if response.actual_answer is not None:
        fields["actual_answer"] = response.actual_answer
    outcomes: dict[OutcomeKey, Outcome] = {
        OutcomeKey(metric.name): outcome for metric, outcome in item_outcomes
    }
    metrics: list[Metric] = [metric for metric, _ in item_outcomes]
    if response.actual_steps is not None:
        errors = output_errors or {}
        fields["actual_steps"] = []
        for position, step in enumerate(response.actual_steps):
            fields["actual_steps"].append(
                _actual_step_copy(step.raw, step.problem, errors.get(step.index))
            )
            for metric, outcome in step_outcomes.get(step.index, ()):
                outcomes[OutcomeKey(metric.name, position)] = outcome
                metrics.append(metric)
    return QuestionResult(fields, outcomes, ResultLayout.of(metrics))


def _actual_step_copy(raw: Any, problem: str | None, output_error: str | None) -> Any:
    item = copy.deepcopy(raw)
    if not isinstance(item, dict):
        return {"value": item, "input_error": problem} if problem else item
    if problem is not None:
        item["input_error"] = problem
    if output_error is not None:
        item["output_error"] = output_error
    return item


# -- typed result -> the seed's flat record ------------------------------------------------


def to_record(result: QuestionResult) -> dict[str, Any]:
    """The seed's flat dictionary of a typed result (docs/outputs.md): its fields in order,
    the keys of metrics placed before the steps, ``actual_steps`` with the step metrics' keys
    on each step, the other metrics' keys, and ``skipped`` (metric -> reason) when some
    metric did not apply."""
    record: dict[str, Any] = {}
    placed = False
    for name, value in result.fields.items():
        if name == "actual_steps" and isinstance(value, list):
            _write_item_metrics(record, result, before_steps=True)
            placed = True
            record[name] = [_step_record(result, i, step) for i, step in enumerate(value)]
        else:
            record[name] = value
    if not placed:
        _write_item_metrics(record, result, before_steps=True)
    _write_item_metrics(record, result, before_steps=False)
    skipped: dict[str, str] = {}
    for key, outcome in result.outcomes.items():
        if isinstance(outcome, Skipped) and not outcome.run_wide:
            skipped.setdefault(key.metric, outcome.reason)
    if skipped:
        record[SKIPPED_KEY] = skipped
    return record


def to_records(run: RunResult) -> list[dict[str, Any]]:
    """The flat dictionaries of a run's results, in order."""
    return [to_record(result) for result in run.results]


def _write_item_metrics(record: dict[str, Any], result: QuestionResult, before_steps: bool) -> None:
    for name, outcome in result.at(None):
        layout = result.layout.metrics.get(name)
        if (layout is not None and layout.before_steps) is before_steps:
            _write(record, layout, outcome)


def _step_record(result: QuestionResult, index: int, step: Any) -> Any:
    if not isinstance(step, dict):
        return step
    item = dict(step)
    for name, outcome in result.at(index):
        _write(item, result.layout.metrics.get(name), outcome)
    return item


def _write(target: dict[str, Any], layout: MetricLayout | None, outcome: Outcome) -> None:
    if isinstance(outcome, Scored):
        target.update(outcome.values)
        target.update(outcome.failures)
    elif isinstance(outcome, Failed):
        for key in layout.error_keys if layout is not None else ():
            target[key] = outcome.error


# -- a saved flat record -> the typed result -----------------------------------------------


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
    with _collection_paused():
        return RunResult(list(iter_records(records, layout)), layout)


def records_layout(
    records: Iterable[Mapping[str, Any]], layout: ResultLayout | None = None
) -> ResultLayout:
    """``layout`` (by default the registered metrics') with a metric of its own for each
    numeric key of the records that no metric declares (see :func:`read_records`)."""
    # A copy: the metrics of undeclared keys belong to these records, not to the caller's.
    layout = ResultLayout(dict(layout.metrics)) if layout is not None else layout_for()
    for name in _undeclared_numeric_keys(records, layout):
        error_key = f"{name}_error"
        layout.add(
            MetricLayout(
                name,
                (OutputKey(name, error_keys=(error_key,)),),
                (error_key,),
                False,
                False,
                declared=False,
            )
        )
    return layout


def iter_records(
    records: Iterable[Mapping[str, Any]], layout: ResultLayout
) -> Iterator[QuestionResult]:
    """The typed result of each record, one at a time (``layout`` from
    :func:`records_layout`): a caller that keeps only what it takes from each result never
    holds a whole run of typed results."""
    owners = _Owners(layout)
    return (_read(record, layout, owners) for record in records)


def read_record(record: Mapping[str, Any], layout: ResultLayout | None = None) -> QuestionResult:
    """The typed result of one saved flat record (see :func:`read_records`)."""
    return read_records([record], layout).results[0]


@contextlib.contextmanager
def _collection_paused() -> Iterator[None]:
    """Cyclic garbage collection paused while the typed results are built: they hold no
    cycles, and each collection their allocations would trigger rescans every object built
    so far (reading 100,000 records took three times as long; docs/benchmarks.md)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class RecordScores(NamedTuple):
    """What a saved record scored, read without building its outcomes (for a pass over many
    records that needs only the values): exactly what its typed result's
    :meth:`~graphrag_eval.result_types.QuestionResult.values` and
    :meth:`~graphrag_eval.result_types.QuestionResult.step_scores` give, since a value is only
    ever kept by a :class:`Scored` outcome."""

    question_id: Any
    template_id: Any
    status: Any
    values: dict[str, Any]
    step_scores: list[dict[str, Any]]
    record: Mapping[str, Any]


def iter_scores(
    records: Iterable[Mapping[str, Any]], layout: ResultLayout
) -> Iterator[RecordScores]:
    """The scores of each record, one at a time (``layout`` from :func:`records_layout`)."""
    owners = _Owners(layout)
    item = {key for key, (_, is_output) in owners.item.items() if is_output} - IDENTITY_KEYS
    step = {key for key, (_, is_output) in owners.step.items() if is_output}
    for record in records:
        steps = record.get("actual_steps")
        step_scores = []
        if isinstance(steps, list):
            for each in steps:
                if isinstance(each, Mapping):
                    scored = {key: value for key, value in each.items() if key in step}
                    if scored:
                        step_scores.append(scored)
        yield RecordScores(
            record.get("question_id"),
            record.get("template_id"),
            record.get("status"),
            {key: value for key, value in record.items() if key in item},
            step_scores,
            record,
        )


class _Owners:
    """Which metric each key belongs to: on the question, and on a step."""

    def __init__(self, layout: ResultLayout) -> None:
        self.item: dict[str, tuple[OutcomeKey, bool]] = {}
        """key -> (the question-level outcome it belongs to, whether it is an output)"""
        self.step: dict[str, tuple[str, bool]] = {}
        """key -> (the step metric it belongs to, whether it is an output)"""
        for metric in layout.metrics.values():
            at = OutcomeKey(metric.name)  # one key object per metric, not one per value read
            for output in metric.outputs:
                self.item.setdefault(output.name, (at, True))
            for key in metric.error_keys:
                self.item.setdefault(key, (at, False))
            if metric.on_steps:
                for output in metric.outputs:
                    self.step.setdefault(output.name, (metric.name, True))
                for key in metric.error_keys:
                    self.step.setdefault(key, (metric.name, False))


def _undeclared_numeric_keys(
    records: Iterable[Mapping[str, Any]], layout: ResultLayout
) -> dict[str, None]:
    owners = _Owners(layout)
    found: dict[str, None] = {}
    for record in records:
        for key, value in record.items():
            if (
                key not in owners.item
                and key not in IDENTITY_KEYS
                and key != SKIPPED_KEY
                and not key.endswith("_error")
                and is_number(value)
            ):
                found[key] = None
    return found


_Parts = dict[OutcomeKey, tuple[dict[str, Any], dict[str, Any]]]


def _read(record: Mapping[str, Any], layout: ResultLayout, owners: _Owners) -> QuestionResult:
    fields: dict[str, Any] = {}
    parts: _Parts = {}
    skipped: Any = None
    for key, value in record.items():
        owner = owners.item.get(key)
        if owner is not None and key not in IDENTITY_KEYS:
            part = parts.get(owner[0])
            if part is None:
                part = parts[owner[0]] = ({}, {})
            part[0 if owner[1] else 1][key] = value
        elif key == "actual_steps" and isinstance(value, list):
            fields[key] = [_read_step(i, step, owners, parts) for i, step in enumerate(value)]
        elif key == SKIPPED_KEY and _is_reasons(value):
            skipped = value
        else:
            fields[key] = value
    outcomes = {
        key: Scored(values) if not errors else _outcome(layout, key, values, errors)
        for key, (values, errors) in parts.items()
    }
    if skipped is not None:
        if skipped and not any(OutcomeKey(name) in outcomes for name in skipped):
            outcomes.update({OutcomeKey(name): Skipped(reason) for name, reason in skipped.items()})
        else:  # empty, or naming a metric that has values: not ours to read, kept as it was
            fields[SKIPPED_KEY] = skipped
    return QuestionResult(fields, outcomes, layout)


def _read_step(index: int, step: Any, owners: _Owners, parts: _Parts) -> Any:
    if not isinstance(step, Mapping):
        return step
    kept = {}
    for key, value in step.items():
        owner = owners.step.get(key)
        if owner is None:
            kept[key] = value
        else:
            _collect(parts, OutcomeKey(owner[0], index), owner[1], key, value)
    return kept


def _collect(parts: _Parts, at: OutcomeKey, is_output: bool, key: str, value: Any) -> None:
    part = parts.get(at)
    if part is None:
        part = parts[at] = ({}, {})
    part[0 if is_output else 1][key] = value


def _outcome(
    layout: ResultLayout, at: OutcomeKey, values: dict[str, Any], errors: dict[str, Any]
) -> Outcome:
    """A metric's keys read back: :class:`Failed` when they are exactly what a failure
    writes (every error key, one message), else :class:`Scored` with its partial failures."""
    if not errors:
        return Scored(values)
    metric = layout.metrics.get(at.metric)
    messages = set(map(repr, errors.values()))
    if (
        not values
        and metric is not None
        and metric.error_keys
        and set(errors) == set(metric.error_keys)
        and len(messages) == 1
        and all(isinstance(message, str) for message in errors.values())
    ):
        return Failed(next(iter(errors.values())))
    return Scored(values, errors)


def _is_reasons(value: Any) -> bool:
    return isinstance(value, Mapping) and all(
        isinstance(name, str) and isinstance(reason, str) for name, reason in value.items()
    )
