"""Attacks on the command line and its output directory (docs/security.md): two runs into one
directory, planted links, YAML and JSON bombs, SIGTERM and Ctrl-C, a full disk, spreadsheet
formulas in the TSV. Each runs the real command, in a real process where it matters."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_eval.cli import main

LOOKUP = '{"a": 1}'
VICTIM_TEXT = "precious, never to be overwritten\n"
BOMB_LEVELS = 10


def bomb_lines() -> list[str]:
    """Ten levels of nine aliases each: 9**10 nodes once expanded (a "billion laughs")."""
    lines = ['x0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [
        f"x{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 9)}]"
        for level in range(1, BOMB_LEVELS)
    ]
    return lines


def indented(lines: list[str], spaces: int) -> str:
    return "".join(" " * spaces + line + "\n" for line in lines)


def write_reference(folder: Path, count: int = 3, name: str = "reference.yaml") -> Path:
    step = {"name": "lookup", "args": {}, "output": LOOKUP, "output_media_type": "application/json"}
    questions = [
        {
            "id": f"q{i}",
            "question_text": f"Q{i}?",
            "reference_answer": "a",
            "reference_steps": [[step]],
        }
        for i in range(count)
    ]
    path = folder / name
    path.write_text(yaml.safe_dump([{"template_id": "t", "questions": questions}]))
    return path


def response(qid: str, **step: Any) -> dict[str, Any]:
    actual = {"name": "lookup", "status": "success", "output": LOOKUP, "args": {}, **step}
    return {"question_id": qid, "actual_answer": "a", "actual_steps": [actual]}


def write_responses(folder: Path, records: list[dict[str, Any]]) -> Path:
    path = folder / "responses.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


# Runs the command as ``python -m graphrag_eval.cli`` does, then writes the process's peak
# resident memory (KiB) to the file named by its first argument, however the command ended:
# the high-water mark of its own memory map (VmHWM), which starts anew at exec (ru_maxrss
# would count the test process it was forked from).
_MEASURED = """\
import runpy, sys
peak_file = sys.argv.pop(1)
try:
    runpy.run_module("graphrag_eval.cli", run_name="__main__", alter_sys=True)
finally:
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(peak_file, "w") as stream:
        stream.write(peak)
