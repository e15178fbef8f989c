"""Federated queries (``SERVICE``): a store never calls another endpoint unless the user
allowed it (docs/knowledge-graph.md, "Read-only, limits and timeouts"): the embedded store
never, an endpoint only those of ``sparql.allowed_services``."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web

from graph.sparql_server import Received, ScriptedEndpoint, select_reply
from graphrag_eval.config import parse_config
from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.errors import ConfigError
from graphrag_eval.graph.endpoint import open_endpoint
from graphrag_eval.graph.execution import Execution, ExecutionError
from graphrag_eval.graph.readonly import service_refusal, service_targets

LABEL = "http://wikiba.se/ontology#label"
WIKIDATA_LABELS = (
    "PREFIX wikibase: <http://wikiba.se/ontology#>\n"
    "SELECT ?x ?xLabel WHERE { ?x ?p ?o . "
    'SERVICE wikibase:label { bd:serviceParam wikibase:language "en" } }'
)


@pytest.mark.parametrize(
    ("query", "targets"),
    [
        (
            "SELECT * { SERVICE <http://a.example/sparql> { ?s ?p ?o } }",
            ["http://a.example/sparql"],
        ),
        (WIKIDATA_LABELS, [LABEL]),
        ("SELECT * { service silent ?endpoint { ?s ?p ?o } }", ["?endpoint"]),
        (
            "SELECT * { \\u0053ERVICE <http://evil.example/> { ?s ?p ?o } }",
            ["http://evil.example/"],
        ),
        ("SELECT * { ?s ?p 'SERVICE <http://a.example/>' } # SERVICE <http://b.example/>", []),
        ("SELECT * { ?s <http://x.example/ont#SERVICE> ?o }", []),
        ("SELECT * { SERVICE", ["?"]),
    ],
)
def test_the_endpoints_a_query_would_call_are_read_from_it(query: str, targets: list[str]) -> None:
    assert service_targets(query) == targets


def test_only_allowed_services_pass() -> None:
    assert service_refusal(WIKIDATA_LABELS, [LABEL]) is None
    refusal = service_refusal(WIKIDATA_LABELS)
    assert refusal is not None and LABEL in refusal and "sparql.allowed_services" in refusal
    two = WIKIDATA_LABELS.replace("} }", "} SERVICE <http://other.example/> { ?a ?b ?c } }")
    assert "http://other.example/" in (service_refusal(two, [LABEL]) or "")


def _requests_for(query: str, allowed: list[str]) -> tuple[Execution, int]:
    async def answer(received: Received) -> web.StreamResponse:
        return select_reply("a")

    async def main() -> tuple[Execution, int]:
        async with ScriptedEndpoint(answer) as server:
            store = open_endpoint(SparqlConfig(endpoint=server.url, allowed_services=allowed))
            try:
                executed = await store.execute(query)
            finally:
                await store.aclose()
            return executed, len(server.received)

    return asyncio.run(main())


def test_an_endpoint_is_never_sent_a_service_it_was_not_allowed() -> None:
    executed, requests = _requests_for(WIKIDATA_LABELS, [])
    assert executed.error_kind is ExecutionError.QUERY
    assert (
        executed.error is not None and "SERVICE http://wikiba.se/ontology#label" in executed.error
    )
    assert requests == 0


def test_an_allowed_service_is_sent() -> None:
    executed, requests = _requests_for(WIKIDATA_LABELS, [LABEL])
    assert executed.ok and requests == 1


def test_allowed_services_apply_to_an_endpoint_only() -> None:
    with pytest.raises(ConfigError, match="allowed_services applies to an endpoint"):
        parse_config({"sparql": {"data": ["g.ttl"], "allowed_services": [LABEL]}})
