"""Operating a run (docs/security.md): two runs into one directory, SIGTERM, Ctrl-C during
start-up, a full disk, and the answer-correctness TSV. Each runs ``graphrag-eval`` in a real
process against the local judge server; the test synchronises on the judge's requests and on
the files the run writes, never on a clock."""

from __future__ import annotations

import csv
import json
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_eval.cli import answer_correctness_main, main
from shadowed_import import default_sigint, signal_during_import

from builders import read_results, write_answered, write_judge_config, write_tsv
from judge_server import JudgeServer

VICTIM_TEXT = "precious, never to be overwritten\n"
_ABOUT = re.compile(r"substation S(\d+)\b", re.IGNORECASE)

pytestmark = pytest.mark.usefixtures("no_real_key")


def write_config(folder: Path, server: JudgeServer) -> Path:
    return write_judge_config(folder, server.url, max_concurrency=64, timeout_s=600)


def start_cli(*args: str | Path, before: Callable[[], None] | None = None) -> subprocess.Popen[str]:
    """``graphrag-eval ARGS`` in its own process (``before`` runs in it first; by default
    Ctrl-C is given its default action, as a shell on a terminal starts a command, whatever
    this test process inherited: a test suite started in the background ignores it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "graphrag_eval.cli", *(str(arg) for arg in args)],
        preexec_fn=before or default_sigint,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "OPENBLAS_NUM_THREADS": "1"},
    )


class HeldJudge:
    """A judge that holds its replies about the questions from q{finished} on until
    released, and says when the first held request arrived."""

    def __init__(self, finished: int) -> None:
        self.finished = finished
        self.release = threading.Event()
        self.held = threading.Event()

    def __call__(self, body: dict[str, Any]) -> str | None:
        found = _ABOUT.search(json.dumps(body.get("messages")))
        if found and int(found.group(1)) >= self.finished:
            self.held.set()
            self.release.wait(timeout=300)
        return None  # then the default judge answers


@pytest.fixture
def held() -> Iterator[tuple[HeldJudge, JudgeServer]]:
    judge = HeldJudge(finished=4)
    with JudgeServer(responder=judge) as server:
        try:
            yield judge, server
        finally:
            judge.release.set()


def wait_for_lines(path: Path, count: int, process: subprocess.Popen[str]) -> None:
    """Until ``path`` has ``count`` lines (the bound is for a broken run, not a timing)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if path.exists() and path.read_text().count("\n") >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} never had {count} lines")


def test_a_second_run_into_the_same_directory_fails_at_once(
    tmp_path: Path, held: tuple[HeldJudge, JudgeServer], capsys: pytest.CaptureFixture[str]
) -> None:
    judge, server = held
    reference, responses = write_answered(tmp_path, 8)
    config = write_config(tmp_path, server)
    out = tmp_path / "out"
    args = ["evaluate", str(reference), str(responses), "-c", str(config), "-o", str(out)]
    first = start_cli(*args, "-q")
    try:
        assert judge.held.wait(timeout=120), "the first run never reached the judge"
        code = main(args)
        err = capsys.readouterr().err
        assert code == 2
        assert err == (
            f"graphrag-eval: error: {out}: another graphrag-eval run (PID {first.pid}) is "
            "writing to this output directory; wait for it to end or use another --out-dir\n"
        )
    finally:
        judge.release.set()
        _, first_err = first.communicate(timeout=300)
    assert first.returncode == 0, first_err
    assert len(read_results(out)) == 8
    # Once the first run has ended, the directory is free again.
    assert main([*args, "-q", "--resume"]) == 0


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as for a job started with & by a script


