"""Execution-based scoring: the SPARQL steps of one item executed against the run's store
before their matching (docs/knowledge-graph.md, "Execution-based scoring").

With ``sparql.execute: missing`` (the default), a successful ``sparql_query`` actual step
without a usable output (none, cut short, not SPARQL results JSON) is executed, and a
``sparql_query`` reference step without an output; with ``always``, both sides of every
SPARQL step; with ``never``, nothing. An executed step is replaced by a copy holding the
results as the SPARQL results JSON text the step rules read, and its data (what the results
files copy) gets the new ``output`` and ``execution``, where it came from
(:meth:`~graphrag_eval.graph.Execution.as_record`). A query that fails is that step's
problem: a reference step cannot match (``input_error``), an actual one keeps no usable
output; the item and the run go on.

Executions are shared within a run (:class:`SharedExecutions`): a query text is executed
once, however many questions hold it (reference queries repeat across a template's
questions), while its results are kept (:data:`CACHE_BYTES`); so is a query's own error
(a syntax error, a refused update, a timeout), not an endpoint's (unreachable, refused, a
server error), after which the query is sent again when it comes again.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter, OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import msgspec

from graphrag_eval.config.model import EvaluationConfig
from graphrag_eval.graph.execution import Execution, ExecutionError, GraphStore, StoreIdentity
from graphrag_eval.inputs import ActualStep, ReferenceQuestion, ReferenceStep, Response
from graphrag_eval.inputs.steps import ReferenceCheck
from graphrag_eval.results.to_records import EXECUTION_KEY, ExecutionRecord
from graphrag_eval.steps.rules import SPARQL_JSON_MEDIA_TYPE, check_reference_step
from graphrag_eval.steps.sparql import parse_sparql_results

__all__ = [
    "CACHE_BYTES",
    "SPARQL_STEP",
    "Executed",
    "ExecutedReferenceCheck",
    "SharedExecutions",
    "execute_steps",
    "executes_reference",
    "step_query",
]

SPARQL_STEP: Final = "sparql_query"
"""The name of the steps whose query is executed."""

CACHE_BYTES: Final = 256 * 2**20
"""The results of executed queries kept for queries that come again, by their JSON text's
length (the least recently used go first)."""

_ENCODER = msgspec.json.Encoder()

_PASSING: Final = frozenset(
    {ExecutionError.UNREACHABLE, ExecutionError.REFUSED, ExecutionError.ENDPOINT}
)
"""Errors of the endpoint rather than of the query: not kept, the query is sent again when
it comes again (the endpoint's breaker makes that fast while it is down)."""

Mode = Literal["missing", "always", "never"]


@dataclass(frozen=True, slots=True)
class Executed:
    """One query executed, as a step takes it: the execution (its results dropped) and the
    results as SPARQL results JSON text (``None`` on an error)."""

    execution: Execution
    text: str | None

    def record(self) -> ExecutionRecord:
        """The step's ``execution`` (docs/outputs.md)."""
        return ExecutionRecord(self.execution.as_record())


class SharedExecutions:
    """A store whose executions are shared within a run: each query text is sent once while
    its results are kept, and queries asked for while one runs wait for it
    (:class:`~graphrag_eval.graph.GraphStore`, with :meth:`executed` besides)."""

    def __init__(self, store: GraphStore, cache_bytes: int = CACHE_BYTES) -> None:
        self.store = store
        self.wrapped = store
        """The store whose executions are shared (what :func:`~graphrag_eval.graph.execution.
        innermost` finds)."""
        self._cache_bytes = cache_bytes
        self._kept: OrderedDict[str, Executed] = OrderedDict()
        self._kept_bytes = 0
        self._running: dict[str, asyncio.Future[Executed]] = {}
        self._store_failures = 0
        self._last_store_failure: str | None = None
        self.sent = 0
        """Queries executed by the store."""
        self.reused = 0
        """Executions served from those kept or running (the same query text again)."""
        self.failed: Counter[str] = Counter()
        """Executions that gave no results, by ``error_kind``."""

    @property
    def identity(self) -> StoreIdentity:
        return self.store.identity

    @property
    def unusable(self) -> str | None:
        """Why the store did not execute every query it was given: its own reason (its
        breaker opened), or the executions that failed on its side (unreachable, refused, a
        server error) though it stayed usable; a query's own error (syntax, update, timeout)
        is not the store's."""
        if self.store.unusable is not None or not self._store_failures:
            return self.store.unusable
        count = self._store_failures
        return (
            f"{count} {'query' if count == 1 else 'queries'} failed on its side, "
            f"the last: {self._last_store_failure}"
        )

    async def execute(self, query: str) -> Execution:
        """``query`` executed with its results (what a metric asks for: not shared)."""
        return await self.store.execute(query)

    async def executed(self, query: str) -> Executed:
        """``query`` executed, once per run while its results are kept."""
        kept = self._kept.get(query)
        if kept is not None:
            self._kept.move_to_end(query)
            self.reused += 1
            return kept
        running = self._running.get(query)
        if running is not None:
            self.reused += 1
            return await asyncio.shield(running)
        future: asyncio.Future[Executed] = asyncio.get_running_loop().create_future()
        self._running[query] = future
        try:
            done = _executed(await self.store.execute(query))
        except Exception as exc:  # a bug in the store: every item that waits for it fails
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning
            raise
        except BaseException:  # cancelled (the run is stopping)
            future.cancel()
            raise
        finally:
            del self._running[query]
        future.set_result(done)
        self.sent += 1
        if done.text is None:
            kind = done.execution.error_kind
            self.failed[kind.value if kind is not None else "error"] += 1
        if done.execution.error_kind in _PASSING:
            self._store_failures += 1
            self._last_store_failure = done.execution.error
        self._keep(query, done)
        return done

    def _keep(self, query: str, done: Executed) -> None:
        size = len(query) + len(done.text or "")
        if size > self._cache_bytes or done.execution.error_kind in _PASSING:
            return
        self._kept[query] = done
        self._kept_bytes += size
        while self._kept_bytes > self._cache_bytes:
            gone_query, gone = self._kept.popitem(last=False)
            self._kept_bytes -= len(gone_query) + len(gone.text or "")

    async def aclose(self) -> None:
        self._kept.clear()
        await self.store.aclose()


def _executed(execution: Execution) -> Executed:
    if not execution.ok or execution.results is None:
        return Executed(execution, None)
    text = _ENCODER.encode(execution.results).decode()
    return Executed(dataclasses.replace(execution, results=None), text)


def step_query(args: Any) -> str | None:
    """The query of a SPARQL step: ``args.query``, when it is a non-blank text."""
    query = args.get("query") if isinstance(args, Mapping) else None
    return query if isinstance(query, str) and query.strip() else None


def _blank(output: Any) -> bool:
    return output is None or (isinstance(output, str) and not output.strip())


def _sparql_reference(step: ReferenceStep) -> bool:
    return step.name == SPARQL_STEP and step.output_media_type in (None, SPARQL_JSON_MEDIA_TYPE)


def executes_reference(step: ReferenceStep, mode: Mode) -> bool:
    """Whether a reference step's query is executed under ``mode`` (it has one)."""
    if mode == "never" or not _sparql_reference(step) or step_query(step.args) is None:
        return False
    return mode == "always" or _blank(step.output)


class ExecutedReferenceCheck:
    """A reference step check (:class:`~graphrag_eval.inputs.steps.ReferenceCheck`) that
    leaves out the steps whose query the run executes: their output is not read."""

    def __init__(self, check: ReferenceCheck, mode: Mode) -> None:
        self._check = check
        self._mode = mode

    def __call__(self, step: ReferenceStep, /) -> str | None:
        return None if executes_reference(step, self._mode) else self._check(step)

    @property
    def reference_options(self) -> frozenset[str]:
        return frozenset(getattr(self._check, "reference_options", ()))


def _executes_actual(step: ActualStep, mode: Mode) -> bool:
    if mode == "never" or step.name != SPARQL_STEP or not step.succeeded:
        return False
    if step_query(step.args) is None:
        return False
    if mode == "always" or _blank(step.output):
        return True
    if not isinstance(step.output, str | Mapping):
        return True
    try:
        parse_sparql_results(step.output)
    except ValueError:  # cut short, or not SPARQL results: no usable output
        return True
    return False


async def execute_steps(
    question: ReferenceQuestion,
    response: Response,
    store: GraphStore,
    config: EvaluationConfig,
) -> tuple[ReferenceQuestion, Response]:
    """The item with its SPARQL steps executed as ``config.sparql.execute`` says (the same
    objects when nothing is executed). ``store`` is best a :class:`SharedExecutions`."""
    mode: Mode = config.sparql.execute
    shared = store if isinstance(store, SharedExecutions) else SharedExecutions(store)
    groups = question.reference_steps or ()
    actual = response.actual_steps or ()
    references = [step for group in groups for step in group if executes_reference(step, mode)]
    actuals = [step for step in actual if _executes_actual(step, mode)]
    if not references and not actuals:
        return question, response
    queries = [step_query(step.args) or "" for step in references]
    queries += [step_query(step.args) or "" for step in actuals]
    done = await asyncio.gather(*(shared.executed(query) for query in dict.fromkeys(queries)))
    by_query = dict(zip(dict.fromkeys(queries), done, strict=True))
    rules = config.steps.rules
    check = check_reference_step.skipping(rules) if rules else check_reference_step
    fresh: dict[int, Any] = {
        id(step): _executed_reference(step, by_query[query], check)
        for step, query in zip(references, queries[: len(references)], strict=True)
    }
    fresh.update(
        (id(step), _executed_actual(step, by_query[query], mode))
        for step, query in zip(actuals, queries[len(references) :], strict=True)
    )
    if references:
        question = dataclasses.replace(
            question,
            reference_steps=tuple(
                tuple(fresh.get(id(step), step) for step in group) for group in groups
            ),
        )
    if actuals:
        response = dataclasses.replace(
            response, actual_steps=tuple(fresh.get(id(step), step) for step in actual)
        )
    return question, response


def _executed_reference(
    step: ReferenceStep, done: Executed, check: ReferenceCheck
) -> ReferenceStep:
    """The reference step with its executed output, checked (and prepared) as the reference
    is when it is read (``required_columns`` the results lack is its problem)."""
    raw = {**step.raw, EXECUTION_KEY: done.record()}
    if done.text is None:
        error = done.execution.error or "no results"
        return dataclasses.replace(
            step, raw=raw, problem=f"its query could not be executed: {error}", memo={}
        )
    raw["output"] = done.text
    raw["output_media_type"] = SPARQL_JSON_MEDIA_TYPE
    executed = dataclasses.replace(
        step,
        output=done.text,
        output_media_type=SPARQL_JSON_MEDIA_TYPE,
        raw=raw,
        problem=None,
        memo={},
    )
    problem = check(executed)
    return executed if problem is None else dataclasses.replace(executed, problem=problem)


def _executed_actual(step: ActualStep, done: Executed, mode: Mode) -> ActualStep:
    if not isinstance(step.raw, Mapping):
        return step
    raw = {**step.raw, EXECUTION_KEY: done.record()}
    if done.text is None:  # cannot match: under always, not even on the output it logged
        output = None if mode == "always" else step.output
        error = done.execution.error or "no results"
        problem = f"its query could not be executed: {error}"
        return dataclasses.replace(step, output=output, raw=raw, problem=problem, memo={})
    raw["output"] = done.text
    return dataclasses.replace(step, output=done.text, raw=raw, memo={})
