"""The adaptive concurrency limit of an endpoint's lane (AIMD): it starts low and doubles each
round until the first 429; a 429 lowers it (x 0.75) once per wave,
replies while calls wait raise it by about one slot per round, slower above the ceiling; and
against a server that answers 429 above a concurrency cap, a run gets few 429s."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from graphrag_eval.config import load_config
from graphrag_eval.config.llm import LLMConfig
from graphrag_eval.errors import LLMError
from graphrag_eval.llm.engine import LLMEngine, build_engine
from graphrag_eval.llm.lane import DECREASE_FACTOR, INITIAL_LIMIT, PROBE_ROUNDS, Lane, Ticket

from judge_server import Faults, JudgeServer


def lane(max_concurrency: int) -> Lane:
    return Lane(LLMConfig(max_concurrency=max_concurrency))


def test_the_limit_starts_low_or_at_max_concurrency() -> None:
    assert lane(32).limit == pytest.approx(INITIAL_LIMIT)
    assert lane(4).limit == pytest.approx(4)


def test_before_any_429_each_reply_adds_a_slot_while_calls_wait() -> None:
    async def main() -> float:
        slots = lane(32)
        async with contextlib.AsyncExitStack() as held:
            for _ in range(INITIAL_LIMIT):
                await held.enter_async_context(slots.slot(1))
            waiting = await _waiting_call(slots, calls=2 * INITIAL_LIMIT)
            for _ in range(INITIAL_LIMIT):  # one round of replies: doubled
                slots.succeeded()
            limit = slots.limit
        await waiting
        return limit

    assert asyncio.run(main()) == pytest.approx(2 * INITIAL_LIMIT)


def test_a_429_lowers_the_limit_once_per_wave() -> None:
    slots = lane(32)
    slots.limit = 32
    sent_together = [Ticket(0)] * 24

    for ticket in sent_together:
        slots.rate_limited(ticket)

    assert slots.limit == pytest.approx(32 * DECREASE_FACTOR)
    slots.rate_limited(Ticket(1))  # a request sent after the decrease: news
    assert slots.limit == pytest.approx(32 * DECREASE_FACTOR**2)


def test_the_limit_never_drops_below_one() -> None:
    slots = lane(4)  # starts at 4
    for wave in range(10):
        slots.rate_limited(Ticket(wave))
    assert slots.limit == pytest.approx(1)
    assert slots.lowest_limit == pytest.approx(1)


async def _waiting_call(slots: Lane, calls: int = 1) -> asyncio.Future[list[None]]:
    """``calls`` calls queued for a slot (so replies raise the limit)."""

    async def call() -> None:
        async with slots.slot(1):
            pass

    tasks = asyncio.gather(*(call() for _ in range(calls)))
    await asyncio.sleep(0)
    return tasks


def test_replies_raise_the_limit_by_about_one_per_round_while_calls_wait() -> None:
    async def main() -> tuple[float, float]:
        slots = lane(32)
        slots.limit = 32
        slots.rate_limited(Ticket(0))
        slots.rate_limited(Ticket(1))  # 18, below a ceiling of 24
        async with contextlib.AsyncExitStack() as held:
            for _ in range(int(slots.limit)):
                await held.enter_async_context(slots.slot(1))
            waiting = await _waiting_call(slots, calls=8)
            before = slots.limit
            for _ in range(round(before)):  # one round of replies
                slots.succeeded()
            after = slots.limit
        await waiting
        return before, after

    before, after = asyncio.run(main())

    assert before == pytest.approx(32 * DECREASE_FACTOR**2)
    assert after == pytest.approx(before + 1, abs=0.1)


def test_replies_raise_the_limit_slower_near_the_ceiling() -> None:
    async def main() -> float:
        slots = lane(4)
        slots.rate_limited(Ticket(0))  # ceiling 4, limit 2
        slots.limit = 3.5
        async with slots.slot(1), slots.slot(1), slots.slot(1):
            waiting = await _waiting_call(slots)
            slots.succeeded()
            after = slots.limit
        await waiting
        return after

    assert asyncio.run(main()) == pytest.approx(3.5 + 1 / (3.5 * PROBE_ROUNDS))


def test_replies_without_calls_waiting_leave_the_limit_alone() -> None:
    slots = lane(32)
    slots.rate_limited(Ticket(0))
    for _ in range(100):
        slots.succeeded()
    assert slots.limit == pytest.approx(INITIAL_LIMIT * DECREASE_FACTOR)


def run_calls(config: dict[str, Any], calls: int) -> tuple[int, LLMEngine]:
    """``calls`` distinct judge calls at once; how many failed, and the closed engine."""

    async def main() -> tuple[int, LLMEngine]:
        engine = build_engine(load_config(config))
        assert engine is not None

        async def one(i: int) -> bool:
            messages = [{"role": "user", "content": f"Say anything ({i})."}]
            try:
                await engine.judge(messages, str, metric="m")
            except LLMError:
                return False
            return True

        try:
            done = await asyncio.gather(*(one(i) for i in range(calls)))
        finally:
            await engine.aclose()
        return done.count(False), engine

    return asyncio.run(main())


def test_a_concurrency_cap_costs_few_429s(judge: Any) -> None:
    server: JudgeServer = judge(latency_s=0.01, faults=Faults(max_in_flight=4, retry_after_ms=5))
    config = {
        "llm": {
            "generation": {"provider": "openai-compatible", "base_url": server.url},
            "cache": {"enabled": False},
            "max_concurrency": 16,
            "max_retries": 10,
        }
    }

    failed, engine = run_calls(config, calls=300)

    assert failed == 0
    rejected = server.count(outcome="over_capacity")
    # At a fixed 16 in flight, three in four requests would get a 429.
    assert 0 < rejected < 0.2 * server.count()
    assert engine.generation is not None
    assert engine.generation.lane.lowest_limit < INITIAL_LIMIT  # it came down