@pytest.mark.parametrize("sigint_ignored", [False, True])
def test_sigterm_stops_like_ctrl_c_and_resume_completes(
    tmp_path: Path, held: tuple[HeldJudge, JudgeServer], sigint_ignored: bool
) -> None:
    judge, server = held
    reference, responses = write_answered(tmp_path, 8)
    config = write_config(tmp_path, server)
    out = tmp_path / "out"
    args = ["evaluate", str(reference), str(responses), "-c", str(config), "-o", str(out), "-q"]
    process = start_cli(*args, before=_ignore_sigint if sigint_ignored else None)
    try:
        wait_for_lines(out / "results.jsonl", judge.finished, process)
        assert judge.held.wait(timeout=120)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=120)
    finally:
        judge.release.set()
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 143
    assert err.count("\n") == 1, err
    assert err.startswith(f"interrupted; the finished items are in {out / 'results.jsonl'}")
    assert err.rstrip().endswith(" --resume")
    assert len(read_results(out)) == judge.finished  # the finished items are kept

    server.reset()
    assert main([*args, "--resume"]) == 0
    assert len(read_results(out)) == 8
    run = yaml.safe_load((out / "run.yaml").read_text())
    assert run["resumed"] == {"kept": judge.finished, "evaluated_again": 0}


def test_ctrl_c_during_start_up_is_one_line_and_resume_accepts_the_directory(
    tmp_path: Path,
) -> None:
    """The reference is a named pipe: the run blocks reading it, in start-up, until the test
    has opened the pipe's other end; then Ctrl-C arrives there."""
    reference, responses = write_answered(tmp_path, 3)
    out = tmp_path / "out"
    assert main(["evaluate", str(reference), str(responses), "-o", str(out), "-q"]) == 0
    complete = read_results(out)
    pipe = tmp_path / "reference-pipe.yaml"
    os.mkfifo(pipe)
    process = start_cli("evaluate", pipe, responses, "-o", out, "-q")
    with pipe.open("w"):  # returns once the run has opened the pipe to read it
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
    assert process.returncode == 130
    resume = f"graphrag-eval evaluate {pipe} {responses} -o {out} -q --resume"
    assert err == f"interrupted; continue with: {resume}\n"
    # Nothing was written: --resume accepts the directory and keeps every item.
    assert main(["evaluate", str(reference), str(responses), "-o", str(out), "-q", "--resume"]) == 0
    assert read_results(out) == complete
    run = yaml.safe_load((out / "run.yaml").read_text())
    assert run["resumed"] == {"kept": 3, "evaluated_again": 0}


