"""The engine's own HTTP client for OpenAI-compatible endpoints (``llm/wire.py``) and the
SDK's client it stands beside (Azure): what reaches the server, errors worded alike through
either, the environment's proxy and base URL, replies too large to read."""

from __future__ import annotations

import asyncio
import base64
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from graphrag_eval.errors import CallFailed, LLMError
from graphrag_eval.evaluation.services import build_engine
from graphrag_eval.llm import wire
from graphrag_eval.metrics.loading import load_config

from builders import through_proxy
from judge_server import Faults, JudgeServer, closed_port_url


def ask(config: dict[str, Any]) -> Any:
    """One judge call through a fresh engine: the reply, or the error it raised."""

    async def main() -> Any:
        engine = build_engine(load_config(config))
        assert engine is not None
        try:
            messages = [{"role": "user", "content": "Say anything."}]
            return (await engine.judge(messages, str, metric="m")).text
        except LLMError as error:
            return error
        finally:
            await engine.aclose()

    return asyncio.run(main())


def config_of(settings: dict[str, Any], **llm: Any) -> dict[str, Any]:
    return {
        "llm": {
            "generation": {"model": "gpt-4o-mini", **settings},
            "cache": {"enabled": False},
            "backoff_initial_s": 0.001,
            **llm,
        }
    }


