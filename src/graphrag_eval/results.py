"""The output edge: typed outcomes become the seed's per-question result dictionaries.

This is the one place where a :class:`~graphrag_eval.metrics.base.Failed` outcome turns into
``<metric>_error`` keys and where ``matches`` and step metric keys are written onto copies of
the user's steps (the user's objects are never mutated).

Keys added by graphrag-eval beyond the seed (never renamed, only added):

* ``missing_response: true`` on a question that had no response (its ``status`` is
  ``error``);
* ``input_errors``: located messages about malformed response fields that were ignored;
* ``input_error`` on a reference or actual step that is malformed (or whose data is broken)
  and therefore cannot match;
* ``output_error`` on an unmatched actual step whose output could not be read as the reference
  step it was compared with expects (not SPARQL results JSON, not a list of contexts, ...).
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
    Placement,
    Scored,
    StepMetric,
)
from graphrag_eval.steps.matching import StepsOutcome

__all__ = ["MISSING_RESPONSE_ERROR", "error_result", "missing_result", "success_result"]

MISSING_RESPONSE_ERROR = "no response for this question"


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


def missing_result(question: ReferenceQuestion) -> dict[str, Any]:
    """The result of a reference question that got no response."""
    result = _head(question)
    result["status"] = "error"
    result["error"] = MISSING_RESPONSE_ERROR
    result["missing_response"] = True
    return result


def error_result(question: ReferenceQuestion, response: Response) -> dict[str, Any]:
    """The result of an error response: counted, never scored."""
    result = _head(question)
    result["status"] = "error"
    result["error"] = response.error
    if response.problems:
        result["input_errors"] = list(response.problems)
    return result


def success_result(
    question: ReferenceQuestion,
    response: Response,
    steps: StepsOutcome | None,
    item_outcomes: Sequence[tuple[ItemMetric, Outcome]],
    step_outcomes: Mapping[int, Sequence[tuple[StepMetric, Outcome]]],
    output_errors: Mapping[int, str] | None = None,
) -> dict[str, Any]:
    """The result of a usable response, with every metric outcome flattened to its keys."""
    result = _head(question, steps, response)
    result["status"] = "success"
    if response.problems:
        result["input_errors"] = list(response.problems)
    if response.actual_answer is not None:
        result["actual_answer"] = response.actual_answer
    for metric, outcome in item_outcomes:
        if metric.placement is Placement.BEFORE_STEPS:
            _write(result, metric, outcome)
    if response.actual_steps is not None:
        errors = output_errors or {}
        result["actual_steps"] = [
            _actual_step_copy(
                step.raw, step.problem, errors.get(step.index), step_outcomes.get(step.index, ())
            )
            for step in response.actual_steps
        ]
    for metric, outcome in item_outcomes:
        if metric.placement is Placement.AFTER_STEPS:
            _write(result, metric, outcome)
    return result


def _actual_step_copy(
    raw: Any,
    problem: str | None,
    output_error: str | None,
    outcomes: Sequence[tuple[StepMetric, Outcome]],
) -> Any:
    item = copy.deepcopy(raw)
    if not isinstance(item, dict):
        return {"value": item, "input_error": problem} if problem else item
    if problem is not None:
        item["input_error"] = problem
    if output_error is not None:
        item["output_error"] = output_error
    for metric, outcome in outcomes:
        _write(item, metric, outcome)
    return item


def _write(target: dict[str, Any], metric: Metric, outcome: Outcome) -> None:
    if isinstance(outcome, Scored):
        target.update(outcome.values)
        target.update(outcome.failures)
    elif isinstance(outcome, Failed):
        for key in metric.error_keys:
            target[key] = outcome.error
