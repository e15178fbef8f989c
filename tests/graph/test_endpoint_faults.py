"""The endpoint store against endpoints that misbehave (real HTTP servers on 127.0.0.1:
tests/graph/sparql_server.py, and the judge tests' hung and closed ports): retries, the
circuit breaker, a refusal, a page that is not results, a huge or endless reply, a reply that
never comes, an unreachable endpoint (docs/knowledge-graph.md, "An endpoint")."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest
from aiohttp import web

from graph.sparql_server import Received, ScriptedEndpoint, results, select_reply
from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.graph.endpoint import (
    RETRY_AFTER_MAX_S,
    EndpointStore,
    open_endpoint,
    retry_wait_s,
)
from graphrag_eval.graph.execution import Execution, ExecutionError
from graphrag_eval.llm.client import BREAKER_FAILURES, BREAKER_UNUSABLE
from graphrag_eval.llm.failures import StatusError

from judge_server import SilentServer, closed_port_url

T = TypeVar("T")
SELECT = "SELECT ?x WHERE { ?x ?p ?o }"


def run(
    handler: Callable[[Received], Awaitable[web.StreamResponse]],
    scenario: Callable[[EndpointStore, ScriptedEndpoint], Awaitable[T]],
    **settings: object,
) -> T:
    """``scenario`` with a store of an endpoint that answers with ``handler``."""

    async def main() -> T:
        async with ScriptedEndpoint(handler) as server:
            store = open_endpoint(SparqlConfig(endpoint=server.url, **settings))  # type: ignore[arg-type]
            try:
                return await scenario(store, server)
            finally:
                await store.aclose()

    return asyncio.run(main())


async def once(store: EndpointStore, server: ScriptedEndpoint) -> Execution:
    return await store.execute(SELECT)


def test_the_query_is_posted_as_a_form_asking_for_json_results() -> None:
    async def answer(received: Received) -> web.StreamResponse:
        return select_reply("a")

    async def scenario(store: EndpointStore, server: ScriptedEndpoint) -> Received:
        await store.execute(SELECT)
        return server.received[0]

    received = run(answer, scenario)

    assert received.form == {"query": SELECT}
    assert received.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert received.headers["Accept"].startswith("application/sparql-results+json")


def test_a_429_is_retried_after_what_retry_after_asks() -> None:
    async def answer(received: Received) -> web.StreamResponse:
        if received.number == 1:
            return web.Response(status=429, text="slow down", headers={"Retry-After": "0"})
        return select_reply("a", "b")

    async def scenario(store: EndpointStore, server: ScriptedEndpoint) -> tuple[Execution, int]:
        executed = await store.execute(SELECT)
        return executed, len(server.received)

    executed, requests = run(answer, scenario, retries=2)

    assert executed.ok, executed.error
    assert executed.results == results("a", "b")
    assert requests == 2


def test_a_5xx_after_its_retries_is_the_step_s_endpoint_error() -> None:
    async def answer(received: Received) -> web.StreamResponse:
        return web.Response(status=503, text="overloaded", headers={"Retry-After": "0"})

    async def scenario(store: EndpointStore, server: ScriptedEndpoint) -> tuple[Execution, int]:
        return await store.execute(SELECT), len(server.received)

    executed, requests = run(answer, scenario, retries=2)

    assert executed.error_kind is ExecutionError.ENDPOINT
    assert executed.error is not None
    assert "503" in executed.error and "overloaded" in executed.error
    assert "3 attempts" in executed.error
    assert requests == 3


def test_5xx_replies_in_a_row_open_the_breaker_and_later_queries_fail_at_once() -> None:
    async def answer(received: Received) -> web.StreamResponse:
        return web.Response(status=500, text="boom", headers={"Retry-After": "0"})

    async def scenario(
        store: EndpointStore, server: ScriptedEndpoint
    ) -> tuple[list[Execution], str | None, Execution, int, int]:
        failed = [await store.execute(SELECT) for _ in range(BREAKER_UNUSABLE)]
        sent = len(server.received)
        unusable = store.unusable
        later = await store.execute(SELECT)
        return failed, unusable, later, sent, len(server.received)

    failed, unusable, later, sent, sent_after = run(answer, scenario, retries=0)

    assert all(execution.error_kind is ExecutionError.ENDPOINT for execution in failed)
    assert unusable is not None
    assert "gives no usable reply" in unusable and "\n" not in unusable
    assert later.error_kind is ExecutionError.ENDPOINT
    assert later.error == unusable
    assert sent == BREAKER_UNUSABLE
    assert sent_after == sent  # nothing more was sent


def test_an_answer_in_between_keeps_the_breaker_closed() -> None:
    async def answer(received: Received) -> web.StreamResponse:
        if received.number % BREAKER_UNUSABLE == 0:
            return select_reply("a")
        return web.Response(status=500, text="boom")

    async def scenario(store: EndpointStore, server: ScriptedEndpoint) -> str | None:
        for _ in range(3 * BREAKER_UNUSABLE):
            await store.execute(SELECT)
        return store.unusable

    assert run(answer, scenario, retries=0) is None


def test_a_401_is_refused_and_makes_the_store_unusable() -> None:
    async def answer(received: Received) -> web.StreamResponse:
        return web.Response(status=401, text="Unauthorized")

    async def scenario(
        store: EndpointStore, server: ScriptedEndpoint
    ) -> tuple[Execution, str | None, Execution, int]:
        first = await store.execute(SELECT)
        unusable = store.unusable
        later = await store.execute(SELECT)
        return first, unusable, later, len(server.received)

    first, unusable, later, requests = run(answer, scenario, retries=3)

    assert first.error_kind is ExecutionError.REFUSED
    assert first.error is not None and "401" in first.error
    assert unusable == first.error
    assert later.error_kind is ExecutionError.ENDPOINT
    assert requests == 1  # neither retried nor sent again


def test_a_403_is_refused() -> None:
    async def answer(received: Received) -> web.StreamResponse:
        return web.Response(status=403, text="read access denied")

    executed = run(answer, once)

    assert executed.error_kind is ExecutionError.REFUSED
    assert executed.error is not None and "403" in executed.error


def test_a_404_says_the_endpoint_does_not_exist() -> None:
    async def answer(received: Received) -> web.StreamResponse:
        return web.Response(status=404, text="no repository grid")

    async def scenario(store: EndpointStore, server: ScriptedEndpoint) -> tuple[Execution, str]:
        return await store.execute(SELECT), server.url

    executed, url = run(answer, scenario)

    assert executed.error_kind is ExecutionError.ENDPOINT
    assert executed.error is not None
    assert url in executed.error and "does not exist" in executed.error


def test_an_html_page_is_an_endpoint_error_naming_its_content_type() -> None:
    async def answer(received: Received) -> web.StreamResponse:
        return web.Response(text="<html><body>Workbench</body></html>", content_type="text/html")

    executed = run(answer, once)

    assert executed.error_kind is ExecutionError.ENDPOINT
    assert executed.error is not None
    assert "not SPARQL results" in executed.error and "text/html" in executed.error
    assert "Workbench" in executed.error


def test_json_that_is_not_results_is_an_endpoint_error() -> None:
    async def answer(received: Received) -> web.StreamResponse:
        return web.json_response({"status": "ok"}, content_type="application/sparql-results+json")

    executed = run(answer, once)

    assert executed.error_kind is ExecutionError.ENDPOINT
    assert executed.error is not None and "not SPARQL results" in executed.error


def test_xml_results_are_read_as_json_results() -> None:
    xml = (
        '<?xml version="1.0"?><sparql xmlns="http://www.w3.org/2005/sparql-results#">'
        '<head><variable name="x"/></head><results><result><binding name="x">'
        "<literal>a</literal></binding></result></results></sparql>"
    )

    async def answer(received: Received) -> web.StreamResponse:
        return web.Response(text=xml, content_type="application/sparql-results+xml")

    executed = run(answer, once)

    assert executed.ok, executed.error
    assert executed.results == results("a")


def test_a_reply_announcing_more_than_max_result_bytes_is_too_large() -> None:
    async def answer(received: Received) -> web.StreamResponse:
        rows = [str(n) for n in range(10_000)]
        return select_reply(*rows)

    executed = run(answer, once, max_result_bytes=10_000)

    assert executed.error_kind is ExecutionError.TOO_LARGE


def test_an_endless_reply_is_read_only_up_to_max_result_bytes() -> None:
    """A reply without a length that never ends: reading stops past the limit."""
    sent = [0]

    async def endless(received: Received) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/sparql-results+json"})
        await response.prepare(received.request)
        await response.write(b'{"head": {"vars": ["x"]}, "results": {"bindings": [')
        row = json.dumps(results("a")["results"]["bindings"][0]).encode() + b","
        while True:  # until the client hangs up
            await response.write(row * 100)
            sent[0] += len(row) * 100

    executed = run(endless, once, max_result_bytes=100_000)

    assert executed.error_kind is ExecutionError.TOO_LARGE
    assert executed.error is not None and "100000 bytes" in executed.error


def test_a_reply_that_never_comes_is_the_step_s_timeout() -> None:
    async def scenario() -> tuple[Execution, str | None]:
        with SilentServer() as server:
            store = open_endpoint(SparqlConfig(endpoint=server.url, timeout_s=0.5))
            try:
                return await store.execute(SELECT), store.unusable
            finally:
                await store.aclose()

    executed, unusable = asyncio.run(scenario())

    assert executed.error_kind is ExecutionError.TIMEOUT
    assert executed.error == "the query ran longer than 0.5 s"
    assert unusable is None  # a slow query says nothing about the endpoint


def test_a_reply_that_trickles_in_is_the_step_s_timeout() -> None:
    async def scenario() -> Execution:
        with SilentServer(trickle_s=0.05) as server:
            store = open_endpoint(SparqlConfig(endpoint=server.url, timeout_s=0.5))
            try:
                return await store.execute(SELECT)
            finally:
                await store.aclose()

    assert asyncio.run(scenario()).error_kind is ExecutionError.TIMEOUT


def test_an_unreachable_endpoint_is_unreachable_and_then_unusable() -> None:
    async def scenario() -> tuple[list[Execution], str | None]:
        store = open_endpoint(SparqlConfig(endpoint=closed_port_url(), retries=0))
        try:
            executions = [await store.execute(SELECT) for _ in range(BREAKER_FAILURES + 1)]
            return executions, store.unusable
        finally:
            await store.aclose()

    executions, unusable = asyncio.run(scenario())

    first = executions[0]
    assert first.error_kind is ExecutionError.UNREACHABLE
    assert first.error is not None and "could not be reached" in first.error
    assert unusable is not None and "unreachable" in unusable
    assert executions[-1].error_kind is ExecutionError.ENDPOINT
    assert executions[-1].error == unusable


def test_a_query_error_does_not_count_against_the_endpoint() -> None:
    async def answer(received: Received) -> web.StreamResponse:
        return web.Response(status=400, text="Query evaluation error: unknown function")

    async def scenario(
        store: EndpointStore, server: ScriptedEndpoint
    ) -> tuple[Execution, str | None]:
        executions = [await store.execute(SELECT) for _ in range(BREAKER_UNUSABLE + 1)]
        return executions[-1], store.unusable

    executed, unusable = run(answer, scenario, retries=0)

    assert executed.error_kind is ExecutionError.QUERY
    assert executed.error is not None and "unknown function" in executed.error
    assert unusable is None


def test_a_redirect_is_not_followed() -> None:
    async def answer(received: Received) -> web.StreamResponse:
        return web.Response(status=302, headers={"Location": "http://elsewhere.invalid/login"})

    async def scenario(store: EndpointStore, server: ScriptedEndpoint) -> tuple[Execution, int]:
        return await store.execute(SELECT), len(server.received)

    executed, requests = run(answer, scenario)

    assert executed.error_kind is ExecutionError.ENDPOINT
    assert executed.error is not None and "http://elsewhere.invalid/login" in executed.error
    assert requests == 1


def test_an_update_is_never_sent() -> None:
    async def answer(received: Received) -> web.StreamResponse:
        return select_reply()

    async def scenario(store: EndpointStore, server: ScriptedEndpoint) -> tuple[Execution, int]:
        executed = await store.execute("INSERT DATA { <urn:a> <urn:b> <urn:c> }")
        return executed, len(server.received)

    executed, requests = run(answer, scenario)

    assert executed.error_kind is ExecutionError.UPDATE_REFUSED
    assert requests == 0


def test_no_more_queries_are_in_flight_than_the_concurrency_limit() -> None:
    """The server holds each request until its pair has arrived (the 1st and 2nd, the 3rd
    and 4th, ...): a third request in flight would be seen."""

    async def main() -> tuple[int, list[bool]]:
        arrived = asyncio.Condition()

        async def held(received: Received) -> web.StreamResponse:
            pair_complete = received.number + received.number % 2
            async with arrived:
                arrived.notify_all()
                await arrived.wait_for(lambda: len(server.received) >= pair_complete)
            return select_reply("a")

        async with ScriptedEndpoint(held) as server:
            store = open_endpoint(SparqlConfig(endpoint=server.url, concurrency=2))
            try:
                executions = await asyncio.gather(*(store.execute(SELECT) for _ in range(6)))
            finally:
                await store.aclose()
        return server.max_in_flight, [execution.ok for execution in executions]

    assert asyncio.run(main()) == (2, [True] * 6)


def test_the_proxy_the_environment_names_is_used(
    monkeypatch: pytest.MonkeyPatch, dead_proxy: tuple[str, list[int]]
) -> None:
    url, connections = dead_proxy
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", url)

    async def scenario() -> Execution:
        store = open_endpoint(SparqlConfig(endpoint="http://graph.invalid/sparql", retries=0))
        try:
            return await store.execute(SELECT)
        finally:
            await store.aclose()

    executed = asyncio.run(scenario())

    assert executed.error_kind is ExecutionError.UNREACHABLE
    assert connections  # it went to the proxy, nowhere else


def test_a_query_the_endpoint_stopped_at_its_own_time_limit_is_a_timeout() -> None:
    """Fuseki's 503 for a cancelled query (and a gateway's 504): neither retried nor
    counted against the endpoint, however many come in a row."""

    async def answer(received: Received) -> web.StreamResponse:
        if received.number % 2:
            return web.Response(status=503, text="Query cancelled: query timeout exceeded")
        return web.Response(status=504, text="upstream did not answer")

    async def scenario(
        store: EndpointStore, server: ScriptedEndpoint
    ) -> tuple[list[Execution], str | None, int]:
        executions = [await store.execute(SELECT) for _ in range(BREAKER_UNUSABLE + 2)]
        return executions, store.unusable, len(server.received)

    executions, unusable, requests = run(answer, scenario, retries=3)

    assert {execution.error_kind for execution in executions} == {ExecutionError.TIMEOUT}
    assert executions[0].error is not None and "Query cancelled" in executions[0].error
    assert executions[1].error is not None and "504" in executions[1].error
    assert unusable is None
    assert requests == BREAKER_UNUSABLE + 2


def test_json_results_keep_only_what_the_format_has() -> None:
    reply = {
        "head": {"vars": ["x", {"nested": 1}], "extra": "dropped"},
        "results": {
            "bindings": [
                {"x": {"type": "literal", "value": "a", "xml:lang": "en", "junk": [[[1]]]}},
                {"x": {"type": "uri", "value": "http://a", "datatype": ["not", "text"]}},
            ],
            "distinct": False,
        },
        "injected": "x" * 1000,
    }

    async def answer(received: Received) -> web.StreamResponse:
        return web.json_response(reply, content_type="application/sparql-results+json")

    executed = run(answer, once)

    assert executed.results == {
        "head": {"vars": ["x"]},
        "results": {
            "bindings": [
                {"x": {"type": "literal", "value": "a", "xml:lang": "en"}},
                {"x": {"type": "uri", "value": "http://a"}},
            ]
        },
    }


def test_a_cell_that_is_not_a_term_is_an_endpoint_error() -> None:
    reply = {"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "uri"}}]}}

    async def answer(received: Received) -> web.StreamResponse:
        return web.json_response(reply, content_type="application/sparql-results+json")

    executed = run(answer, once)

    assert executed.error_kind is ExecutionError.ENDPOINT
    assert executed.error is not None and "malformed" in executed.error


@pytest.mark.parametrize(
    ("retry_after", "low", "high"),
    [("0", 0.0, 0.05), ("2", 2.0, 2.05), ("3600", RETRY_AFTER_MAX_S, RETRY_AFTER_MAX_S + 0.05)],
)
def test_retry_after_is_honoured_within_reason(retry_after: str, low: float, high: float) -> None:
    asked = StatusError(429, "429 Too Many Requests", "", {"retry-after": retry_after})

    assert low <= retry_wait_s(asked, 1) <= high


def test_without_retry_after_the_wait_doubles_up_to_a_ceiling() -> None:
    waits = [retry_wait_s(StatusError(503, "503", "", {}), attempt) for attempt in (1, 2, 3, 9)]

    assert 0.25 <= waits[0] <= 0.5
    assert 0.5 <= waits[1] <= 1.0
    assert 1.0 <= waits[2] <= 2.0
    assert 4.0 <= waits[3] <= 8.0


def test_a_query_that_cannot_be_encoded_is_its_step_s_error_and_is_not_sent() -> None:
    async def answer(received: Received) -> web.StreamResponse:
        return select_reply("a")

    async def scenario(store: EndpointStore, server: ScriptedEndpoint) -> tuple[Execution, int]:
        executed = await store.execute('SELECT * WHERE { ?s ?p "\ud800" }')
        return executed, len(server.received)

    executed, requests = run(answer, scenario)

    assert executed.error_kind is ExecutionError.QUERY
    assert requests == 0


def test_a_long_error_page_is_shown_by_its_start() -> None:
    async def answer(received: Received) -> web.StreamResponse:
        return web.Response(status=500, text="Repository grid is offline. " + "x" * 100_000)

    executed = run(answer, once, retries=0)

    assert executed.error is not None and "Repository grid is offline" in executed.error
    assert len(executed.error) < 500