@pytest.mark.parametrize(
    ("signum", "exit_code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["int", "term"]
)
def test_a_signal_while_python_imports_the_commands_is_one_line(
    tmp_path: Path, signum: signal.Signals, exit_code: int
) -> None:
    """A module the commands import (PyYAML) is shadowed on PYTHONPATH by one that reads a
    named pipe: the import blocks until the test has opened the pipe's other end; then Ctrl-C
    or SIGTERM arrives while Python is still importing the package (SIGTERM used to kill it
    silently, -15)."""
    code, err, out = signal_during_import(tmp_path, "yaml", "open(PIPE).read()\n", signum)
    assert code == exit_code
    assert err == "interrupted while starting; nothing was written\n"
    assert not out.exists()


@pytest.mark.parametrize(
    ("signum", "exit_code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["int", "term"]
)
def test_a_signal_while_python_imports_the_package_itself_is_one_line(
    tmp_path: Path, signum: signal.Signals, exit_code: int
) -> None:
    """As above, with the standard library's ``typing`` shadowed (it loads the real one once
    the pipe is read): the first module of the package's own imports that is not loaded with
    Python itself. The package imported it before the commands guarded the signals, so
    SIGTERM there killed it silently (-15)."""
    shadowing = (
        "import sys\nopen(PIPE).read()\nsys.path.remove(SHADOW)\ndel sys.modules['typing']\n"
        "import typing\n"
    )
    code, err, out = signal_during_import(tmp_path, "typing", shadowing, signum)
    assert code == exit_code
    assert err == "interrupted while starting; nothing was written\n"
    assert not out.exists()


SWALLOWING_IMPORTS = {
    "a bare except": "try:\n    open(PIPE).read()\nexcept BaseException:\n    pass\n",
    "__del__": ("class Reader:\n    def __del__(self):\n        open(PIPE).read()\n\n\nReader()\n"),
    "a bare except, then a failed import": (
        "try:\n    open(PIPE).read()\nexcept BaseException:\n    raise ImportError('half done')\n"
    ),
}
"""Modules that swallow what interrupts them while they are imported: a library's bare
``except`` (which may fail otherwise then), or code Python runs where an exception cannot
propagate (a ``__del__``, whose exception is printed as 'Exception ignored in ...' and
dropped)."""


@pytest.mark.parametrize("swallowing", SWALLOWING_IMPORTS, ids=list(SWALLOWING_IMPORTS))
def test_sigterm_swallowed_by_a_module_being_imported_still_stops_the_run(
    tmp_path: Path, swallowing: str
) -> None:
    """A module the commands import (PyYAML, shadowed; it loads the real one afterwards)
    swallows the interruption SIGTERM raised in it: the run used to go on to the end (exit
    0, with 'Exception ignored' and a traceback from a ``__del__``)."""
    shadowing = (
        f"import sys\n{SWALLOWING_IMPORTS[swallowing]}"
        "sys.path.remove(SHADOW)\ndel sys.modules['yaml']\nimport yaml\n"
    )
    code, err, out = signal_during_import(tmp_path, "yaml", shadowing, signal.SIGTERM)
    assert code == 143
    assert err == "interrupted while starting; nothing was written\n"
    assert not out.exists()


def _file_size_limit(limit_bytes: int) -> Callable[[], None]:
    """In the child: files may grow to ``limit_bytes``; a write past it fails with EFBIG (the
    signal that would kill the process is ignored), as on a full disk."""

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return apply


@pytest.mark.parametrize("unwritten", ["results.jsonl", "results.json"])
def test_a_full_disk_names_the_file_and_resume_completes(tmp_path: Path, unwritten: str) -> None:
    """The disk fills while items are appended, or when the final files are written (the
    indented results.json is larger than results.jsonl, which just fits)."""
    reference, responses = write_answered(tmp_path, 60)
    expected = tmp_path / "expected"
    args = ["evaluate", str(reference), str(responses), "-q", "--format", "json"]
    assert main([*args, "-o", str(expected)]) == 0
    jsonl_bytes = (expected / "results.jsonl").stat().st_size
    limit_bytes = jsonl_bytes // 10 if unwritten == "results.jsonl" else jsonl_bytes
    out = tmp_path / "out"
    args += ["-o", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "graphrag_eval.cli", *args],
        capture_output=True,
        text=True,
        preexec_fn=_file_size_limit(limit_bytes),
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        timeout=300,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == f"graphrag-eval: error: {out / unwritten}: File too large\n"
    assert not [path.name for path in out.iterdir() if path.name.endswith(".tmp")]
    assert main([*args, "--resume"]) == 0  # with room again
    assert (out / "results.jsonl").read_text() == (expected / "results.jsonl").read_text()


def test_answer_correctness_neutralises_formulas_and_never_follows_a_link(tmp_path: Path) -> None:
    rows = [
        ('=HYPERLINK("http://evil")', "T1a, T1b", "@SUM(A1:A9)"),
        ("+1 or -1?", "-1", "T2a"),
        ("Which transformers are in S3?", "T3a", "T3a"),
    ]
    source, target = tmp_path / "in.tsv", tmp_path / "judged.tsv"
    write_tsv(source, rows)
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM_TEXT)
    target.symlink_to(victim)
    (tmp_path / ".judged.tsv.tmp").symlink_to(victim)
    with JudgeServer() as server:
        config = write_config(tmp_path, server)
        code = answer_correctness_main(["-i", str(source), "-o", str(target), "-c", str(config)])
    assert code == 0
    assert victim.read_text() == VICTIM_TEXT
    assert not target.is_symlink()
    with target.open() as stream:
        judged = list(csv.DictReader(stream, delimiter="\t"))
    assert judged[0]["Question"] == '\'=HYPERLINK("http://evil")'
    assert judged[0]["Actual answer"] == "'@SUM(A1:A9)"
    assert judged[1]["Question"] == "'+1 or -1?"
    assert judged[1]["Reference answer"] == "'-1"
    assert judged[2]["Question"] == "Which transformers are in S3?"
    assert judged[2]["answer_recall"] == "1.0"  # numbers stay numbers
