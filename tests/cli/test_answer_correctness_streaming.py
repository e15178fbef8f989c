"""The ``answer-correctness`` command streams its rows (docs/llm.md, "The answer-correctness
command"): a row's re-ask goes before the first calls of new rows, finished rows are in the
output file while the run goes on, and Ctrl-C, SIGTERM or kill -9 keep what finished.

The interruptions land without timing: the judge holds its replies about the last rows until
the process is stopped, so exactly the first rows can finish before it.
"""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_eval.cli import answer_correctness_main

from builders import write_tsv
from judge_server import MALFORMED_REPLY, JudgeServer

ROWS = [(f"Which transformers are in S{i}?", f"T{i}a, T{i}b", f"T{i}a") for i in range(6)]
FINISHED = 3
"""Rows the judge answers before the process is stopped; it holds the others."""
ABOUT = re.compile(r"are in S(\d+)\?")


@pytest.fixture(autouse=True)
def _no_real_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


def write_config(folder: Path, server: JudgeServer, **llm: Any) -> Path:
    path = folder / "config.yaml"
    generation = {"provider": "openai-compatible", "base_url": server.url, "model": "gpt-4o-mini"}
    config = {"llm": {"generation": generation, "backoff_initial_s": 0.001, **llm}}
    path.write_text(yaml.safe_dump(config))
    return path


def read_tsv(path: Path) -> list[dict[str, str]]:
    with path.open() as stream:
        return list(csv.DictReader(stream, delimiter="\t"))


def row_of(body: dict[str, Any]) -> int:
    found = ABOUT.search(json.dumps(body.get("messages")))
    assert found is not None
    return int(found.group(1))


def test_a_re_ask_goes_before_the_first_calls_of_new_rows(tmp_path: Path) -> None:
    def malformed_first(body: dict[str, Any]) -> str | None:
        # Row 0's first reply is unusable; its re-ask (which carries that reply) is not.
        if row_of(body) == 0 and len(body["messages"]) == 2:
            return MALFORMED_REPLY
        return None

    source, target = tmp_path / "in.tsv", tmp_path / "out.tsv"
    write_tsv(source, ROWS[:4])
    with JudgeServer(responder=malformed_first) as server:
        config = write_config(tmp_path, server, max_concurrency=1)
        assert (
            answer_correctness_main(["-i", str(source), "-o", str(target), "-c", str(config)]) == 0
        )
        asked = [(row_of(r.body), len(r.body["messages"])) for r in server.requests]

    assert asked == [(0, 2), (0, 4), (1, 2), (2, 2), (3, 2)]
    assert [row["answer_eval_error"] for row in read_tsv(target)] == ["", "", "", ""]


@pytest.fixture
def holding() -> Iterator[tuple[JudgeServer, threading.Event]]:
    """A judge that answers the first :data:`FINISHED` rows and holds the others until the
    event is set."""
    release = threading.Event()

    def hold_the_last_rows(body: dict[str, Any]) -> str | None:
        if row_of(body) >= FINISHED:
            release.wait(timeout=300)
        return None

    with JudgeServer(responder=hold_the_last_rows) as server:
        yield server, release
        release.set()


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as a shell on a terminal starts a command


def start(tmp_path: Path, server: JudgeServer) -> tuple[subprocess.Popen[str], Path]:
    """The command in its own process, once its first :data:`FINISHED` rows are written."""
    source, target = tmp_path / "in.tsv", tmp_path / "out.tsv"
    write_tsv(source, ROWS)
    config = write_config(tmp_path, server, max_concurrency=8, timeout_s=600)
    script = "import sys; from graphrag_eval.cli import answer_correctness_main as m; sys.exit(m())"
    process = subprocess.Popen(
        [sys.executable, "-c", script, "-i", str(source), "-o", str(target), "-c", str(config)],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    deadline = time.monotonic() + 120  # a bound for a broken run, not a timing
    while time.monotonic() < deadline and process.poll() is None:
        if target.exists() and target.read_text().count("\n") >= 1 + FINISHED:
            break
        time.sleep(0.05)
    assert process.poll() is None, "the run ended although the judge held its replies"
    return process, target


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["ctrl-c", "sigterm"]
)
def test_an_interrupted_run_keeps_the_rows_that_finished_in_input_order(
    tmp_path: Path, holding: tuple[JudgeServer, threading.Event], signum: int, code: int
) -> None:
    server, release = holding
    process, target = start(tmp_path, server)

    # The finished rows are in the file while the run goes on.
    streamed = read_tsv(target)
    assert sorted(row["Question"] for row in streamed) == [q for q, _, _ in ROWS[:FINISHED]]
    assert all(row["answer_recall"] == "0.5" for row in streamed)

    process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    release.set()

    assert process.returncode == code
    kept = read_tsv(target)
    assert [row["Question"] for row in kept] == [q for q, _, _ in ROWS[:FINISHED]]
    assert {row["Question"]: row for row in kept} == {row["Question"]: row for row in streamed}
    assert f"interrupted: {FINISHED} of 6 answers judged" in err
    assert "Traceback" not in err


def test_kill_9_keeps_the_rows_that_finished(
    tmp_path: Path, holding: tuple[JudgeServer, threading.Event]
) -> None:
    server, release = holding
    process, target = start(tmp_path, server)

    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=120)
    release.set()

    kept = read_tsv(target)
    assert sorted(row["Question"] for row in kept) == [q for q, _, _ in ROWS[:FINISHED]]
    assert all(row["answer_precision"] == "1.0" for row in kept)
