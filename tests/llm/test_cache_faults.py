"""The cache can never cost a result (docs/llm.md, cache): a corrupted file or page, a lock
another process holds, or vectors that are not the endpoint's are warnings, never errors."""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval import run_evaluation
from graphrag_eval.llm.cache import all_finite

from builders import dataset, question, response
from judge_server import JudgeServer

Config = dict[str, Any]
MakeConfig = Callable[..., Config]
RunWithEngine = Callable[..., Any]

REFERENCE = dataset(
    question("q1", answer="Unit 1, Unit 101"), question("q2", answer="Unit 2, Unit 102")
)
RESPONSES = [response("q1", actual_answer="Unit 1"), response("q2", actual_answer="Unit 2")]


def correctness(config: Config) -> Config:
    return {**config, "answer_relevance": {"enabled": False}}


def cache_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "call cache" in r.getMessage()]


def assert_scored(results: list[dict[str, Any]]) -> None:
    assert [r.get("answer_eval_error") for r in results] == [None, None]
    assert [r["answer_recall"] for r in results] == pytest.approx([0.5, 0.5])


def test_a_cache_file_that_is_not_a_database_is_skipped_with_one_warning(
    server: JudgeServer, make_config: MakeConfig, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "llm-cache.sqlite3").write_bytes(b"not a database, just garbage\n" * 400)

    results = run_evaluation(REFERENCE, RESPONSES, correctness(make_config(server)))

    assert_scored(results)
    [warning] = cache_warnings(caplog)
    assert warning.exc_info is None  # a message, no traceback
    assert server.count("chat/completions") == 2


def test_a_corrupted_page_costs_no_result(
    server: JudgeServer, make_config: MakeConfig, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = correctness(make_config(server))
    first = run_evaluation(REFERENCE[:1], RESPONSES[:1], config)
    path = tmp_path / "llm-cache.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    data[4096:] = b"\xff" * (len(data) - 4096)  # every page after the header's
    path.write_bytes(bytes(data))

    results = run_evaluation(REFERENCE, RESPONSES, config)

    assert_scored(results)
    assert results[0] == first[0]
    assert len(cache_warnings(caplog)) == 1


def test_a_cache_locked_by_another_process_is_used_read_only(
    server: JudgeServer, make_config: MakeConfig, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = correctness(make_config(server, cache={"busy_timeout_s": 0.05}))
    run_evaluation(REFERENCE[:1], RESPONSES[:1], config)
    server.reset()
    other = sqlite3.connect(tmp_path / "llm-cache.sqlite3", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        results = run_evaluation(REFERENCE, RESPONSES, config)
    finally:
        other.execute("ROLLBACK")
        other.close()

    assert_scored(results)
    assert server.count("chat/completions") == 1  # q1 still served from the cache
    assert len(cache_warnings(caplog)) == 1


def test_cached_vectors_of_another_dimension_are_fetched_again(
    server: JudgeServer, make_config: MakeConfig, tmp_path: Path
) -> None:
    config = make_config(server)
    reference = dataset(question("q1", answer="Unit 1"))
    responses = [response("q1", actual_answer="Unit 1")]
    first = run_evaluation(reference, responses, config)
    with sqlite3.connect(tmp_path / "llm-cache.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM embeddings").fetchone()[0] > 1
        short = array("d", [1.0, 0.0]).tobytes()
        db.execute("UPDATE embeddings SET vector = ? WHERE rowid = 1", (short,))
    server.reset()

    second = run_evaluation(reference, responses, config)

    assert server.count("embeddings") == 1  # not a metric error: fetched again
    assert second == first


def test_cached_vectors_unlike_the_endpoints_fresh_ones_are_fetched_again(
    server: JudgeServer, make_config: MakeConfig, tmp_path: Path
) -> None:
    config = make_config(server)
    q1, q2 = question("q1", answer="Unit 1"), question("q2", answer="Unit 2")
    responses = [response("q1", actual_answer="Unit 1"), response("q2", actual_answer="Unit 2")]
    [first] = run_evaluation(dataset(q1), responses[:1], config)
    with sqlite3.connect(tmp_path / "llm-cache.sqlite3") as db:  # every cached vector
        db.execute("UPDATE embeddings SET vector = ?", (array("d", [1.0, 0.0]).tobytes(),))

    again, fresh = run_evaluation(dataset(q1, q2), responses, config)

    assert again == first
    assert "answer_relevance_error" not in fresh


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Callable[[Path], None]]:
    """Make files read-only for this process, even as root (where permission bits do not
    apply): the immutable attribute where the file system has it, else the bits."""
    made: list[Path] = []

    def make(path: Path) -> None:
        if os.geteuid() == 0:
            done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
            if done.returncode != 0:  # a file system without the attribute (tmpfs)
                reason = f"as root, only chattr +i makes {path} read-only: {done.stderr!r}"
                pytest.fail(reason) if os.environ.get("CI") else pytest.skip(reason)
        else:
            path.chmod(0o555 if path.is_dir() else 0o444)
        made.append(path)

    yield make
    for path in made:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(path)], check=False)
        path.chmod(0o755 if path.is_dir() else 0o644)


def assert_q1_from_the_cache(
    server: JudgeServer, config: Config, first: list[dict[str, Any]]
) -> None:
    """Evaluate q1 and q2 again: both are scored, q1 as in ``first``, from the cache (the
    judge is asked about q2 only)."""
    server.reset()
    results = run_evaluation(REFERENCE, RESPONSES, config)
    assert_scored(results)
    assert results[0] == first[0]
    assert server.count("chat/completions") == 1


def test_a_read_only_cache_file_serves_its_replies_and_keeps_every_value(
    server: JudgeServer,
    make_config: MakeConfig,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    read_only: Callable[[Path], None],
) -> None:
    config = correctness(make_config(server))
    first = run_evaluation(REFERENCE[:1], RESPONSES[:1], config)
    path = tmp_path / "llm-cache.sqlite3"
    with sqlite3.connect(path) as db:  # everything in the main file, as a copied cache is
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for leftover in tmp_path.glob("llm-cache.sqlite3-*"):
        leftover.unlink()
    read_only(path)
    with pytest.raises(OSError):
        path.open("ab")  # really read-only for this process

    assert_q1_from_the_cache(server, config, first)
    assert len(cache_warnings(caplog)) <= 1


def test_a_cache_in_a_read_only_directory_serves_its_replies_with_one_warning(
    server: JudgeServer,
    make_config: MakeConfig,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    read_only: Callable[[Path], None],
) -> None:
    path = tmp_path / "cache" / "llm-cache.sqlite3"
    config = correctness(make_config(server, cache={"path": str(path)}))
    first = run_evaluation(REFERENCE[:1], RESPONSES[:1], config)
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no -wal, -shm left
    read_only(path.parent)
    with pytest.raises(OSError):
        (path.parent / "probe").touch()  # really read-only for this process

    assert_q1_from_the_cache(server, config, first)
    [warning] = cache_warnings(caplog)
    assert "serving its replies" in warning.getMessage()
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


@pytest.mark.parametrize(
    ("values", "finite"),
    [
        ([0.1, -0.2, 0.3], True),
        ([1e308, 1e308], True),  # the sum overflows; each value is finite
        ([0.1, float("nan")], False),
        ([float("inf"), 0.1], False),
        ([float("inf"), float("-inf")], False),
        ([-1e308, -1e308, float("nan")], False),
    ],
)
def test_a_vector_is_finite_only_when_every_value_is(values: list[float], finite: bool) -> None:
    assert all_finite(values) is finite
