"""``sparql_test_suite_accuracy``: the share of seeded perturbed copies of the graph on which a
reference query and its matched actual query still give agreeing results
(docs/knowledge-graph.md, "Test-suite accuracy"). It catches an actual query that agrees
with the reference by accident on today's data."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from graphrag_eval.config.model import EvaluationConfig
from graphrag_eval.graph.embedded import EmbeddedStore
from graphrag_eval.graph.execution import Execution, ExecutionError, innermost
from graphrag_eval.graph.perturb import PerturbedCopies, perturbed_copies
from graphrag_eval.graph.query_terms import QueryTerms, query_terms
from graphrag_eval.inputs import ActualStep, ReferenceStep
from graphrag_eval.metrics.base import (
    Failed,
    FailureKind,
    Input,
    ItemContext,
    ItemMetric,
    Outcome,
    OutputKey,
    Scored,
    Skipped,
)
from graphrag_eval.metrics.services import need
from graphrag_eval.steps.sparql import compare_sparql_results

__all__ = ["TestSuiteAccuracy", "step_query"]

_NAME = "sparql_test_suite_accuracy"


def step_query(args: Any) -> str | None:
    """The query of a ``sparql_query`` step: ``args.query``, or ``args`` itself when it is
    text."""
    if isinstance(args, Mapping):
        args = args.get("query")
    return args if isinstance(args, str) and args.strip() else None


@dataclass(frozen=True, slots=True)
class _Pair:
    reference: ReferenceStep
    reference_query: str
    actual_query: str | None
    """``None``: no actual step was matched, or it has no query (it agrees on no copy)."""


class _ReferenceFailed(Exception):
    """The reference query failed on a copy: the metric cannot be computed."""


class TestSuiteAccuracy(ItemMetric):
    """Both queries of each ``sparql_query`` reference step and its matched actual step,
    executed on ``sparql.test_suite.copies`` perturbed copies of the embedded graph."""

    __test__ = False  # not a pytest test class, whatever its name

    name = _NAME
    inputs = (Input.REFERENCE_STEPS,)
    needs = frozenset({"store"})
    outputs = (OutputKey(_NAME, requires=("reference_steps",), maximum=1),)
    error_keys = (f"{_NAME}_error",)

    def enabled(self, config: EvaluationConfig) -> bool:
        return config.sparql.test_suite.copies > 0

    def why_disabled(self, config: EvaluationConfig) -> str:
        return "sparql.test_suite.copies is 0 (set it to the number of perturbed copies)"

    async def score(self, context: ItemContext) -> Outcome:
        store = need(context.services.store, "store")
        store = innermost(store)
        if not isinstance(store, EmbeddedStore):
            return Skipped("test-suite accuracy needs the embedded store", run_wide=True)
        if context.steps is None:
            return Skipped("the steps were not matched")
        pairs = _pairs(context)
        if not pairs:
            return Skipped("no sparql_query reference step with a query")
        settings = context.config.sparql.test_suite
        copies = perturbed_copies(store, settings)
        agreed = 0
        for pair in pairs:
            try:
                terms = await asyncio.to_thread(query_terms, pair.reference_query)
            except ValueError as exc:
                message = f"the reference query ({pair.reference.location}) does not parse: {exc}"
                return Failed(message, FailureKind.INPUT)
            if terms.names_graphs:
                return Skipped("the reference query names graphs (GRAPH, SERVICE or FROM)")
            try:
                agreed += await _agreements(copies, pair, terms, settings.copies)
            except _ReferenceFailed as exc:
                return Failed(str(exc), FailureKind.INPUT)
        return Scored({_NAME: agreed / (len(pairs) * settings.copies)})


def _pairs(context: ItemContext) -> list[_Pair]:
    """The ``sparql_query`` reference steps of the groups that are scored, with the query of
    the actual step each was matched to."""
    steps = context.steps
    groups = context.question.reference_steps or ()
    actual: tuple[ActualStep, ...] = context.response.actual_steps or ()
    scored = range(len(groups))
    if context.config.steps.score_mode == "last_group":
        scored = range(len(groups) - 1, len(groups))
    pairs: list[_Pair] = []
    for group in scored:
        for index, reference in enumerate(groups[group]):
            query = step_query(reference.args)
            if reference.name != "sparql_query" or query is None:
                continue
            found = steps.actual_for(group, index) if steps is not None else None
            actual_query = step_query(actual[found].args) if found is not None else None
            pairs.append(_Pair(reference, query, actual_query))
    return pairs


async def _agreements(copies: PerturbedCopies, pair: _Pair, terms: QueryTerms, count: int) -> int:
    """On how many of the ``count`` copies the pair's results agree. An actual query that
    times out on a copy is not run on the next ones (they count as disagreeing): Oxigraph
    cannot stop it, and each run would keep a core busy."""
    if pair.actual_query is None:
        return 0
    agreed = 0
    for copy in range(count):
        graphs = await copies.graphs(terms, copy)
        reference, actual = await asyncio.gather(
            copies.execute(pair.reference_query, graphs),
            copies.execute(pair.actual_query, graphs),
        )
        if reference.results is None:
            where = pair.reference.location
            raise _ReferenceFailed(
                f"the reference query ({where}) failed on copy {copy}: {reference.error}"
            )
        agreed += _compare(pair.reference, reference.results, actual)
        if actual.error_kind is ExecutionError.TIMEOUT:
            break
    return agreed


def _compare(step: ReferenceStep, reference: Mapping[str, Any], actual: Execution) -> int:
    if actual.results is None:
        return 0
    try:
        return compare_sparql_results(
            reference,
            actual.results,
            step.required_columns,
            ordered=step.ordered,
            ignore_duplicates=step.ignore_duplicates,
        )
    except ValueError as exc:
        raise _ReferenceFailed(f"the reference step ({step.location}): {exc}") from None
