"""The adaptive concurrency limit of an endpoint's lane (AIMD): it starts low and grows each
round until the first decrease; a 429 lowers it to below the level it came at (once per
wave) unless it is isolated (replies at that level mostly succeeded) or alone; replies while
calls wait raise it by about one slot per round, slower above the ceiling; against a server
that answers 429 above a concurrency cap, a run gets few 429s, and against one that answers
429 at random, it keeps its concurrency."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from graphrag_eval.config.llm import LLMConfig
from graphrag_eval.errors import LLMError
from graphrag_eval.evaluation.services import build_engine
from graphrag_eval.llm.engine import LLMEngine
from graphrag_eval.llm.lane import (
    DECREASE_FACTOR,
    INITIAL_LIMIT,
    LOWEST_FACTOR,
    PROBE_ROUNDS,
    SLOW_START_STEP,
    Lane,
    Ticket,
)
from graphrag_eval.metrics.loading import load_config

from judge_server import Faults, JudgeServer


def lane(max_concurrency: int) -> Lane:
    return Lane(LLMConfig(max_concurrency=max_concurrency))


def test_the_limit_starts_low_or_at_max_concurrency() -> None:
    assert lane(32).limit == pytest.approx(INITIAL_LIMIT)
    assert lane(4).limit == pytest.approx(4)


def test_before_any_decrease_each_reply_grows_the_limit_while_calls_wait() -> None:
    async def main() -> float:
        slots = lane(32)
        async with contextlib.AsyncExitStack() as held:
            for _ in range(INITIAL_LIMIT):
                await held.enter_async_context(slots.slot(1))
            waiting = await _waiting_call(slots, calls=2 * INITIAL_LIMIT)
            for _ in range(INITIAL_LIMIT):  # one round of replies
                slots.succeeded()
            limit = slots.limit
        await waiting
        return limit

    assert asyncio.run(main()) == pytest.approx(INITIAL_LIMIT * (1 + SLOW_START_STEP))


def test_a_request_s_ticket_holds_its_level() -> None:
    async def main() -> list[int]:
        slots = lane(8)
        async with slots.slot(1) as first, slots.slot(1) as second, slots.slot(1) as third:
            return [first.level, second.level, third.level]

    assert asyncio.run(main()) == [1, 2, 3]


def replies(slots: Lane, level: int, count: int, wave: int = 0) -> None:
    """``count`` replies to requests sent at ``level`` (no call waiting: the limit stays)."""
    for _ in range(count):
        slots.succeeded(Ticket(wave, level))


def one_429_in_ten(slots: Lane, level: int, rounds: int) -> None:
    """``rounds`` of nine replies and one 429 to requests sent at ``level``."""
    for _ in range(rounds):
        replies(slots, level=level, count=9)
        slots.rate_limited(Ticket(0, level))


def test_429s_above_the_level_where_replies_succeed_bring_the_limit_below_it() -> None:
    slots = lane(32)
    slots.limit = 10
    replies(slots, level=8, count=8)
    for level in (9, 10):  # a cap of 8: what was sent above it got 429s
        slots.rate_limited(Ticket(0, level))

    # Not x 0.75 or x 0.5 of 10: just below the first level that failed.
    assert slots.limit == pytest.approx(8)
    assert slots.ceiling == pytest.approx(9)


def test_a_decrease_takes_at_most_the_lowest_factor() -> None:
    slots = lane(32)
    slots.limit = 20
    replies(slots, level=8, count=8)
    for level in (9, 10):
        slots.rate_limited(Ticket(0, level))

    assert slots.limit == pytest.approx(20 * LOWEST_FACTOR)


def test_a_429_lowers_the_limit_once_per_wave() -> None:
    slots = lane(32)
    slots.limit = 32
    for _ in range(24):  # sent together, before the decrease
        slots.rate_limited(Ticket(0, 32))
    lowered = slots.limit
    assert lowered == pytest.approx(32 * DECREASE_FACTOR)

    slots.rate_limited(Ticket(1, 32))  # sent after the decrease, at the ceiling: news
    assert slots.limit == pytest.approx(lowered * DECREASE_FACTOR)


def test_the_limit_never_drops_below_one() -> None:
    small = lane(4)
    for wave in range(10):
        small.rate_limited(Ticket(wave, 1))
        small.rate_limited(Ticket(wave, 1))
    assert small.limit == pytest.approx(1)
    assert small.lowest_limit == pytest.approx(1)


def test_a_lone_429_among_replies_that_succeed_at_its_level_changes_nothing() -> None:
    slots = lane(16)
    slots.limit = 16
    one_429_in_ten(slots, level=16, rounds=30)  # 10 % at 16 get a 429, whatever the load

    assert slots.limit == pytest.approx(16)
    assert slots.lowest_limit == pytest.approx(INITIAL_LIMIT)  # never lowered
    assert slots.isolated == 30


def test_one_429_with_no_reply_at_its_level_yet_waits_for_a_second() -> None:
    slots = lane(16)
    slots.limit = 16
    replies(slots, level=4, count=4)
    slots.rate_limited(Ticket(0, 16))
    assert slots.limit == pytest.approx(16)

    slots.rate_limited(Ticket(0, 16))
    assert slots.limit == pytest.approx(16 * DECREASE_FACTOR)


def test_429s_where_no_reply_came_yet_are_isolated_when_those_below_got_429s_too() -> None:
    slots = lane(16)
    slots.limit = 12
    one_429_in_ten(slots, level=8, rounds=3)  # below, one in ten got a 429
    slots.rate_limited(Ticket(0, 12))
    slots.rate_limited(Ticket(0, 11))

    assert slots.limit == pytest.approx(12)


def test_429s_just_above_a_level_where_some_429s_came_still_lower_the_limit() -> None:
    """At a cap of 8, a request sent as a reply leaves may find the cap still full: 429s
    at the cap's level do not make those above it background."""
    slots = lane(16)
    slots.limit = 10
    one_429_in_ten(slots, level=8, rounds=3)
    slots.rate_limited(Ticket(0, 10))
    slots.rate_limited(Ticket(0, 9))

    assert slots.limit == pytest.approx(8)


