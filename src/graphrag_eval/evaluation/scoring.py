"""Scoring one item: its step matching, then the metrics the plan runs on it
(:func:`~graphrag_eval.evaluation.planning.plan_item`), concurrently, with derived metrics after the
others; the typed outcomes go to :mod:`graphrag_eval.results.to_records` to become the result
(docs/architecture.md, "The data flow")."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphrag_eval.config.model import EvaluationConfig
from graphrag_eval.evaluation.diagnosis import diagnose_steps
from graphrag_eval.evaluation.execution import execute_steps
from graphrag_eval.evaluation.planning import ItemPlan, plan_item
from graphrag_eval.inputs import (
    RESPONSES_LABEL,
    ActualStep,
    Notice,
    ReferenceQuestion,
    ReferenceStep,
    Response,
    unreadable_output_notice,
)
from graphrag_eval.llm.repeat import repeat_scope
from graphrag_eval.metrics.base import (
    DerivedMetric,
    Failed,
    FailureKind,
    ItemContext,
    ItemMetric,
    Metric,
    Outcome,
    Scored,
    StepMetric,
)
from graphrag_eval.metrics.repeats import combine_repeats, is_judged
from graphrag_eval.metrics.services import Services
from graphrag_eval.results.model import MetricLayout, OutcomeKey, QuestionResult
from graphrag_eval.results.to_records import (
    typed_error_result,
    typed_missing_result,
    typed_success_result,
)
from graphrag_eval.steps.config_rules import config_rules
from graphrag_eval.steps.matching import StepsOutcome, evaluate_steps
from graphrag_eval.steps.reasons import explain_steps
from graphrag_eval.steps.rules import PairScore, score_pair

__all__ = ["evaluate_item"]

logger = logging.getLogger("graphrag_eval")


async def evaluate_item(
    question: ReferenceQuestion,
    response: Response | None,
    metrics: Sequence[Metric],
    config: EvaluationConfig,
    *,
    source: str = RESPONSES_LABEL,
    services: Services | None = None,
) -> tuple[QuestionResult, list[Notice]]:
    """Evaluate one question against its response (``None`` when it has none): the typed
    result (flattened only at the output edge, :mod:`graphrag_eval.results.to_records`), and notices
    about what could not be read. Which metrics run on it is planned first
    (:func:`~graphrag_eval.evaluation.planning.plan_item`); the others are skipped with their
    reason."""
    if response is None:
        return _error_sample(typed_missing_result(question), question, config), []
    if response.is_error:
        return _error_sample(typed_error_result(question, response), question, config), []
    if services is not None and services.store is not None and config.sparql.execute != "never":
        question, response = await execute_steps(question, response, services.store, config)
    matching = _match_steps(question, response, config)
    store = services.store if services is not None else None  # query_diagnosis: after matching
    matching.steps = await diagnose_steps(question, response, matching.steps, config, store)
    context = ItemContext(
        question=question,
        response=response,
        config=config,
        steps=matching.steps,
        steps_error=matching.error,
        services=services or Services(),
    )
    available = context.services.provided
    outcomes = await _score(metrics, plan_item(metrics, available, question, response), context)
    item_outcomes = [
        (metric, outcome)
        for (metric, step_index), outcome in outcomes
        if step_index is None and isinstance(metric, ItemMetric)
    ]
    step_outcomes: dict[int, list[tuple[StepMetric, Outcome]]] = {}
    for (metric, step_index), outcome in outcomes:
        if step_index is not None and isinstance(metric, StepMetric):
            step_outcomes.setdefault(step_index, []).append((metric, outcome))
    steps = matching.steps
    matched = {match.actual_index for match in steps.matches} if steps is not None else set()
    output_errors = {i: why for i, why in matching.unreadable.items() if i not in matched}
    result = typed_success_result(
        question, response, steps, item_outcomes, step_outcomes, output_errors
    )
    notices = [
        unreadable_output_notice(source, question.id, index, why)
        for index, why in sorted(output_errors.items())
    ]
    return result, notices


@dataclass(slots=True)
class _Matching:
    """The item's step matching, or why it failed, and the actual outputs that could not be
    read (actual step index -> why)."""

    steps: StepsOutcome | None = None
    error: str | None = None
    unreadable: dict[int, str] = field(default_factory=dict)


def _match_steps(
    question: ReferenceQuestion, response: Response, config: EvaluationConfig
) -> _Matching:
    matching = _Matching()
    if not question.reference_steps:
        return matching

    rules = config_rules(config.steps.rules)
    pairs: dict[tuple[int, int], PairScore] = {}

    def scorer(reference: ReferenceStep, actual: ActualStep) -> float:
        pair = score_pair(reference, actual, rules)
        pairs[(id(reference), actual.index)] = pair
        if pair.problem is not None:
            matching.unreadable.setdefault(actual.index, pair.problem)
        return pair.score

    groups, actual_steps = question.reference_steps, response.actual_steps or ()
    try:
        matching.steps = evaluate_steps(groups, actual_steps, scorer, config.steps.score_mode)
    except Exception as exc:  # a bug must cost one metric, not the item
        logger.exception("step matching failed for question %r", question.id)
        matching.error = f"internal error while matching steps: {exc!r}"
        return matching
    try:
        explanations = explain_steps(
            groups,
            actual_steps,
            matching.steps,
            all_groups=config.steps.score_mode == "all_groups",
            known=lambda reference, actual: pairs.get((id(reference), actual.index)),
            rules=rules,
        )
    except Exception:  # a bug in an explanation must not cost the score
        logger.exception("explaining the step mismatches failed for question %r", question.id)
    else:
        matching.steps = dataclasses.replace(matching.steps, explanations=explanations)
    return matching


_Key = tuple[Metric, int | None]
"""A metric and the actual step index it scored (``None``: the item as a whole)."""


async def _score(
    metrics: Sequence[Metric], plan: ItemPlan, context: ItemContext
) -> list[tuple[_Key, Outcome]]:
    """Every outcome of the item, in ``metrics`` order: the skipped metrics' reasons, the
    others run concurrently (one after the other when the run has no service: none of them
    waits for anything), and derived metrics after them, from their values."""
    outcomes: dict[_Key, Outcome] = {}
    for metric, skipped in plan.skipped:
        outcomes.update((key, skipped) for key, _ in _targets(metric, context))
    repeats = context.config.llm.repeats
    jobs = {
        key: (
            _repeated(metric, context, step, repeats)
            if repeats > 1 and is_judged(metric)
            else _safely(metric, context, _scoring(metric, context, step))
        )
        for metric in plan.runs
        if not isinstance(metric, DerivedMetric)
        for key, step in _targets(metric, context)
    }
    if context.services.provided:  # calls to a service: concurrently
        outcomes.update(zip(jobs, await asyncio.gather(*jobs.values()), strict=True))
    else:  # nothing to wait for: one after the other, without a task each
        for key, job in jobs.items():
            outcomes[key] = await job
    derived = [metric for metric in plan.runs if isinstance(metric, DerivedMetric)]
    if derived:
        # Computed from the others' values (ragas_score from its components), after them.
        scores: dict[str, Any] = {}
        for (_, step_index), outcome in outcomes.items():
            if step_index is None and isinstance(outcome, Scored):
                scores.update(outcome.values)
        with_scores = dataclasses.replace(context, scores=scores)
        for metric in derived:
            outcomes[(metric, None)] = await _safely(metric, context, metric.score(with_scores))
    order = {id(metric): position for position, metric in enumerate(metrics)}
    return sorted(outcomes.items(), key=lambda entry: order[id(entry[0][0])])


def _targets(metric: Metric, context: ItemContext) -> list[tuple[_Key, ActualStep | None]]:
    """What ``metric`` scores on the item: the item, or each actual step it applies to."""
    if not isinstance(metric, StepMetric):
        return [((metric, None), None)]
    return [
        ((metric, step.index), step)
        for step in context.response.actual_steps or ()
        if metric.applies_to(context, step)
    ]


async def _repeated(
    metric: Metric, context: ItemContext, step: ActualStep | None, repeats: int
) -> Outcome:
    """A judged metric scored ``repeats`` times, concurrently, each repeat's judge calls its
    own (:mod:`graphrag_eval.llm.repeat`), made one outcome
    (:func:`~graphrag_eval.metrics.repeats.combine_repeats`)."""

    async def one(index: int) -> Outcome:
        with repeat_scope(index):  # in this repeat's own task: its calls only
            return await _safely(metric, context, _scoring(metric, context, step))

    outcomes = await asyncio.gather(*(one(index) for index in range(repeats)))
    layout = MetricLayout.of(metric)
    return combine_repeats(outcomes, layout.outputs, layout.error_keys)


def _scoring(metric: Metric, context: ItemContext, step: ActualStep | None) -> Awaitable[Outcome]:
    if isinstance(metric, StepMetric) and step is not None:
        return metric.score_step(context, step)
    if not isinstance(metric, ItemMetric):
        raise TypeError(f"{metric.name} is neither an item nor a step metric")
    return metric.score(context)


def _error_sample(
    result: QuestionResult, question: ReferenceQuestion, config: EvaluationConfig
) -> QuestionResult:
    """An error sample's result; under ``aggregation.error_samples: zero`` it also carries
    ``actual_steps: []`` and, when the question has reference steps, ``steps_score: 0.0``,
    as the seed's later versions write, so the per-question results say what the
    aggregates and ``compare`` count (docs/outputs.md)."""
    if config.aggregation.error_samples == "zero":
        result.fields["actual_steps"] = []
        if question.reference_steps:
            result.outcomes[OutcomeKey("steps_score")] = Scored({"steps_score": 0.0})
    return result


async def _safely(metric: Metric, context: ItemContext, work: Awaitable[Outcome]) -> Outcome:
    """Run a metric; an exception in it (a bug) becomes that metric's failure on this item,
    its message without any secret the engine knows (docs/security.md)."""
    try:
        return await work
    except Exception as exc:
        logger.exception("metric %s failed on question %r", metric.name, context.question.id)
        error = f"internal error in {metric.name}: {exc!r}"
        return Failed(context.services.redact(error), FailureKind.INTERNAL, metric.name)
