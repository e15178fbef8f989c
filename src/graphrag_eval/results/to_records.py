"""The writing half of the output edge: typed results (:mod:`graphrag_eval.results.model`) to
the seed's flat per-question dictionaries (docs/outputs.md); the reading half is
:mod:`graphrag_eval.results.from_records`.

Together they are the one place that knows the flat keys: here is where a
:class:`~graphrag_eval.metrics.base.Failed` outcome turns into ``<metric>_error`` keys, a
:class:`~graphrag_eval.metrics.base.Skipped` one into an entry of ``skipped``, and where
``matches`` and step metric keys are written onto copies of the user's steps (the user's
objects are never mutated).

Keys added by graphrag-eval beyond the seed (never renamed, only added):

* ``missing_response: true`` on a question that had no response (its ``status`` is
  ``error``);
* ``input_errors``: located messages about malformed response fields that were ignored;
* ``input_error`` on a reference or actual step that is malformed (or whose data is broken)
  and therefore cannot match;
* ``mismatch_reason`` on a reference step below a full match: why, in one line; and
  ``nearest_match``: the actual step it came closest to (docs/steps.md);
* ``query_diagnosis`` on a SPARQL reference step below a full match: why its nearest actual
  query is wrong, as labels with the terms concerned (docs/knowledge-graph.md);
* ``output_error`` on an unmatched actual step whose output could not be read as the reference
  step it was compared with expects (not SPARQL results JSON, not a list of contexts, ...);
* ``skipped``: ``{metric: reason}`` for the metrics that did not apply to the question;
* ``execution`` on a step whose SPARQL query was executed in this run: where its output came
  from (:class:`ExecutionRecord`; one copied from an earlier run's output is dropped).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from graphrag_eval.inputs import ReferenceQuestion, Response
from graphrag_eval.metrics.base import (
    Failed,
    ItemMetric,
    Metric,
    Outcome,
    Scored,
    Skipped,
    StepMetric,
)
from graphrag_eval.results.model import (
    FAILURE_KINDS_KEY,
    SKIPPED_KEY,
    MetricLayout,
    OutcomeKey,
    QuestionResult,
    ResultLayout,
    RunResult,
)
from graphrag_eval.steps.matching import StepsOutcome

__all__ = [
    "EXECUTION_KEY",
    "MISSING_RESPONSE_ERROR",
    "ExecutionRecord",
    "to_record",
    "to_records",
    "typed_error_result",
    "typed_missing_result",
    "typed_success_result",
]

MISSING_RESPONSE_ERROR = "no response for this question"

EXECUTION_KEY = "execution"
"""The key, on a step, of where its output came from when its query was executed
(docs/knowledge-graph.md, "Execution-based scoring")."""


class ExecutionRecord(dict[str, Any]):
    """The ``execution`` of a step executed in this run, as the evaluation puts it on the
    step's data; a plain mapping under that key was copied from an earlier run's output
    (a results file given as input) and is dropped, as stale."""


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
            item = copy_tree(dict(step.raw))
            for stale in ("matches", "mismatch_reason", "nearest_match", "query_diagnosis"):
                item.pop(stale, None)  # a stale value from an earlier run's output
            _keep_fresh_execution(item)
            matched = steps.actual_for(g, i) if steps is not None else None
            if matched is not None and actual is not None:
                item["matches"] = actual[matched].label
            why = steps.explanations.get((g, i)) if steps is not None else None
            if why is not None:
                item["mismatch_reason"] = why.reason
                if why.nearest is not None and actual is not None:
                    item["nearest_match"] = actual[why.nearest].label
                if why.diagnosis is not None:
                    item["query_diagnosis"] = [dict(finding) for finding in why.diagnosis]
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


def _keep_fresh_execution(item: dict[str, Any]) -> None:
    """``item``'s ``execution`` as a plain dict when it was made in this run, else none."""
    execution = item.pop(EXECUTION_KEY, None)
    if isinstance(execution, ExecutionRecord):
        item[EXECUTION_KEY] = dict(execution)


_IMMUTABLE = frozenset({str, int, float, bool, type(None)})


def copy_tree(value: Any) -> Any:
    """A deep copy of a decoded document (the same as :func:`copy.deepcopy` for it, a few
    times faster): dictionaries and lists copied, strings and numbers shared, anything else
    (a YAML date) deep-copied. The inputs hold no recursive value (docs/security.md)."""
    kind = type(value)
    if kind is dict:
        return {key: copy_tree(item) for key, item in value.items()}
    if kind is list:
        return [copy_tree(item) for item in value]
    if kind in _IMMUTABLE:
        return value
    return copy.deepcopy(value)


def _actual_step_copy(raw: Any, problem: str | None, output_error: str | None) -> Any:
    item = copy_tree(raw)
    if not isinstance(item, dict):
        return {"value": item, "input_error": problem} if problem else item
    _keep_fresh_execution(item)
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
    kinds = result.failure_kinds()
    if kinds:
        record[FAILURE_KINDS_KEY] = kinds
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