def test_replies_that_succeed_at_the_ceiling_lift_it() -> None:
    slots = lane(32)
    slots.limit = 16
    slots.rate_limited(Ticket(0, 16))
    slots.rate_limited(Ticket(0, 16))  # ceiling 16, limit 14.4
    assert slots.ceiling == pytest.approx(16)

    replies(slots, level=16, count=3, wave=0)  # sent before the decrease: not evidence
    assert slots.ceiling == pytest.approx(16)
    replies(slots, level=16, count=4, wave=1)
    assert slots.ceiling == pytest.approx(17)


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
        slots.rate_limited(Ticket(0, 24))
        slots.rate_limited(Ticket(0, 24))  # ceiling 24, limit 23
        slots.limit = 18
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

    assert before == pytest.approx(18)
    assert after == pytest.approx(before + 1, abs=0.1)


def test_replies_raise_the_limit_slower_near_the_ceiling() -> None:
    async def main() -> float:
        slots = lane(4)
        slots.rate_limited(Ticket(0, 4))
        slots.rate_limited(Ticket(0, 4))  # ceiling 4, limit 3
        slots.limit = 3.5
        async with slots.slot(1), slots.slot(1), slots.slot(1):
            waiting = await _waiting_call(slots)
            slots.succeeded()
            after = slots.limit
        await waiting
        return after

    assert asyncio.run(main()) == pytest.approx(3.5 + 1 / (3.5 * PROBE_ROUNDS))


def test_a_probe_that_finds_the_same_ceiling_again_probes_half_as_often() -> None:
    async def main() -> float:
        slots = lane(16)
        slots.limit = 10
        replies(slots, level=8, count=8)
        slots.rate_limited(Ticket(0, 9))
        slots.rate_limited(Ticket(0, 9))  # a cap of 8: ceiling 9, limit 8
        slots.limit = 9
        slots.rate_limited(Ticket(1, 9))  # the probe at 9 fails again
        assert (slots.limit, slots.ceiling) == (8, 9)
        slots.limit = 8.5
        async with contextlib.AsyncExitStack() as held:
            for _ in range(8):
                await held.enter_async_context(slots.slot(1))
            waiting = await _waiting_call(slots)
            slots.succeeded()
            after = slots.limit
        await waiting
        return after

    assert asyncio.run(main()) == pytest.approx(8.5 + 1 / (8.5 * 2 * PROBE_ROUNDS))


def test_replies_without_calls_waiting_leave_the_limit_alone() -> None:
    slots = lane(32)
    slots.rate_limited(Ticket(0, 8))
    slots.rate_limited(Ticket(0, 8))
    lowered = slots.limit
    for _ in range(100):
        slots.succeeded()
    assert slots.limit == pytest.approx(lowered)


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


def capped_config(server: JudgeServer) -> dict[str, Any]:
    return {
        "llm": {
            "generation": {"provider": "openai-compatible", "base_url": server.url},
            "cache": {"enabled": False},
            "max_concurrency": 16,
            "max_retries": 10,
        }
    }


def test_a_concurrency_cap_costs_few_429s(judge: Any) -> None:
    server: JudgeServer = judge(latency_s=0.01, faults=Faults(max_in_flight=4, retry_after_ms=5))

    failed, engine = run_calls(capped_config(server), calls=300)

    assert failed == 0
    rejected = server.count(outcome="over_capacity")
    # At a fixed 16 in flight, three in four requests would get a 429.
    assert 0 < rejected < 0.2 * server.count()
    assert engine.generation is not None
    assert engine.generation.lane.lowest_limit < INITIAL_LIMIT  # it came down


def test_429s_at_random_do_not_bring_the_limit_down(judge: Any) -> None:
    # One request in ten gets a 429 whatever the load (decided by its body and the seed).
    server: JudgeServer = judge(latency_s=0.01, faults=Faults(rate_limit=0.1), seed=3)

    failed, engine = run_calls(capped_config(server), calls=300)

    assert failed == 0
    assert server.count(outcome="rate_limit") > 10
    assert engine.generation is not None
    lane = engine.generation.lane
    assert lane.isolated > 0  # read as isolated ...
    # ... so the limit did not collapse: the old rule left it at 2-4; now it ends at 8-16 on a
    # quiet machine, and under load (replies late, levels shifted) down to about 8.
    assert lane.limit > INITIAL_LIMIT / 2
