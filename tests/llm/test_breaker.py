"""Endpoints that die, hang or give no usable reply: refused connections, TLS failures and
silent servers open the endpoint's circuit breaker after a few failures in a row, and 5xx,
redirects and pages that are not JSON after a few more, so a dead judge or a gateway with
nothing behind it costs seconds, not minutes of retries; a server that answers with the API's
replies (even 429s and 400s) never opens it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from graphrag_eval.errors import CallFailed, LLMError
from graphrag_eval.evaluation.services import build_engine
from graphrag_eval.llm.client import BREAKER_FAILURES, BREAKER_UNUSABLE
from graphrag_eval.llm.engine import LLMEngine
from graphrag_eval.metrics.loading import load_config

from judge_server import Faults, JudgeServer, SilentServer, closed_port_url


def judge_at(url: str, **llm: Any) -> dict[str, Any]:
    """Only a judge at ``url``, no cache, 1 ms backoff."""
    return {
        "llm": {
            "generation": {"provider": "openai-compatible", "base_url": url},
            "cache": {"enabled": False},
            "backoff_initial_s": 0.001,
            **llm,
        }
    }


def ask_many(config: dict[str, Any], calls: int) -> tuple[list[Any], LLMEngine]:
    """``calls`` distinct judge calls at once through a fresh engine: each reply or error."""

    async def main() -> tuple[list[Any], LLMEngine]:
        engine = build_engine(load_config(config))
        assert engine is not None

        async def one(i: int) -> Any:
            messages = [{"role": "user", "content": f"Say anything ({i})."}]
            try:
                return await engine.judge(messages, str, metric="m")
            except LLMError as error:
                return error

        try:
            return list(await asyncio.gather(*(one(i) for i in range(calls)))), engine
        finally:
            await engine.aclose()

    return asyncio.run(main())


def test_refused_connections_open_the_breaker_after_a_few_requests() -> None:
    url = closed_port_url()

    errors, engine = ask_many(judge_at(url, max_concurrency=1, max_retries=6), calls=4)

    # The first call's retries open the breaker; no later call makes a request.
    assert engine.stats.requests == BREAKER_FAILURES
    assert all(isinstance(error, CallFailed) for error in errors)
    reason = str(errors[0])
    assert reason.startswith(f"judge at {url} unreachable (connection failed: ")
    assert reason.endswith(
        f"{BREAKER_FAILURES} failures in a row): no more calls to it in this run"
    )
    assert {str(error) for error in errors} == {reason}
    assert engine.incomplete_reasons() == [reason]


def test_a_server_that_never_answers_is_given_up_after_its_timeouts() -> None:
    with SilentServer() as silent:
        config = judge_at(silent.url, timeout_s=0.3, max_retries=0, max_concurrency=2)

        errors, engine = ask_many(config, calls=12)

        connections = silent.connections
    assert all(isinstance(error, CallFailed) for error in errors)
    # Each hung request let go of its slot at its timeout, so the calls queued behind it ran
    # and timed out in turn, until the breaker opened.
    assert str(errors[0]) == "generation call failed: timed out after 0.3 s (1 attempt)"
    assert str(errors[-1]).startswith(f"judge at {silent.url} unreachable (timed out after 0.3 s")
    assert BREAKER_FAILURES <= engine.stats.requests <= BREAKER_FAILURES + 1
    assert connections == engine.stats.requests


def test_a_reply_that_trickles_in_is_cut_off_at_the_deadline() -> None:
    # One byte every 50 ms: no read ever waits the 0.3 s read timeout, so only the deadline
    # around the whole request (connect + read timeout) ends it.
    with SilentServer(trickle_s=0.05) as trickling:
        config = judge_at(
            trickling.url, timeout_s=0.3, connect_timeout_s=0.2, max_retries=0, max_concurrency=1
        )

        errors, engine = ask_many(config, calls=3)

    assert [str(error) for error in errors] == [
        "generation call failed: timed out after 0.3 s (1 attempt)"
    ] * 3
    assert engine.stats.requests == 3  # each let go of its slot for the next


def test_tls_to_a_plain_http_server_fails_as_unreachable(server: JudgeServer) -> None:
    url = server.url.replace("http://", "https://")

    errors, _ = ask_many(judge_at(url, max_retries=0, max_concurrency=1), calls=BREAKER_FAILURES)

    assert "connection failed: " in str(errors[0])
    assert "SSL" in str(errors[0])
    assert str(errors[-1]).startswith(f"judge at {url} unreachable")
    assert server.count() == 0  # no HTTP request ever reached it


def test_a_few_server_errors_in_a_row_do_not_open_the_breaker(judge: Any) -> None:
    server = judge(faults=Faults(server_error=1.0))

    errors, engine = ask_many(
        judge_at(server.url, max_retries=0, max_concurrency=1), calls=BREAKER_UNUSABLE - 1
    )

    assert server.count() == BREAKER_UNUSABLE - 1  # every call is made
    assert all("500" in str(error) for error in errors)
    assert engine.incomplete_reasons() == []


def test_server_errors_on_a_share_of_requests_never_open_the_breaker(judge: Any) -> None:
    server = judge(faults=Faults(server_error=0.3), seed=2)

    errors, engine = ask_many(judge_at(server.url, max_concurrency=4), calls=60)

    # More server errors in all than the breaker takes in a row, each call answered at last.
    assert server.count(outcome="server_error") > BREAKER_UNUSABLE
    assert not any(isinstance(error, LLMError) for error in errors)
    assert engine.incomplete_reasons() == []


@pytest.mark.parametrize(
    ("faults", "what"),
    [
        (Faults(bad_gateway=1.0), "502 Error code: 502"),
        (Faults(html=1.0), "the judge's reply is not a chat completion (not JSON): b'<html>"),
        (Faults(redirect=1.0), "302 Error code: 302 - redirected to http://127.0.0.1:9/login"),
    ],
)
def test_unusable_replies_in_a_row_open_the_breaker(judge: Any, faults: Faults, what: str) -> None:
    server = judge(faults=faults)

    errors, engine = ask_many(judge_at(server.url, max_retries=6, max_concurrency=1), calls=12)

    # The first calls' attempts (a redirect is not retried) open the breaker; no later call
    # makes a request.
    assert server.count() == BREAKER_UNUSABLE
    reason = f"judge at {server.url} gives no usable reply ({what}"
    assert all(isinstance(error, CallFailed) for error in errors)
    assert str(errors[-1]).startswith(reason)
    assert str(errors[-1]).endswith(
        f"; {BREAKER_UNUSABLE} requests in a row): no more calls to it in this run"
    )
    [unusable] = engine.incomplete_reasons()
    assert unusable.startswith(reason)


def test_connect_and_read_timeouts_are_set_apart(server: JudgeServer) -> None:
    config = judge_at(server.url, timeout_s=42, connect_timeout_s=3)
    engine = build_engine(load_config(config))
    assert engine is not None and engine.generation is not None

    timeouts = engine.generation.client.timeouts

    assert (timeouts.connect, timeouts.read) == (3, 42)
    asyncio.run(engine.aclose())


@pytest.mark.parametrize("timeout_s", [0.0, -1])
def test_timeouts_must_be_positive(timeout_s: float) -> None:
    with pytest.raises(Exception, match="connect_timeout_s"):
        load_config(judge_at("http://127.0.0.1:1/v1", connect_timeout_s=timeout_s))