def test_a_request_carries_the_key_the_headers_and_the_parameters(
    server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-42")
    settings = {
        "provider": "openai-compatible",
        "base_url": server.url,
        "api_key": "sk-test-key-123",
        "extra_headers": {"X-Trace": "trace-7"},
        "extra_query": {"tag": "nightly"},
        "top_k": 5,
        "extra_body": {"min_p": 0.1},
    }

    reply = ask(config_of(settings))

    assert isinstance(reply, str) and reply
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.query == "tag=nightly"
    assert request.headers["authorization"] == "Bearer sk-test-key-123"
    assert request.headers["x-trace"] == "trace-7"
    assert request.headers["openai-organization"] == "org-42"
    assert request.headers["content-type"] == "application/json"
    assert request.body["model"] == "gpt-4o-mini"
    assert request.body["messages"] == [{"role": "user", "content": "Say anything."}]
    assert (request.body["top_k"], request.body["min_p"]) == (5, 0.1)
    assert not {"extra_headers", "extra_query", "extra_body"} & set(request.body)


def test_without_a_base_url_the_sdk_default_is_taken_from_the_environment(
    server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-456")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)

    reply = ask(config_of({"provider": "openai"}))

    assert isinstance(reply, str) and reply
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env-456"


def test_azure_goes_through_the_sdk_with_its_deployment_path_and_key(
    server: JudgeServer,
) -> None:
    root = server.url.removesuffix("/v1")
    settings = {
        "provider": "azure",
        "base_url": root,
        "api_key": "az-key-789",
        "api_version": "2024-06-01",
    }

    reply = ask(config_of(settings))

    assert isinstance(reply, str) and reply
    (request,) = server.requests
    assert request.path == "/openai/deployments/gpt-4o-mini/chat/completions"
    assert request.query == "api-version=2024-06-01"
    assert request.headers["api-key"] == "az-key-789"


@pytest.mark.parametrize("provider", ["openai-compatible", "azure"])
def test_errors_read_the_same_through_either_client(judge: Any, provider: str) -> None:
    limited = judge(faults=Faults(rate_limit=1.0))

    refused = ask(endpoint_config(provider, limited.url, max_retries=1))
    unreachable = ask(endpoint_config(provider, closed_port_url(), max_retries=0))

    assert str(refused) == (
        "generation call failed: 429 Error code: 429 - Rate limit reached (2 attempts)"
    )
    assert limited.count() == 2
    assert str(unreachable).startswith("generation call failed: connection failed: ")


def endpoint_config(provider: str, url: str, **llm: Any) -> dict[str, Any]:
    """A judge of ``provider`` at the test server's ``url`` (Azure's at its root)."""
    base = url.removesuffix("/v1") if provider == "azure" else url
    return config_of({"provider": provider, "base_url": base, "api_key": "k-1"}, **llm)


def test_the_environment_proxy_is_used_unless_no_proxy_names_the_host(
    server: JudgeServer,
    dead_proxy: tuple[str, list[int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proxy, connections = dead_proxy
    for name, value in through_proxy(proxy).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    settings = {"provider": "openai-compatible", "base_url": server.url}

    through = ask(config_of(settings, max_retries=0))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    direct = ask(config_of(settings, max_retries=0))

    assert isinstance(through, CallFailed) and "connection failed" in str(through)
    assert len(connections) == 1
    assert isinstance(direct, str) and direct
    assert server.count() == 1


@contextmanager
def chunked_server(chunks: int, size: int) -> Iterator[str]:
    """A server whose every reply is a chat completion's worth of ``chunks`` chunks of
    ``size`` bytes, with no Content-Length (``Transfer-Encoding: chunked``)."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        with connection:
            connection.recv(65536)
            head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            try:
                connection.sendall(head)
                for _ in range(chunks):
                    connection.sendall(b"%x\r\n%s\r\n" % (size, b" " * size))
                connection.sendall(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading at its limit and closed the connection

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        listener.close()
        thread.join(timeout=5)


def test_a_reply_over_the_size_limit_is_refused(
    server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wire, "MAX_REPLY_BYTES", 200)  # a judge reply is a few hundred bytes
    settings = {"provider": "openai-compatible", "base_url": server.url}

    announced = ask(config_of(settings))  # the server sends its Content-Length
    with chunked_server(chunks=8, size=64) as url:
        streamed = ask(config_of({**settings, "base_url": url}))

    assert isinstance(announced, CallFailed)
    assert str(announced) == "the endpoint's reply is larger than 200 bytes"
    assert isinstance(streamed, CallFailed)
    assert str(streamed) == "the endpoint's reply is larger than 200 bytes"


def test_a_proxy_is_found_once_per_endpoint_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        for variable in (name, name.lower()):
            monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("ALL_PROXY", "http://all.internal:3128")
    monkeypatch.setenv("NO_PROXY", "llm.internal")
    timeouts = wire.Timeouts(connect=1, read=1)

    assert wire.WireClient("https://api.example/v1", None, timeouts)._proxy == (
        "http://proxy.internal:3128"
    )
    assert wire.WireClient("http://api.example/v1", None, timeouts)._proxy == (
        "http://all.internal:3128"
    )
    assert wire.WireClient("http://llm.internal/v1", None, timeouts)._proxy is None


class _Moved(BaseHTTPRequestHandler):
    """Answers every request with a redirect to the same path elsewhere."""

    target = ""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(301)
        self.send_header("Location", self.target + self.path)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


def test_a_redirect_is_not_followed_and_says_where_it_points(server: JudgeServer) -> None:
    handler = type("Moved", (_Moved,), {"target": server.url.removesuffix("/v1")})
    moved = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=moved.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{moved.server_address[1]}/v1"
    try:
        error = ask(config_of({"provider": "openai-compatible", "base_url": url, "api_key": "k"}))
    finally:
        moved.shutdown()
        moved.server_close()

    assert isinstance(error, CallFailed)
    assert str(error) == (
        "generation call failed: 301 Error code: 301 - redirected to "
        f"{server.url}/chat/completions: set base_url to where it points"
    )
    assert server.count() == 0  # the key never went to where it pointed


def test_credentials_in_the_base_url_are_sent_as_basic_authentication(
    server: JudgeServer,
) -> None:
    with_credentials = server.url.replace("http://", "http://ju%40dge:s3cr%3At@")

    reply = ask(config_of({"provider": "openai-compatible", "base_url": with_credentials}))

    assert isinstance(reply, str) and reply
    (request,) = server.requests
    assert request.headers["authorization"] == "Basic " + base64.b64encode(b"ju@dge:s3cr:t").decode(
        "ascii"
    )
