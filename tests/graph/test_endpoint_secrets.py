"""An endpoint's credentials (docs/security.md): read from the variables ``sparql.auth``
names when the store is opened, sent as basic or bearer authentication, and never in a
message, the store's identity or a step's execution record, even when the endpoint echoes
them back."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable

import pytest
from aiohttp import web

from graph.sparql_server import Received, ScriptedEndpoint, select_reply
from graphrag_eval.config.sparql import EndpointAuthConfig, SparqlConfig
from graphrag_eval.errors import ConfigError
from graphrag_eval.graph.endpoint import open_endpoint
from graphrag_eval.graph.execution import Execution, ExecutionError

from judge_server import echoed_authorization

TOKEN = "s3cr3t-t0ken-value"
USER = "grid-reader"
PASSWORD = "pa:ss w0rd/+="
SELECT = "SELECT ?x WHERE { ?x ?p ?o }"


def secret_forms_absent(text: str, *secrets: str) -> None:
    pair = f"{USER}:{PASSWORD}"
    forms = {*secrets, base64.b64encode(pair.encode()).decode(), pair}
    for form in forms:
        assert form not in text


def execute(
    handler: Callable[[Received], web.Response], auth: EndpointAuthConfig, path: str = "/sparql"
) -> tuple[Execution, str | None, str, list[Received]]:
    """One query through a store with ``auth``: its execution, why the store is unusable,
    the store's identity, and what the server received."""

    async def answer(received: Received) -> web.StreamResponse:
        return handler(received)

    async def main() -> tuple[Execution, str | None, str, list[Received]]:
        async with ScriptedEndpoint(answer, path=path) as server:
            store = open_endpoint(SparqlConfig(endpoint=server.url, auth=auth, retries=0))
            try:
                executed = await store.execute(SELECT)
            finally:
                await store.aclose()
            identity = json.dumps(store.identity.as_record())
            return executed, store.unusable, identity, server.received

    return asyncio.run(main())


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRID_TOKEN", TOKEN)
    monkeypatch.setenv("GRID_USER", USER)
    monkeypatch.setenv("GRID_PASSWORD", PASSWORD)


BEARER = EndpointAuthConfig(token_env="GRID_TOKEN")
BASIC = EndpointAuthConfig(username_env="GRID_USER", password_env="GRID_PASSWORD")


@pytest.mark.usefixtures("credentials")
def test_a_bearer_token_is_sent() -> None:
    executed, _, _, received = execute(lambda received: select_reply("a"), BEARER)

    assert executed.ok
    assert received[0].headers["Authorization"] == f"Bearer {TOKEN}"


@pytest.mark.usefixtures("credentials")
def test_basic_credentials_are_sent() -> None:
    executed, _, _, received = execute(lambda received: select_reply("a"), BASIC)

    scheme, _, encoded = received[0].headers["Authorization"].partition(" ")
    assert executed.ok
    assert (scheme, base64.b64decode(encoded).decode()) == ("Basic", f"{USER}:{PASSWORD}")


def echo_page(status: int) -> Callable[[Received], web.Response]:
    def answer(received: Received) -> web.Response:
        echo = echoed_authorization(received.headers["Authorization"])
        return web.Response(status=status, text=f"<html>{echo}</html>", content_type="text/html")

    return answer


@pytest.mark.parametrize("status", [401, 403, 500, 400, 200])
@pytest.mark.parametrize("auth", [BEARER, BASIC], ids=["bearer", "basic"])
@pytest.mark.usefixtures("credentials")
def test_credentials_echoed_by_the_endpoint_are_in_no_message(
    status: int, auth: EndpointAuthConfig
) -> None:
    executed, unusable, identity, _ = execute(echo_page(status), auth)

    assert executed.error is not None
    assert "***" in executed.error  # the echo is there, without the secret
    record = json.dumps(executed.as_record())
    for text in (executed.error, record, unusable or "", identity):
        secret_forms_absent(text, TOKEN, PASSWORD)


def test_a_query_string_secret_is_sent_but_never_shown() -> None:
    async def answer(received: Received) -> web.StreamResponse:
        return web.Response(status=500, text=f"bad request to {received.request.url}")

    async def main() -> tuple[Execution, str, str]:
        async with ScriptedEndpoint(answer) as server:
            url = server.url + "?infer=false&api_key=k3y-in-the-url"
            store = open_endpoint(SparqlConfig(endpoint=url, retries=0))
            try:
                executed = await store.execute(SELECT)
            finally:
                await store.aclose()
            return (
                executed,
                json.dumps(store.identity.as_record()),
                server.received[0].request.url.query_string,
            )

    executed, identity, sent = asyncio.run(main())

    assert sent == "infer=false&api_key=k3y-in-the-url"
    assert executed.error is not None
    for text in (executed.error, identity, executed.source):
        assert "k3y-in-the-url" not in text
    assert "infer=false" in identity


@pytest.mark.parametrize(
    ("auth", "missing"),
    [(BEARER, "GRID_TOKEN"), (BASIC, "GRID_PASSWORD")],
    ids=["bearer", "basic"],
)
def test_an_unset_variable_is_a_config_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, auth: EndpointAuthConfig, missing: str
) -> None:
    monkeypatch.setenv("GRID_USER", USER)
    monkeypatch.delenv(missing, raising=False)

    with pytest.raises(ConfigError) as raised:
        open_endpoint(SparqlConfig(endpoint="http://127.0.0.1:9/sparql", auth=auth))

    assert missing in str(raised.value)
    assert "sparql.auth" in str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.usefixtures("credentials")
def test_a_refusal_makes_the_store_unusable_with_a_one_line_reason() -> None:
    executed, unusable, _, _ = execute(echo_page(401), BEARER)

    assert executed.error_kind is ExecutionError.REFUSED
    assert unusable is not None and "\n" not in unusable


def test_a_credential_with_a_line_break_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRID_TOKEN", "abcd\r\nX-Injected: 1")

    with pytest.raises(ConfigError) as raised:
        open_endpoint(SparqlConfig(endpoint="http://127.0.0.1:9/sparql", auth=BEARER))

    assert "GRID_TOKEN" in str(raised.value)
    assert "abcd" not in str(raised.value)
