"""A request's deadline from the endpoint's latencies (docs/llm.md, what the engine does with
each call): once replies came back, a request that takes far longer than they did (a hung
one) is abandoned and retried, not left to hold its slot for the whole read timeout; the
last attempt has the configured timeouts; abandoned requests never open the breaker."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from graphrag_eval.config.llm import LLMConfig
from graphrag_eval.errors import LLMError
from graphrag_eval.evaluation.runner import evaluate
from graphrag_eval.evaluation.services import build_engine
from graphrag_eval.llm.client import BREAKER_FAILURES
from graphrag_eval.llm.engine import LLMEngine
from graphrag_eval.llm.lane import (
    DEADLINE_FACTOR,
    DEADLINE_FLOOR_S,
    LATENCY_SAMPLES,
    Lane,
    Ticket,
)
from graphrag_eval.metrics.loading import load_config

from builders import dataset, question, response
from judge_server import Faults, JudgeServer

MARKER = "HANG-THIS-ONE"
TIMEOUT_S = 20.0
"""The configured read timeout: far above the deadline the replies of the test server give
(they take milliseconds, so the deadline is its floor)."""


def lane_with_latencies(*latencies: float) -> Lane:
    lane = Lane(LLMConfig())
    for latency in latencies:
        lane.succeeded(Ticket(0, 1), latency)
    return lane


def test_until_enough_replies_came_back_a_request_has_the_configured_timeouts() -> None:
    lane = lane_with_latencies(*[0.1] * (LATENCY_SAMPLES - 1))
    assert lane.deadline_s(60.0, abandoned=0, last=False) == pytest.approx(60.0)


def test_the_deadline_follows_the_latencies_with_a_floor() -> None:
    fast = lane_with_latencies(*[0.01] * LATENCY_SAMPLES)
    assert fast.deadline_s(60.0, abandoned=0, last=False) == pytest.approx(DEADLINE_FLOOR_S)

    # 95 replies in 1 s and 5 in 2 s: the 95th percentile is 1 s.
    slow = lane_with_latencies(*[1.0] * 95, *[2.0] * 5)
    assert slow.deadline_s(60.0, abandoned=0, last=False) == pytest.approx(DEADLINE_FACTOR)


def test_each_abandoned_attempt_doubles_the_deadline_and_the_last_has_the_timeouts() -> None:
    lane = lane_with_latencies(*[1.0] * LATENCY_SAMPLES)
    first = lane.deadline_s(60.0, abandoned=0, last=False)

    assert lane.deadline_s(60.0, abandoned=1, last=False) == pytest.approx(2 * first)
    assert lane.deadline_s(60.0, abandoned=5, last=False) == pytest.approx(60.0)  # capped
    assert lane.deadline_s(60.0, abandoned=0, last=True) == pytest.approx(60.0)


def judge_config(server: JudgeServer, **llm: Any) -> dict[str, Any]:
    return {
        "llm": {
            "generation": {"provider": "openai-compatible", "base_url": server.url},
            "cache": {"enabled": False},
            "backoff_initial_s": 0.001,
            "timeout_s": TIMEOUT_S,
            **llm,
        }
    }


async def warm_up(engine: LLMEngine) -> None:
    """Enough replies for the deadline to follow the latencies."""
    for i in range(LATENCY_SAMPLES + 5):
        await engine.judge([{"role": "user", "content": f"Warm up ({i})."}], str, metric="m")


def test_a_hung_request_is_abandoned_at_the_deadline_retried_and_the_item_scored(
    judge: Any,
) -> None:
    server: JudgeServer = judge(faults=Faults(hang_first=MARKER, hang_s=60))
    config = {
        **judge_config(server, max_retries=3),
        "answer_relevance": {"enabled": False},
        "retrieval_answer": {"enabled": False},
    }
    reference = dataset(question("q1", answer="OSLO T1, OSLO T2", text="Which transformers?"))
    responses = [response("q1", actual_answer=f"OSLO T1, OSLO T2 ({MARKER})")]

    async def main() -> tuple[list[dict[str, Any]], LLMEngine]:
        engine = build_engine(load_config(config))
        assert engine is not None
        try:
            await warm_up(engine)
            run = await evaluate(reference, responses, config, engine=engine)
        finally:
            await engine.aclose()
        return list(run.results), engine

    results, engine = asyncio.run(main())

    [result] = results
    assert "answer_eval_error" not in result
    assert result["answer_f1"] == pytest.approx(1.0)
    assert server.count(outcome="hang") == 1  # the first copy hung ...
    assert engine.generation is not None
    assert engine.generation.lane.abandoned >= 1  # ... was abandoned at the deadline ...
    assert engine.stats.retries >= 1  # ... and sent again


def test_a_request_sent_before_the_deadline_was_known_gets_it_when_it_is(judge: Any) -> None:
    """The first request hangs; the replies after it make the deadline known: it is
    abandoned then, not at the end of the configured timeouts."""
    server: JudgeServer = judge(faults=Faults(hang_first=MARKER, hang_s=60))
    config = judge_config(server, max_concurrency=4, max_retries=2)

    async def main() -> tuple[str, LLMEngine]:
        engine = build_engine(load_config(config))
        assert engine is not None
        try:
            hung = asyncio.create_task(
                engine.judge([{"role": "user", "content": MARKER}], str, metric="m")
            )
            while server.count(outcome="hang") == 0:  # sent with the configured timeouts
                await asyncio.sleep(0.01)
            await warm_up(engine)
            return await hung, engine
        finally:
            await engine.aclose()

    reply, engine = asyncio.run(main())

    assert reply
    assert engine.generation is not None
    assert engine.generation.lane.abandoned >= 1
    assert server.count(outcome="hang") == 1


def test_requests_abandoned_at_the_deadline_never_open_the_breaker(judge: Any) -> None:
    server: JudgeServer = judge(faults=Faults(hang_first=MARKER, hang_s=60))
    config = judge_config(server, max_concurrency=1, max_retries=2)
    hung = BREAKER_FAILURES + 1  # in a row: each of them hangs the first time

    async def main() -> tuple[list[Any], LLMEngine]:
        engine = build_engine(load_config(config))
        assert engine is not None
        try:
            await warm_up(engine)
            replies = []
            for i in range(hung):
                messages = [{"role": "user", "content": f"{MARKER} ({i})"}]
                try:
                    replies.append(await engine.judge(messages, str, metric="m"))
                except LLMError as error:
                    replies.append(error)
        finally:
            await engine.aclose()
        return replies, engine

    replies, engine = asyncio.run(main())

    assert not [reply for reply in replies if isinstance(reply, LLMError)]
    assert server.count(outcome="hang") == hung
    assert engine.generation is not None
    assert engine.generation.breaker.reason is None
    assert engine.generation.lane.abandoned >= hung
