"""Running an evaluation: inputs -> plan and score each item -> typed results, flattened to
the seed's dictionaries once, at the edge (docs/architecture.md, "The data flow").

The config's metric names and services are checked, and the engine built, by
:mod:`graphrag_eval.evaluation.planning`; each item is scored by
:mod:`graphrag_eval.evaluation.scoring`, at most
``max_concurrent_items`` at a time.

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
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from graphrag_eval.collector import fewer_collections, input_reading, inputs_frozen
from graphrag_eval.config import ConfigSource, EvaluationConfig
from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.errors import InputError
from graphrag_eval.evaluation.execution import ExecutedReferenceCheck
from graphrag_eval.evaluation.items import (
    ORDER_WINDOW,
    ItemCallback,
    ItemRunner,
    ResultCallback,
    Sinks,
    in_order,
)
from graphrag_eval.evaluation.planning import build_run_engine, check_services
from graphrag_eval.evaluation.services import open_run_store, services_of
from graphrag_eval.graph.execution import GraphStore
from graphrag_eval.inputs import (
    Diagnostics,
    Notice,
    ReferenceQuestion,
    ResponseSet,
    check_evaluable,
    load_reference,
    load_responses,
    parse_reference,
    parse_responses,
)
from graphrag_eval.inputs.compact import NotCompact, decode_question, load_compact_reference
from graphrag_eval.inputs.steps import ReferenceCheck
from graphrag_eval.inputs.traces import AUTO, Reading
from graphrag_eval.llm.batch.client import batch_lane_of
from graphrag_eval.llm.engine import LLMEngine
from graphrag_eval.metrics.loading import load_config
from graphrag_eval.metrics.registry import metrics_for
from graphrag_eval.results.from_records import layout_for, read_records
from graphrag_eval.results.model import QuestionResult, ResultLayout
from graphrag_eval.results.run import EvaluationRun
from graphrag_eval.results.to_records import to_records
from graphrag_eval.steps.rule import validating_only
from graphrag_eval.steps.rules import check_reference_step

__all__ = [
    "ItemCallback",
    "ResultCallback",
    "arun_evaluation",
    "evaluate",
    "prepare_reference",
    "prepare_responses",
    "run_evaluation",
]

logger = logging.getLogger("graphrag_eval")

ReferenceSource = str | Path | Sequence[Any]
ResponsesSource = str | Path | Mapping[str, Any] | Sequence[Any] | ResponseSet

_T = TypeVar("_T")


BATCH_ITEMS = 50_000
"""The most items in flight at once in batch mode (a batch holds at most 50,000 requests)."""

PREPARED_OUTPUTS_BUDGET_BYTES = 64 * 2**20
"""Reference outputs parsed while validating the dataset are kept for scoring (which then only
parses the actual side) while their text totals at most this much; a larger dataset's are
dropped after validation and parsed again as each item is scored, to bound memory."""


@input_reading()  # what the reference reads holds no cycles (collector.py)
def prepare_reference(
    reference: ReferenceSource,
    diagnostics: Diagnostics | None = None,
    config_rules: Collection[str] = (),
    *,
    compact_above: int | None = None,
    sparql: SparqlConfig | None = None,
) -> list[ReferenceQuestion]:
    """Load (if a path) and validate a reference dataset; raises ``InputError``.
    ``config_rules`` are the step names the config's ``steps.rules`` score: the registered
    rules do not check those reference steps. ``compact_above``: the questions of a JSON file
    larger than so many bytes are kept as their encoded JSON and parsed again when scored
    (``inputs/compact.py``). ``sparql``: the run's store settings; the output of a reference
    step whose query the run will execute is not checked (docs/knowledge-graph.md)."""
    if isinstance(reference, list) and reference and isinstance(reference[0], ReferenceQuestion):
        return reference
    check: ReferenceCheck = (
        check_reference_step.skipping(config_rules) if config_rules else check_reference_step
    )
    if sparql is not None and sparql.configured and sparql.execute != "never":
        check = ExecutedReferenceCheck(check, sparql.execute)
    if isinstance(reference, str | Path):
        kept = None if compact_above is None else _compact(Path(reference), compact_above, check)
        if kept is not None:
            if diagnostics is not None:
                diagnostics.extend(kept[1].notices)
            return kept[0]
        questions = parse_reference(
            load_reference(reference),
            source=str(reference),
            check_step=check,
            diagnostics=diagnostics,
        )
    else:
        questions = parse_reference(reference, check_step=check, diagnostics=diagnostics)
    _bound_prepared_outputs(questions)
    return questions


def _compact(
    path: Path, above: int, check: ReferenceCheck
) -> tuple[list[ReferenceQuestion], Diagnostics] | None:
    """The questions of a JSON reference kept compact, with their notices; ``None`` where it
    is to be read the ordinary way (which then gives every error as it always has)."""
    templates = load_compact_reference(path, above)
    if templates is None:
        return None
    found = Diagnostics()
    try:
        with validating_only():  # each question is checked again when it is read to be scored
            questions = parse_reference(
                templates,
                source=str(path),
                check_step=check,
                diagnostics=found,
                compact=decode_question,
            )
    except (InputError, NotCompact):
        return None
    return questions, found


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


def prepare_responses(responses: ResponsesSource, reading: Reading = AUTO) -> ResponseSet:
    """Load (if a path, in the format ``reading`` gives: a transcript or trace format maps
    tool names through the config's ``traces:`` section) and validate responses; only an
    unreadable file raises."""
    if isinstance(responses, ResponseSet):
        return responses
    if isinstance(responses, str | Path):
        return load_responses(responses, reading=reading)
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


async def evaluate(
    reference: ReferenceSource,
    responses: ResponsesSource,
    config: ConfigSource = None,
    *,
    on_item: ItemCallback | None = None,
    max_concurrent_items: int | None = None,
    engine: LLMEngine | None = None,
    done: Mapping[str, dict[str, Any]] | None = None,
    on_result: ResultCallback | None = None,
    keep: bool = True,
    store: GraphStore | None = None,
) -> EvaluationRun:
    """Evaluate every reference question; one bad item never stops the others.

    ``on_item`` is called with each result (its flat dictionary) as soon as it is final (for
    checkpointing and progress); the returned results are in reference order. ``engine``
    makes the judge and embedding calls (by default one is built from the config, and closed
    at the end); ``done`` holds results of a previous run to keep instead of evaluating again
    (by question id; ``on_item`` is not called for them).

    ``on_result`` is called with every typed result (kept ones too) in reference order, as
    soon as it and those before it are final; at most :data:`ORDER_WINDOW` times the items in
    flight wait for an earlier one. With ``keep=False`` the run holds no result (its
    ``items`` are empty) and drops each response once scored: ``on_result`` is where the
    results go (the command line writes and aggregates them as they come).

    ``store`` executes SPARQL steps (docs/knowledge-graph.md); by default the one the
    config's ``sparql`` section names is opened, and closed at the end."""
    settings = load_config(config)
    with fewer_collections(), inputs_frozen():
        return await _evaluate(
            settings,
            reference,
            responses,
            Sinks(on_item, on_result, keep),
            max_concurrent_items,
            engine,
            done,
            store,
        )


async def _evaluate(
    settings: EvaluationConfig,
    reference: ReferenceSource,
    responses: ResponsesSource,
    sinks: Sinks,
    max_concurrent_items: int | None,
    engine: LLMEngine | None,
    done: Mapping[str, dict[str, Any]] | None,
    store: GraphStore | None = None,
) -> EvaluationRun:
    diagnostics = Diagnostics()
    rules = settings.steps.rules.keys()
    questions = prepare_reference(reference, diagnostics, rules, sparql=settings.sparql)
    response_set = prepare_responses(responses, Reading(traces=settings.traces))
    check_evaluable(questions, response_set)  # a run that would evaluate nothing is an error
    diagnostics.extend(response_set.notices)
    diagnostics.extend(check_coverage(questions, response_set))
    own_store, store = store is None, store if store is not None else open_run_store(settings)
    own_engine = engine is None
    if engine is None:
        engine = build_run_engine(settings)
    else:
        check_services(settings, engine, store)
    batch = batch_lane_of(engine.generation if engine is not None else None)
    if max_concurrent_items is None:
        max_concurrent_items = _items_in_flight(settings, len(questions), batch is not None)
    layout = layout_for(settings)
    run = ItemRunner(
        settings,
        metrics_for(settings),
        response_set,
        diagnostics,
        services=services_of(engine, store),
        slots=asyncio.Semaphore(max(1, max_concurrent_items)),
        kept=_read_kept(done or {}, layout),
        on_item=sinks.on_item,
        drop_responses=not sinks.keep,
        batch=batch,
    )
    results: list[QuestionResult] = []

    def emit(result: QuestionResult) -> None:
        if sinks.keep:
            results.append(result)
        if sinks.on_result is not None:
            sinks.on_result(result)

    # Without a service no item waits for anything: one after the other, no task each.
    window = ORDER_WINDOW * max(1, max_concurrent_items) if run.services.provided else 1
    try:
        await in_order(questions, run.one, window, emit)
    finally:
        await _close_owned(engine if own_engine else None, store if own_store else None)
    return EvaluationRun(
        items=results,
        diagnostics=diagnostics,
        config=settings,
        layout=layout,
        llm=engine.stats if engine is not None else None,
    )


def _items_in_flight(settings: EvaluationConfig, questions: int, batch: bool) -> int:
    """How many items are scored at once by default: enough to keep every judge slot busy,
    and in batch mode all of them, so that their judge requests go in the same batches."""
    if batch:
        return max(1, min(questions, BATCH_ITEMS))
    return max(64, 4 * settings.llm.max_concurrency)


async def _close_owned(engine: LLMEngine | None, store: GraphStore | None) -> None:
    """Close what the run opened itself."""
    if engine is not None:
        await engine.aclose()
    if store is not None:
        await store.aclose()


def _read_kept(
    done: Mapping[str, Mapping[str, Any]], layout: ResultLayout
) -> dict[str, QuestionResult]:
    """The results kept from an earlier run, read back together (a key no metric declares is
    read the same way in every record, as :func:`~graphrag_eval.results.from_records.read_records`
    does
    for a saved run), by question id."""
    kept = read_records(list(done.values()), layout).results
    return dict(zip(done, kept, strict=True))


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
    return to_records(run.run_result)


def run_evaluation(
    reference_qas: ReferenceSource,
    chat_responses: ResponsesSource,
    config: ConfigSource = None,
) -> list[dict[str, Any]]:
    """Synchronous :func:`arun_evaluation`; works in scripts and inside a running event loop."""
    return run_sync(lambda: arun_evaluation(reference_qas, chat_responses, config))


def run_sync(make: Callable[[], Awaitable[_T]]) -> _T:
    """Run a coroutine to completion from synchronous code, whether or not a loop runs here.

    Its result stays out of the loop's main task: ``asyncio.run`` formats the repr of its
    Ctrl-C handler, which holds that task and so its result, twice as it restores the handler
    (in ``signal.getsignal``), and the repr of a run of thousands of items costs a few
    tenths of a second."""
    results: list[_T] = []

    async def main() -> None:
        results.append(await make())

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        in_a_loop = False
    else:
        in_a_loop = True
    if not in_a_loop:
        asyncio.run(main())
        return results[0]
    # Called from inside a running loop (a notebook cell): that loop is busy running the
    # caller, so run ours on a private loop in a worker thread and wait for it.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, main()).result()
    return results[0]
