"""The endpoint store against the real Oxigraph server (tests/graph/oxigraph_server.py):
results as the embedded store gives them, ASK, CONSTRUCT as rows, errors of the query, the
row and size limits, read-only, identity (docs/knowledge-graph.md, "An endpoint")."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from graph.oxigraph_server import GRAPH, GRAPH_TRIPLES, OxigraphServer
from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.graph.embedded import load_embedded
from graphrag_eval.graph.endpoint import EndpointStore, open_endpoint
from graphrag_eval.graph.execution import Execution, ExecutionError
from graphrag_eval.graph.stores import open_store

PREFIXES = (
    "PREFIX ex: <http://example.org/grid#> PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> "
)
LABELS = PREFIXES + "SELECT ?s ?label WHERE { ?s a ex:Substation ; rdfs:label ?label } ORDER BY ?s"


def execute(config: SparqlConfig, *queries: str) -> list[Execution]:
    async def scenario() -> list[Execution]:
        store = open_endpoint(config)
        try:
            return list(await asyncio.gather(*(store.execute(query) for query in queries)))
        finally:
            await store.aclose()

    return asyncio.run(scenario())


def test_select_gives_the_rows_the_embedded_store_gives(
    oxigraph_server: OxigraphServer, tmp_path: Path
) -> None:
    data = tmp_path / "graph.ttl"
    data.write_text(GRAPH, encoding="utf-8")
    embedded = load_embedded(SparqlConfig(data=[str(data)])).execute_now(LABELS)

    [executed] = execute(SparqlConfig(endpoint=oxigraph_server.query_url), LABELS)

    assert executed.ok, executed.error
    assert executed.results == embedded.results
    assert executed.rows == 3
    assert executed.truncated is False
    assert executed.source == oxigraph_server.query_url
    bindings: Any = executed.results["results"]["bindings"]  # type: ignore[index]
    assert bindings[0]["label"] == {"type": "literal", "value": "North", "xml:lang": "en"}


def test_ask_gives_a_boolean(oxigraph_server: OxigraphServer) -> None:
    yes, no = execute(
        SparqlConfig(endpoint=oxigraph_server.query_url),
        PREFIXES + "ASK { ex:s1 a ex:Substation }",
        PREFIXES + "ASK { ex:s1 a ex:Line }",
    )

    assert yes.results == {"head": {}, "boolean": True}
    assert no.results == {"head": {}, "boolean": False}
    assert yes.rows is None


def test_construct_gives_subject_predicate_object_rows(oxigraph_server: OxigraphServer) -> None:
    [executed] = execute(
        SparqlConfig(endpoint=oxigraph_server.query_url),
        PREFIXES + "CONSTRUCT { ?l ex:from ?s } WHERE { ?l ex:from ?s }",
    )

    assert executed.ok, executed.error
    assert executed.results is not None
    assert executed.results["head"] == {"vars": ["s", "p", "o"]}
    rows = {
        (row["s"]["value"], row["p"]["value"], row["o"]["value"])
        for row in executed.results["results"]["bindings"]
    }
    grid = "http://example.org/grid#"
    assert rows == {
        (grid + "l1", grid + "from", grid + "s1"),
        (grid + "l2", grid + "from", grid + "s2"),
    }


def test_describe_gives_rows_too(oxigraph_server: OxigraphServer) -> None:
    [executed] = execute(
        SparqlConfig(endpoint=oxigraph_server.query_url), PREFIXES + "DESCRIBE ex:l1"
    )

    assert executed.ok, executed.error
    assert executed.rows == 4


def test_a_query_that_does_not_parse_is_a_syntax_error(oxigraph_server: OxigraphServer) -> None:
    [executed] = execute(SparqlConfig(endpoint=oxigraph_server.query_url), "SELEC * WHERE {}")

    assert executed.error_kind is ExecutionError.SYNTAX_ERROR
    assert executed.error is not None and "400" in executed.error
    assert executed.results is None


def test_more_rows_than_the_row_limit_are_cut_and_said_so(
    oxigraph_server: OxigraphServer,
) -> None:
    config = SparqlConfig(endpoint=oxigraph_server.query_url, row_limit=5)

    [executed] = execute(config, "SELECT * WHERE { ?s ?p ?o }")

    assert executed.ok
    assert executed.rows == 5
    assert executed.truncated is True
    assert len(executed.results["results"]["bindings"]) == 5  # type: ignore[index]
    assert executed.as_record()["truncated"] is True


def test_the_rows_within_the_limit_are_not_truncated(oxigraph_server: OxigraphServer) -> None:
    config = SparqlConfig(endpoint=oxigraph_server.query_url, row_limit=GRAPH_TRIPLES)

    [executed] = execute(config, "SELECT * WHERE { ?s ?p ?o }")

    assert (executed.rows, executed.truncated) == (GRAPH_TRIPLES, False)


def test_a_reply_larger_than_max_result_bytes_is_too_large(
    oxigraph_server: OxigraphServer,
) -> None:
    config = SparqlConfig(endpoint=oxigraph_server.query_url, max_result_bytes=200)

    [executed] = execute(config, "SELECT * WHERE { ?s ?p ?o }")

    assert executed.error_kind is ExecutionError.TOO_LARGE
    assert executed.error is not None and "200 bytes" in executed.error


def test_an_update_is_refused_and_the_graph_is_unchanged(
    oxigraph_server: OxigraphServer,
) -> None:
    config = SparqlConfig(endpoint=oxigraph_server.query_url)

    refused, count = execute(
        config,
        "DELETE WHERE { ?s ?p ?o }",
        "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }",
    )

    assert refused.error_kind is ExecutionError.UPDATE_REFUSED
    assert refused.error is not None and "DELETE" in refused.error
    assert count.results["results"]["bindings"][0]["n"]["value"] == str(GRAPH_TRIPLES)  # type: ignore[index]


def test_open_store_opens_the_endpoint_and_names_it(oxigraph_server: OxigraphServer) -> None:
    store = open_store(SparqlConfig(endpoint=oxigraph_server.query_url))

    assert isinstance(store, EndpointStore)
    assert store.identity.as_record() == {
        "kind": "endpoint",
        "label": oxigraph_server.query_url,
        "endpoint": oxigraph_server.query_url,
    }
    assert store.unusable is None


def test_the_store_serves_one_event_loop_after_another(oxigraph_server: OxigraphServer) -> None:
    store = open_endpoint(SparqlConfig(endpoint=oxigraph_server.query_url))

    async def once() -> Execution:
        try:
            return await store.execute(LABELS)
        finally:
            await store.aclose()

    first = asyncio.run(once())
    second = asyncio.run(once())

    assert first.ok and second.ok
    assert first.results == second.results


def test_many_queries_at_once_all_get_their_results(oxigraph_server: OxigraphServer) -> None:
    config = SparqlConfig(endpoint=oxigraph_server.query_url, concurrency=4)
    queries = [PREFIXES + f"ASK {{ ex:s{n % 5} a ex:Substation }}" for n in range(40)]

    executions = execute(config, *queries)

    answers = [execution.results["boolean"] for execution in executions]  # type: ignore[index]
    assert answers == [n % 5 in (1, 2, 3) for n in range(40)]


def test_a_server_that_goes_away_is_unreachable(
    start_oxigraph: Callable[[Mapping[str, str]], OxigraphServer],
) -> None:
    server = start_oxigraph({"graph.ttl": GRAPH})
    store = open_endpoint(SparqlConfig(endpoint=server.query_url, retries=1))

    async def scenario() -> tuple[Execution, Execution]:
        try:
            before = await store.execute(LABELS)
            server.stop()
            return before, await store.execute(LABELS)
        finally:
            await store.aclose()

    before, after = asyncio.run(scenario())

    assert before.ok
    assert after.error_kind is ExecutionError.UNREACHABLE
    assert after.error is not None and "2 attempts" in after.error
