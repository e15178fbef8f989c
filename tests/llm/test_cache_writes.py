"""When the cache writes (docs/llm.md, cache): inside an event loop, what was put in one turn
is written at the next, in one transaction, and read from memory meanwhile; outside a loop,
and when the cache closes, at once."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path

import pytest

from graphrag_eval.llm.cache import CallCache
from graphrag_eval.llm.pricing import TokenUsage


def stored(path: Path) -> tuple[int, int]:
    """The replies and embeddings in the file, as another process sees them."""
    with sqlite3.connect(path) as other:
        replies = other.execute("SELECT COUNT(*) FROM replies").fetchone()[0]
        embeddings = other.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
    return int(replies), int(embeddings)


def test_what_one_turn_puts_is_read_at_once_and_written_at_the_next(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite3"
    cache = CallCache(path)

    async def main() -> tuple[tuple[int, int], tuple[int, int]]:
        for n in range(5):
            cache.put_reply(f"r{n}", "judge", f"reply {n}", TokenUsage(10 + n, 2))
        cache.put_embeddings("embedder", [("e1", [0.5, 0.25], 3), ("e2", [1.0, -1.0], 4)])
        assert cache.get_reply("r3") is not None
        assert cache.get_reply("r3").text == "reply 3"  # type: ignore[union-attr]
        assert cache.get_reply("r3").usage == TokenUsage(13, 2)  # type: ignore[union-attr]
        found = cache.get_embeddings(["e2", "e1", "absent"])
        assert found == {"e1": ([0.5, 0.25], 3), "e2": ([1.0, -1.0], 4)}
        before = stored(path)
        await asyncio.sleep(0)  # the loop's next turn
        return before, stored(path)

    before, after = asyncio.run(main())
    cache.close()

    assert before == (0, 0)
    assert after == (5, 2)
    reopened = CallCache(path)
    assert reopened.get_reply("r4") is not None
    assert reopened.get_embeddings(["e1"]) == {"e1": ([0.5, 0.25], 3)}
    reopened.close()


def test_one_turn_is_one_transaction(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite3"
    cache = CallCache(path)
    statements: list[str] = []

    async def main() -> None:
        for n in range(50):
            cache.put_reply(f"r{n}", "judge", "yes", TokenUsage(1, 1))
        await asyncio.sleep(0)
        for n in range(50, 60):
            cache.put_reply(f"r{n}", "judge", "no", TokenUsage(1, 1))
        await asyncio.sleep(0)

    cache._db.set_trace_callback(statements.append)  # every statement SQLite runs
    asyncio.run(main())
    cache.close()

    assert [s for s in statements if s in ("BEGIN", "COMMIT")] == ["BEGIN", "COMMIT"] * 2
    assert stored(path) == (60, 0)


def test_outside_a_loop_and_at_close_nothing_waits(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite3"
    cache = CallCache(path)

    cache.put_reply("now", "judge", "at once", TokenUsage(1, 1))
    at_once = stored(path)

    async def put_and_close() -> None:
        cache.put_embeddings("embedder", [("e", [0.1], 1)])
        cache.close()  # before the loop turns

    asyncio.run(put_and_close())

    assert at_once == (1, 0)
    assert stored(path) == (1, 1)


def test_a_write_that_fails_at_the_next_turn_only_turns_the_cache_read_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "cache.sqlite3"
    cache = CallCache(path)
    cache.put_reply("kept", "judge", "stored", TokenUsage(1, 1))

    async def main() -> None:
        cache.put_reply("bad", "judge", "a lone surrogate \ud800", TokenUsage(1, 1))
        cache.put_reply("lost", "judge", "in the same transaction", TokenUsage(1, 1))
        await asyncio.sleep(0)
        cache.put_reply("after", "judge", "not written", TokenUsage(1, 1))
        await asyncio.sleep(0)

    with caplog.at_level(logging.WARNING):
        asyncio.run(main())
    cache.close()

    assert not cache.writable and cache.readable
    assert stored(path) == (1, 0)
    assert len([r for r in caplog.records if "call cache" in r.getMessage()]) == 1
