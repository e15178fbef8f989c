"""Executions shared within a run (docs/knowledge-graph.md, "Execution-based scoring"): a
query text repeated across questions is executed once, against a real embedded store whose
calls are counted."""

from __future__ import annotations

import asyncio
import importlib.util
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.evaluation.execution import SharedExecutions
from graphrag_eval.evaluation.runner import evaluate, run_sync
from graphrag_eval.graph.embedded import load_embedded
from graphrag_eval.graph.execution import Execution, ExecutionError, GraphStore, StoreIdentity
from graphrag_eval.graph.stores import open_store

from builders import SPARQL_JSON, dataset, question, ref_step, response, step
from judge_server import closed_port_url

pytest.importorskip("pyoxigraph")

EX = "http://example.org/"
QUERY = f"SELECT ?n WHERE {{ <{EX}a> <{EX}name> ?n }}"


class CountingStore:
    """A real store (the embedded one by default), with the queries it was asked to execute
    counted."""

    def __init__(self, graph: Path | None = None, store: GraphStore | None = None) -> None:
        if store is None:
            store = load_embedded(SparqlConfig(data=[str(graph)]))
        self.store = store
        self.asked: Counter[str] = Counter()
        self.closed = False

    @property
    def identity(self) -> StoreIdentity:
        return self.store.identity

    @property
    def unusable(self) -> str | None:
        return self.store.unusable

    async def execute(self, query: str) -> Execution:
        self.asked[query] += 1
        await asyncio.sleep(0)  # let the other items ask for it meanwhile
        return await self.store.execute(query)

    async def aclose(self) -> None:
        self.closed = True
        await self.store.aclose()


@pytest.fixture
def counted(tmp_path: Path) -> CountingStore:
    graph = tmp_path / "graph.ttl"
    graph.write_text(f'<{EX}a> <{EX}name> "A" .\n', encoding="utf-8")
    return CountingStore(graph)


def _reference_step() -> dict[str, Any]:
    return ref_step("sparql_query", args={"query": QUERY}, output_media_type=SPARQL_JSON)


@pytest.mark.parametrize("wrapped", [True, False], ids=["shared", "plain store"])
def test_a_query_repeated_across_questions_is_executed_once(
    counted: CountingStore, wrapped: bool
) -> None:
    ids = [f"q{number}" for number in range(12)]
    reference = dataset(*(question(qid, [[_reference_step()]]) for qid in ids))
    responses = [
        response(qid, [step("sparql_query", args={"query": QUERY}, id="s")]) for qid in ids
    ]
    given = SharedExecutions(counted) if wrapped else counted

    async def run() -> Any:
        return await evaluate(
            reference,
            responses,
            {"sparql": {"data": ["unused.ttl"]}},  # the store given is the one used
            store=given,
            max_concurrent_items=6,
        )

    results = run_sync(run).results
    assert [result["steps_score"] for result in results] == [1.0] * len(ids)
    assert counted.asked == {QUERY: 1}
    assert not counted.closed  # given by the caller: the caller closes it


def test_the_kept_results_are_bounded(counted: CountingStore) -> None:
    queries = [f"{QUERY} LIMIT {limit}" for limit in range(1, 5)]
    shared = SharedExecutions(counted, cache_bytes=2 * (len(queries[0]) + 200))

    async def run() -> None:
        for query in queries:
            assert (await shared.executed(query)).text is not None
        await shared.executed(queries[-1])  # kept: not asked again
        await shared.executed(queries[0])  # the least recently used: gone, asked again
        await shared.aclose()

    asyncio.run(run())
    assert counted.asked == {**dict.fromkeys(queries, 1), queries[0]: 2}
    assert counted.closed


def test_a_metric_asking_the_shared_store_gets_the_results(counted: CountingStore) -> None:
    shared = SharedExecutions(counted)
    execution = asyncio.run(shared.execute(QUERY))
    assert execution.ok and execution.rows == 1
    assert execution.results is not None
    assert execution.results["results"]["bindings"] == [{"n": {"type": "literal", "value": "A"}}]
    assert shared.identity == counted.identity and shared.unusable is None


def test_a_querys_own_error_is_kept(counted: CountingStore) -> None:
    shared = SharedExecutions(counted)
    broken = "SELECT ?n WHERE { oops"

    async def run() -> list[ExecutionError | None]:
        return [(await shared.executed(broken)).execution.error_kind for _ in range(3)]

    assert asyncio.run(run()) == [ExecutionError.SYNTAX_ERROR] * 3
    assert counted.asked == {broken: 1}


@pytest.mark.skipif(
    importlib.util.find_spec("graphrag_eval.graph.endpoint") is None,
    reason="the endpoint store is not in this build",
)
def test_an_endpoints_error_is_not_kept() -> None:
    endpoint = open_store(SparqlConfig(endpoint=closed_port_url(), retries=0, timeout_s=5))
    assert endpoint is not None
    counted = CountingStore(store=endpoint)
    shared = SharedExecutions(counted)

    async def run() -> list[ExecutionError | None]:
        kinds = [(await shared.executed(QUERY)).execution.error_kind for _ in range(2)]
        await shared.aclose()
        return kinds

    kinds = asyncio.run(run())
    assert all(kind is not None and kind.value in {"unreachable", "endpoint"} for kind in kinds)
    assert counted.asked == {QUERY: 2}  # sent again: the endpoint may be back