"""


def run_cli(
    *args: str | Path,
    limits: Callable[[], None] | None = None,
    timeout_s: float = 300,
    peak_file: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """``graphrag-eval ARGS`` in its own process (``limits`` runs in it before the command;
    with ``peak_file``, its peak resident memory in KiB is written there)."""
    start = [sys.executable, "-m", "graphrag_eval.cli"]
    if peak_file is not None:
        start = [sys.executable, "-c", _MEASURED, str(peak_file)]
    return subprocess.run(
        [*start, *(str(arg) for arg in args)],
        capture_output=True,
        text=True,
        preexec_fn=limits,
        timeout=timeout_s,  # a bound for a broken run, not a timing
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"},
        check=False,
    )


def bounded_memory_and_cpu() -> None:
    """At most 400 MB of address space (the interpreter and its libraries take about half)
    and 30 s of CPU: a bomb that expands is killed, or fails with a MemoryError."""
    resource.setrlimit(resource.RLIMIT_AS, (400 << 20, 400 << 20))
    resource.setrlimit(resource.RLIMIT_CPU, (30, 30))


def run_bomb(*args: str | Path, folder: Path) -> subprocess.CompletedProcess[str]:
    """Run the command on a bomb, bounded, and check it stayed under 200 MB of resident
    memory (docs/security.md: a bomb costs about 65 MB, the interpreter included)."""
    peak_file = folder / "peak-rss-kib"
    done = run_cli(*args, limits=bounded_memory_and_cpu, peak_file=peak_file)
    peak_mib = int(peak_file.read_text()) / 1024
    assert peak_mib < 200, f"peak resident memory {peak_mib:.0f} MiB"
    return done


def read_results(out: Path) -> dict[str, dict[str, Any]]:
    lines = (out / "results.jsonl").read_text().splitlines()
    return {record["question_id"]: record for record in map(json.loads, lines)}


# -- YAML and JSON bombs ---------------------------------------------------------------------


def test_a_yaml_bomb_in_the_config_is_one_line_and_exit_2(tmp_path: Path) -> None:
    reference = write_reference(tmp_path)
    responses = write_responses(tmp_path, [response("q0")])
    config = tmp_path / "config.yaml"
    config.write_text("\n".join(bomb_lines()) + "\nllm:\n  max_cost_usd: 1\n")
    done = run_bomb(
        "evaluate", reference, responses, "-c", config, "-o", tmp_path / "out", folder=tmp_path
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"graphrag-eval: error: {config}: YAML aliases would expand")


def test_a_yaml_bomb_in_a_reference_step_is_one_line_and_exit_2(tmp_path: Path) -> None:
    reference = tmp_path / "reference.yaml"
    reference.write_text(
        "- template_id: t\n  questions:\n  - id: q0\n    question_text: Q?\n"
        "    reference_steps:\n    - - name: lookup\n        output: '{}'\n        args:\n"
        + indented(bomb_lines(), 10)
    )
    responses = write_responses(tmp_path, [response("q0")])
    done = run_bomb("evaluate", reference, responses, "-o", tmp_path / "out", folder=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "YAML aliases would expand" in done.stderr


def test_a_yaml_bomb_in_a_response_costs_that_item_only(tmp_path: Path) -> None:
    reference = write_reference(tmp_path)
    responses = tmp_path / "responses.yaml"
    responses.write_text(
        "- question_id: q0\n  actual_answer: a\n  actual_steps:\n  - name: lookup\n"
        f"    status: success\n    output: '{LOOKUP}'\n    args:\n"
        + indented(bomb_lines(), 6)
        + yaml.safe_dump([response("q1"), response("q2")])
    )
    out = tmp_path / "out"
    done = run_bomb("evaluate", reference, responses, "-o", out, "-q", folder=tmp_path)
    assert done.returncode == 0, done.stderr
    results = read_results(out)
    assert results["q0"]["status"] == "error"
    assert "YAML aliases would expand" in results["q0"]["error"]
    assert results["q1"]["steps_score"] == pytest.approx(1.0)
    assert results["q2"]["steps_score"] == pytest.approx(1.0)


def test_a_recursive_alias_in_a_response_costs_that_item_only(tmp_path: Path) -> None:
    reference = write_reference(tmp_path, 2)
    responses = tmp_path / "responses.yaml"
    responses.write_text(
        f"q0: {{actual_answer: a, actual_steps: &loop [*loop]}}\nq1: {json.dumps(response('q1'))}\n"
    )
    out = tmp_path / "out"
    assert main(["evaluate", str(reference), str(responses), "-o", str(out), "-q"]) == 0
    results = read_results(out)
    assert "refers to a node that contains it" in results["q0"]["error"]
    assert results["q1"]["steps_score"] == pytest.approx(1.0)


def test_a_few_shared_aliases_are_read(tmp_path: Path) -> None:
    reference = tmp_path / "reference.yaml"
    reference.write_text(
        "- template_id: t\n  questions:\n"
        "  - {id: q0, question_text: Q?, reference_steps: [[&s {name: lookup, output: '{}'}]]}\n"
        "  - {id: q1, question_text: Q?, reference_steps: [[*s]]}\n"
    )
    responses = write_responses(
        tmp_path, [response("q0", output="{}"), response("q1", output="{}")]
    )
    out = tmp_path / "out"
    assert main(["evaluate", str(reference), str(responses), "-o", str(out), "-q"]) == 0
    assert read_results(out)["q1"]["steps_score"] == pytest.approx(1.0)


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def test_deep_nesting_costs_its_item_without_a_traceback(tmp_path: Path) -> None:
    reference = write_reference(tmp_path)
    deep_text = '{"a": ' * 5000 + "{}" + "}" * 5000  # read by the step rule: RecursionError
    responses = write_responses(
        tmp_path,
        [response("q0", args=_nested(900)), response("q1", output=deep_text), response("q2")],
    )
    out = tmp_path / "out"
    done = run_cli("evaluate", reference, responses, "-o", out, "-q")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "step rule json_output failed: RecursionError" in done.stderr
    results = read_results(out)
    assert "nested more than 100 levels deep" in results["q0"]["error"]
    assert results["q1"]["steps_score"] == pytest.approx(0.0)
    assert results["q2"]["steps_score"] == pytest.approx(1.0)

    debug = run_cli("evaluate", reference, responses, "-o", tmp_path / "debug", "-q", "--debug")
    assert "Traceback" in debug.stderr  # --debug keeps it


# -- Planted links -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        ".results.jsonl.tmp",
        ".report.html.tmp",
        ".run.yaml.tmp",
        ".checkpoint.json.tmp",
        "results.jsonl",
        "checkpoint.json",
        "aggregates.yaml",
        "run.yaml",
        "report.html",
    ],
)
def test_a_planted_link_is_never_followed(tmp_path: Path, name: str) -> None:
    reference = write_reference(tmp_path)
    responses = write_responses(tmp_path, [response("q0"), response("q1"), response("q2")])
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM_TEXT)
    out = tmp_path / "out"
    out.mkdir()
    (out / name).symlink_to(victim)
    assert main(["evaluate", str(reference), str(responses), "-o", str(out), "-q"]) == 0
    assert victim.read_text() == VICTIM_TEXT
    assert len(read_results(out)) == 3
    if not name.startswith("."):  # the link itself was replaced by the file
        assert not (out / name).is_symlink()
    assert {path.name for path in out.glob(".*tmp")} <= {name}  # no temporary file left


def test_a_planted_lock_link_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reference = write_reference(tmp_path)
    responses = write_responses(tmp_path, [response("q0")])
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM_TEXT)
    out = tmp_path / "out"
    out.mkdir()
    (out / ".graphrag-eval.lock").symlink_to(victim)
    assert main(["evaluate", str(reference), str(responses), "-o", str(out), "-q"]) == 2
    assert capsys.readouterr().err.startswith(
        f"graphrag-eval: error: {out / '.graphrag-eval.lock'}"
    )
    assert victim.read_text() == VICTIM_TEXT


def test_report_output_link_is_replaced_not_followed(tmp_path: Path) -> None:
    reference = write_reference(tmp_path)
    responses = write_responses(tmp_path, [response("q0")])
    out = tmp_path / "out"
    assert main(["evaluate", str(reference), str(responses), "-o", str(out), "-q"]) == 0
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM_TEXT)
    target = tmp_path / "report.html"
    target.symlink_to(victim)
    (tmp_path / ".report.html.tmp").symlink_to(victim)
    assert main(["report", str(out), "-o", str(target)]) == 0
    assert victim.read_text() == VICTIM_TEXT
    assert "<html" in target.read_text()


def test_a_deep_item_of_a_json_responses_file_costs_that_item_only(tmp_path: Path) -> None:
    reference = write_reference(tmp_path, 2)
    responses = tmp_path / "responses.json"
    deep = response("q0", args=_nested(150))  # readable by json, over the limit of 100
    responses.write_text(json.dumps({"q0": deep, "q1": response("q1")}))
    out = tmp_path / "out"
    assert main(["evaluate", str(reference), str(responses), "-o", str(out), "-q"]) == 0
    results = read_results(out)
    assert results["q0"]["error"] == (
        f"{responses}: question 'q0': unparsable response: nested more than 100 levels deep "
        "(in the field 'actual_steps')"
    )
    assert results["q1"]["steps_score"] == pytest.approx(1.0)


def test_a_document_over_the_size_limit_is_refused_before_it_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = write_reference(tmp_path)
    os.truncate(reference, 300 << 20)  # sparse: 300 MiB long, nothing on disk
    responses = write_responses(tmp_path, [response("q0")])
    out = tmp_path / "out"
    assert main(["evaluate", str(reference), str(responses), "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"graphrag-eval: error: {reference}: the file is 300 MiB, over the limit of 256 MiB "
        "for a YAML or JSON document\n"
    )


@pytest.mark.parametrize("name", ["results.jsonl", "checkpoint.json"])
@pytest.mark.parametrize("kind", ["link", "pipe"])
def test_resume_never_reads_a_planted_link_or_pipe(
    tmp_path: Path, name: str, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = write_reference(tmp_path)
    responses = write_responses(tmp_path, [response("q0")])
    out = tmp_path / "out"
    args = ["evaluate", str(reference), str(responses), "-o", str(out), "-q"]
    assert main(args) == 0
    (out / name).unlink()
    if kind == "pipe":
        os.mkfifo(out / name)  # reading it would wait for ever
    else:
        victim = tmp_path / "victim.txt"
        victim.write_text(VICTIM_TEXT)
        (out / name).symlink_to(victim)
    assert main([*args, "--resume"]) == 2
    assert capsys.readouterr().err == (
        f"graphrag-eval: error: {out / name}: not a regular file (planted here?); "
        "start afresh with --overwrite instead of --resume\n"
    )
    assert main([*args, "--overwrite"]) == 0  # a fresh run replaces it
    assert (out / name).is_file() and not (out / name).is_symlink()


def test_temporary_files_a_killed_run_left_are_removed_by_the_next_run(tmp_path: Path) -> None:
    reference = write_reference(tmp_path)
    responses = write_responses(tmp_path, [response("q0")])
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM_TEXT)
    stale = [".results.jsonl.0123456789ab.tmp", ".run.yaml.a1b2c3d4e5f6.tmp"]
    for name in stale:
        (out / name).write_text("half written")  # as kill -9 between write and replace
    kept = {
        ".report.html.ffffffffffff.tmp": "a link",  # never followed, never removed
        ".cache.0123456789ab.tmp": "a directory",
        "notes.0123456789ab.tmp": "not hidden: not our name",
        ".results.jsonl.tmp": "no random part: not our name",
        ".x.0123456789AB.tmp": "upper case: not our name",
    }
    (out / ".report.html.ffffffffffff.tmp").symlink_to(victim)
    (out / ".cache.0123456789ab.tmp").mkdir()
    for name in list(kept)[2:]:
        (out / name).write_text("the user's")
    assert main(["evaluate", str(reference), str(responses), "-o", str(out), "-q"]) == 0
    assert not any((out / name).exists() for name in stale)
    assert all((out / name).is_symlink() or (out / name).exists() for name in kept)
    assert (out / ".report.html.ffffffffffff.tmp").is_symlink()
    assert victim.read_text() == VICTIM_TEXT
    assert read_results(out)["q0"]["steps_score"] == pytest.approx(1.0)
