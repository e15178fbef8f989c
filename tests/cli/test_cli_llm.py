"""The command line with an LLM judge: cache, dry run, cost limit, resume (after kill -9 too),
secrets, and the answer-correctness TSV command, against the local OpenAI-compatible server."""

from __future__ import annotations

import csv
import io
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
from rich.console import Console

from graphrag_eval.cli import answer_correctness_main
from graphrag_eval.report.console import print_summary
from graphrag_eval.results.read_run import load_run

from builders import evaluate_cli, read_results, write_answered, write_judge_config, write_tsv
from judge_server import Faults, JudgeServer

SPARQL_JSON = "application/sparql-results+json"

PLANTED_KEY = "sk-test-PLANTED-0123456789abcdefSECRET"

pytestmark = pytest.mark.usefixtures("no_real_key")


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer() as running:
        yield running


def test_a_second_identical_run_makes_no_calls(tmp_path: Path, server: JudgeServer) -> None:
    reference, responses = write_answered(tmp_path, 6)
    config = write_judge_config(tmp_path, server.url)
    assert evaluate_cli(reference, responses, "-c", config, "-o", tmp_path / "a", "-q") == 0
    first = server.count()
    # Correctness, relevance, embeddings per item, and one embeddings request sent again
    # to confirm the vectors' dimension on a new endpoint (the cache keeps it).
    assert first == 6 * 3 + 1
    assert evaluate_cli(reference, responses, "-c", config, "-o", tmp_path / "b", "-q") == 0
    assert server.count() == first
    assert read_results(tmp_path / "a") == read_results(tmp_path / "b")
    run = yaml.safe_load((tmp_path / "b" / "run.yaml").read_text())
    assert run["llm"]["calls"] == 0
    assert run["llm"]["cache_hits"] == 6 * 3


def test_no_cache_calls_again(tmp_path: Path, server: JudgeServer) -> None:
    reference, responses = write_answered(tmp_path, 2)
    config = write_judge_config(tmp_path, server.url)
    evaluate_cli(reference, responses, "-c", config, "-o", tmp_path / "a", "-q")
    evaluate_cli(reference, responses, "-c", config, "-o", tmp_path / "b", "-q", "--no-cache")
    assert server.count() == 2 * (2 * 3 + 1)  # each run confirms the embedding dimension


def test_dry_run_estimates_and_calls_nothing(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_answered(tmp_path, 4)
    config = write_judge_config(tmp_path, server.url)
    out = tmp_path / "out"
    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "--dry-run") == 0
    printed = capsys.readouterr().out
    assert server.count() == 0
    assert not out.exists()
    assert "Dry run: judge calls for 4 questions" in printed
    total = next(line for line in printed.splitlines() if "total" in line)
    cells = [cell.strip() for cell in total.split("│") if cell.strip()]
    assert cells[:3] == ["total", "12", "0"]  # 4 x (correctness, relevance, embeddings)
    assert cells[-1].startswith("$0.00")


def test_dry_run_counts_cached_calls_as_free(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_answered(tmp_path, 3)
    config = write_judge_config(tmp_path, server.url)
    evaluate_cli(reference, responses, "-c", config, "-o", tmp_path / "out", "-q")
    capsys.readouterr()
    evaluate_cli(reference, responses, "-c", config, "--dry-run")
    total = next(line for line in capsys.readouterr().out.splitlines() if "total" in line)
    assert [cell.strip() for cell in total.split("│") if cell.strip()] == [
        "total",
        "0",
        "9",
        "0",
        "0",
        "$0",
    ]


def test_max_cost_stops_new_calls_and_says_so(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_answered(tmp_path, 40)
    config = write_judge_config(tmp_path, server.url, max_concurrency=1)
    out = tmp_path / "out"
    # Calls the cost limit stopped leave the run incomplete: exit 3 (docs/llm.md, cost).
    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "--max-cost", "0.0001") == 3
    printed = capsys.readouterr().out
    assert "cost limit of $0.0001 reached" in printed
    results = read_results(out)
    assert len(results) == 40  # every item is written
    limited = [r for r in results.values() if "cost limit" in r.get("answer_eval_error", "")]
    assert limited
    run = yaml.safe_load((out / "run.yaml").read_text())
    assert run["llm"]["budget_reached"] is True
    # One call in flight at a time: spending stops at the first call past the limit.
    assert run["llm"]["cost_usd"] < 0.0001 + 0.00005


def test_resume_keeps_finished_items_and_evaluates_the_rest(
    tmp_path: Path, server: JudgeServer
) -> None:
    reference, responses = write_answered(tmp_path, 8)
    config = write_judge_config(tmp_path, server.url)
    out = tmp_path / "out"
    evaluate_cli(reference, responses, "-c", config, "-o", out, "-q")
    complete = read_results(out)
    # Simulate a crash: three items written, the fourth cut short, a fresh cache.
    lines = (out / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text("\n".join(lines[:3]) + "\n" + lines[3][:40])
    (tmp_path / "cache.sqlite3").unlink()
    server.reset()
    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "-q", "--resume") == 0
    assert read_results(out) == complete
    # Only the five unfinished items were judged (with a fresh cache, one embeddings
    # request is sent again to confirm the vectors' dimension).
    assert server.count() == 5 * 3 + 1
    run = yaml.safe_load((out / "run.yaml").read_text())
    assert run["resumed"] == {"kept": 3, "evaluated_again": 0}


def test_resume_evaluates_items_whose_judge_failed_again(
    tmp_path: Path, server: JudgeServer
) -> None:
    reference, responses = write_answered(tmp_path, 4)
    config = write_judge_config(tmp_path, server.url)
    out = tmp_path / "out"
    evaluate_cli(reference, responses, "-c", config, "-o", out, "-q")
    results = list(read_results(out).values())
    del results[0]["answer_f1"]
    results[0]["answer_eval_error"] = "generation call failed: 500 (7 attempts)"
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    server.reset()
    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "-q", "--resume") == 0
    assert "answer_f1" in read_results(out)["q0"]
    assert server.count() == 0  # its successful calls come from the cache
    run = yaml.safe_load((out / "run.yaml").read_text())
    assert run["resumed"] == {"kept": 3, "evaluated_again": 1}


def test_resume_refuses_a_run_of_other_inputs(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_answered(tmp_path, 2)
    config = write_judge_config(tmp_path, server.url)
    out = tmp_path / "out"
    evaluate_cli(reference, responses, "-c", config, "-o", out, "-q")
    responses.write_text(responses.read_text().replace("has", "holds"))
    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "--resume") == 2
    err = capsys.readouterr().err
    assert err.startswith(f"graphrag-eval: error: {out / 'checkpoint.json'}: the earlier run")
    assert err.count("\n") == 1


def test_kill_9_then_resume_loses_nothing(tmp_path: Path) -> None:
    """A run killed with SIGKILL midway continues with --resume and loses nothing.

    The kill lands midway on any machine, without timing: the judge holds its replies about
    the questions from q{finished} on until the process is dead, so exactly the first
    ``finished`` items can be written before the kill, and the others cannot.
    """
    count, finished = 24, 8
    reference, responses = write_answered(tmp_path, count)
    release = threading.Event()
    release.set()  # the uninterrupted run is not held
    about = re.compile(r"substation S(\d+)\b", re.IGNORECASE)

    def hold_the_last_items(body: dict[str, Any]) -> str | None:
        found = about.search(json.dumps(body.get("messages")))
        if found and int(found.group(1)) >= finished:
            release.wait(timeout=300)
        return None  # then the default judge answers

    with JudgeServer(responder=hold_the_last_items) as server:
        # Every held chat call has its own slot and none times out, so the first items
        # always finish; answer_correctness and answer_relevance both ask the judge.
        config = write_judge_config(tmp_path, server.url, max_concurrency=64, timeout_s=600)
        expected_dir = tmp_path / "expected"
        evaluate_cli(reference, responses, "-c", config, "-o", expected_dir, "-q", "--no-cache")
        expected = read_results(expected_dir)

        out = tmp_path / "out"
        command = [
            sys.executable,
            "-m",
            "graphrag_eval.cli",
            "evaluate",
            str(reference),
            str(responses),
            "-c",
            str(config),
            "-o",
            str(out),
            "-q",
        ]
        release.clear()
        process = subprocess.Popen(command, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            results_file = out / "results.jsonl"
            deadline = time.monotonic() + 120  # a bound for a broken run, not a timing
            while time.monotonic() < deadline and process.poll() is None:
                if results_file.exists() and results_file.read_text().count("\n") >= finished:
                    break
                time.sleep(0.05)
            assert process.poll() is None, "the run ended although the judge held its replies"
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait()
            release.set()
        lines = results_file.read_text().splitlines()
        assert len(lines) == finished  # the held items could not be written
        assert {json.loads(line)["question_id"] for line in lines} == {
            f"q{i}" for i in range(finished)
        }

        server.reset()
        assert evaluate_cli(*command[4:], "--resume") == 0
        # Only the unfinished items were judged: correctness, relevance and its embeddings.
        assert server.count() == (count - finished) * 3
    results = read_results(out)
    assert len((out / "results.jsonl").read_text().splitlines()) == count
    assert results == expected
    run = yaml.safe_load((out / "run.yaml").read_text())
    assert run["resumed"] == {"kept": finished, "evaluated_again": 0}


def test_secrets_appear_nowhere(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The server refuses the planted key and echoes it back in its 401, as some do."""
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED_KEY)
    reference, responses = write_answered(tmp_path, 3)
    with JudgeServer(api_key="sk-the-right-one") as server:
        config = write_judge_config(tmp_path, server.url, max_concurrency=1)
        out = tmp_path / "out"
        # The judge refused every call: an incomplete run (exit 3).
        assert evaluate_cli(reference, responses, "-c", config, "-o", out, "--yaml") == 3
        assert server.requests[0].headers["authorization"] == f"Bearer {PLANTED_KEY}"
        refused = server.count()
    printed = capsys.readouterr()
    results = read_results(out)
    assert "refused the request: 401" in results["q0"]["answer_eval_error"]
    assert refused == 1  # the endpoint is not called again after refusing the key
    written = [path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()]
    assert any(path.name == "cache.sqlite3" for path in tmp_path.rglob("*"))
    for data in (printed.out.encode(), printed.err.encode(), caplog.text.encode(), *written):
        assert PLANTED_KEY.encode() not in data
        assert b"0123456789abcdef" not in data


def test_a_key_in_the_config_is_never_written(tmp_path: Path, server: JudgeServer) -> None:
    reference, responses = write_answered(tmp_path, 2)
    config = tmp_path / "config.yaml"
    settings = yaml.safe_load(write_judge_config(tmp_path, server.url).read_text())
    settings["llm"]["generation"]["api_key"] = PLANTED_KEY
    config.write_text(yaml.safe_dump(settings))
    out = tmp_path / "out"
    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "-q") == 0
    assert server.requests[0].headers["authorization"] == f"Bearer {PLANTED_KEY}"
    for path in [*out.iterdir(), tmp_path / "cache.sqlite3"]:
        assert PLANTED_KEY.encode() not in path.read_bytes()


def test_without_a_judge_the_summary_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_answered(tmp_path, 2)
    assert evaluate_cli(reference, responses, "-o", tmp_path / "out") == 0
    assert "LLM-judged answer metrics not run" in capsys.readouterr().out
    assert "answer_f1" not in read_results(tmp_path / "out")["q0"]


def test_faults_never_lose_an_item(tmp_path: Path) -> None:
    reference, responses = write_answered(tmp_path, 20)
    faults = Faults(rate_limit=0.2, server_error=0.1, malformed=0.1)
    with JudgeServer(faults=faults, seed=3) as server:
        config = write_judge_config(tmp_path, server.url, max_retries=8)
        out = tmp_path / "out"
        assert evaluate_cli(reference, responses, "-c", config, "-o", out, "-q") == 0
        assert server.count(outcome="rate_limit") > 0
    results = read_results(out)
    assert len(results) == 20
    for result in results.values():
        assert ("answer_f1" in result) != ("answer_eval_error" in result)
        assert ("answer_relevance" in result) != ("answer_relevance_error" in result)
    run = yaml.safe_load((out / "run.yaml").read_text())
    assert run["llm"]["retries"] > 0


def test_answer_correctness_tsv_in_input_order(tmp_path: Path) -> None:
    rows = [(f"Which transformers are in S{i}?", f"T{i}a, T{i}b", f"T{i}a") for i in range(12)]
    rows[5] = ("Which?", "T5a", "")  # a blank answer is an error on its row only
    source, target = tmp_path / "in.tsv", tmp_path / "out.tsv"
    write_tsv(source, rows)
    with JudgeServer(latency_s=0.02) as server:
        config = write_judge_config(tmp_path, server.url, max_concurrency=4)
        code = answer_correctness_main(["-i", str(source), "-o", str(target), "-c", str(config)])
        assert code == 0
        assert 1 < server.max_in_flight <= 4
    with target.open() as stream:
        judged = list(csv.DictReader(stream, delimiter="\t"))
    assert [row["Question"] for row in judged] == [row[0] for row in rows]
    assert judged[0]["answer_recall"] == "0.5"
    assert judged[0]["answer_precision"] == "1.0"
    assert judged[0]["answer_eval_error"] == ""
    assert "blank" in judged[5]["answer_eval_error"]
    assert judged[5]["answer_f1"] == ""


def test_answer_correctness_tsv_without_the_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.tsv"
    source.write_text("question\tanswer\nq\ta\n")
    code = answer_correctness_main(["-i", str(source), "-o", str(tmp_path / "out.tsv")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"answer-correctness: error: {source}: line 1: missing column(s)")


def test_answer_correctness_tsv_with_only_its_header_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, target = tmp_path / "in.tsv", tmp_path / "out.tsv"
    source.write_text("Question\tReference answer\tActual answer\n")
    code = answer_correctness_main(["-i", str(source), "-o", str(target)])
    assert code == 2
    assert capsys.readouterr().err == (
        f"answer-correctness: error: {source}: no answers to judge: the file has its header "
        "and no row\n"
    )
    assert not target.exists()


def test_answer_correctness_tsv_that_is_not_utf8_names_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.tsv"
    source.write_bytes(b"Question\tReference answer\tActual answer\nWho?\tAl\xe9\tAl\n")
    code = answer_correctness_main(["-i", str(source), "-o", str(tmp_path / "out.tsv")])
    assert code == 2
    err = capsys.readouterr().err
    assert err == (
        f"answer-correctness: error: {source}: line 2, column 8: not UTF-8 text (byte 0xe9); "
        "it looks like Windows-1252/Latin-1: re-save the file as UTF-8\n"
    )
    assert not (tmp_path / "out.tsv").exists()


def test_a_reply_that_is_not_json_fails_its_row_only(tmp_path: Path) -> None:
    rows = [(f"Which transformers are in S{i}?", f"T{i}a", f"T{i}a") for i in range(6)]
    source, target = tmp_path / "in.tsv", tmp_path / "out.tsv"
    write_tsv(source, rows)
    with JudgeServer(faults=Faults(html=0.5), seed=1) as server:
        config = write_judge_config(tmp_path, server.url, max_retries=0)
        assert (
            answer_correctness_main(["-i", str(source), "-o", str(target), "-c", str(config)]) == 0
        )
        html = server.count(outcome="html")
    with target.open() as stream:
        judged = list(csv.DictReader(stream, delimiter="\t"))
    failed = [row for row in judged if row["answer_eval_error"]]
    assert 0 < html == len(failed) < len(rows)
    assert all("not a chat completion" in row["answer_eval_error"] for row in failed)
    assert all(row["answer_f1"] == "1.0" for row in judged if not row["answer_eval_error"])


def test_header_secrets_in_request_parameters_are_masked(
    tmp_path: Path, server: JudgeServer
) -> None:
    reference, responses = write_answered(tmp_path, 1)
    config = tmp_path / "config.yaml"
    settings = yaml.safe_load(write_judge_config(tmp_path, server.url).read_text())
    settings["llm"]["generation"]["extra_headers"] = {"api-key": PLANTED_KEY}
    settings["llm"]["generation"]["top_k"] = 40  # not an SDK keyword: sent in the body
    config.write_text(yaml.safe_dump(settings))
    out = tmp_path / "out"
    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "-q") == 0
    chat = next(r for r in server.requests if r.path.endswith("/chat/completions"))
    assert chat.headers["api-key"] == PLANTED_KEY
    assert chat.body["top_k"] == 40
    assert "answer_f1" in read_results(out)["q0"]
    run = yaml.safe_load((out / "run.yaml").read_text())
    assert run["config"]["llm"]["generation"]["extra_headers"] == {"api-key": "**********"}
    assert run["config"]["llm"]["generation"]["top_k"] == 40
    for path in out.iterdir():
        assert PLANTED_KEY.encode() not in path.read_bytes()


def test_the_report_of_a_judged_run_shows_the_judge_cost_and_reasons(
    tmp_path: Path, server: JudgeServer
) -> None:
    reference, responses = write_answered(tmp_path, 3)
    config = write_judge_config(tmp_path, server.url)
    assert evaluate_cli(reference, responses, "-c", config, "-o", tmp_path / "out", "-q") == 0
    page = (tmp_path / "out" / "report.html").read_text()
    run = yaml.safe_load((tmp_path / "out" / "run.yaml").read_text())
    judge = page[page.index('id="judge"') : page.index('id="worst"')]
    assert f'<td>judge calls made</td><td class="num">{run["llm"]["calls"]}</td>' in judge
    assert run["llm"]["calls"] == 10  # one embeddings request confirms the dimension
    for metric in run["llm"]["by_metric"]:
        assert f"<td>{metric}</td>" in judge
    assert "answer_correctness_cost" not in judge  # the per-item sums are named by metric
    results = read_results(tmp_path / "out")
    reason = results["q0"]["answer_correctness_reason"]
    assert reason
    worst = page[page.index('id="worst"') : page.index('id="settings"')]
    # The judge's reason is escaped like any other text from outside.
    from markupsafe import escape

    assert str(escape(reason)) in worst
    assert "answer_f1" in worst
    assert PLANTED_KEY not in page


LONG_TEMPLATE = (
    "list_all_substations_that_are_connected_via_an_ac_line_or_a_dc_line_to_substation_X"
)


def write_inputs_with_steps(folder: Path) -> tuple[Path, Path]:
    """Questions with a reference answer and a reference SPARQL step, in a template with a
    long id, and responses with answers and steps."""
    rows = json.dumps({"head": {"vars": ["s"]}, "results": {"bindings": []}})
    step = {"name": "sparql_query", "output": rows, "output_media_type": SPARQL_JSON}
    questions = [
        {
            "id": f"q{i}",
            "question_text": f"Which transformers are in substation S{i}?",
            "reference_answer": f"T{i}a, T{i}b",
            "reference_steps": [[step]],
        }
        for i in range(3)
    ]
    reference = folder / "reference.yaml"
    reference.write_text(yaml.safe_dump([{"template_id": LONG_TEMPLATE, "questions": questions}]))
    responses = folder / "responses.jsonl"
    actual = {"name": "sparql_query", "status": "success", "output": rows}
    lines = [
        json.dumps(
            {
                "question_id": f"q{i}",
                "actual_answer": f"Substation S{i} has T{i}a.",
                "actual_steps": [actual],
            }
        )
        for i in range(3)
    ]
    responses.write_text("\n".join(lines) + "\n")
    return reference, responses


def table_rows(printed: str) -> dict[str, list[str]]:
    """The rows of the printed tables by their first cell (a name split over two lines would
    show up as two rows)."""
    return {line.split()[0]: line.split()[1:] for line in printed.splitlines() if line.strip()}


@pytest.mark.parametrize("columns", [None, "60"])
def test_a_ci_log_wraps_no_name_and_has_no_control_codes(
    tmp_path: Path,
    server: JudgeServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    columns: str | None,
) -> None:
    """Standard output is not a terminal here, as in a CI job, whether COLUMNS is set or not
    (the tables take the width they need)."""
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    reference, responses = write_inputs_with_steps(tmp_path)
    config = write_judge_config(tmp_path, server.url)
    out = tmp_path / "out"
    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "--progress") == 0
    printed = capsys.readouterr()
    assert "\x1b" not in printed.out + printed.err
    rows = table_rows(printed.out)
    aggregates = yaml.safe_load((out / "aggregates.yaml").read_text())
    numeric = [
        key
        for key, value in aggregates["micro"].items()
        if isinstance(value, dict) and "mean" in value and not key.endswith("_cost")
    ]
    assert "steps_score" in numeric and "answer_f1" in numeric
    for key in numeric:  # every metric name whole, with all six statistics
        assert len(rows[key]) == 6, key
    header = rows["template"]
    assert header[:4] == ["ok", "errors", "missing", "steps_score"]
    assert {"answer_f1", "answer_relevance"} <= set(header)
    assert rows[LONG_TEMPLATE][:4] == ["3", "0", "0", "1.000"]
    assert "in aggregates.yaml" not in printed.out  # every headline metric has its column


def test_a_judge_leaves_steps_score_in_a_narrow_template_table(
    tmp_path: Path, server: JudgeServer
) -> None:
    reference, responses = write_inputs_with_steps(tmp_path)
    config = write_judge_config(tmp_path, server.url)
    assert evaluate_cli(reference, responses, "-c", config, "-o", tmp_path / "out") == 0
    console = Console(
        file=io.StringIO(), width=80, force_terminal=True, color_system=None, markup=False
    )
    print_summary(console, load_run(tmp_path / "out").aggregates)
    assert isinstance(console.file, io.StringIO)
    printed = console.file.getvalue()  # as an 80-column terminal shows it
    header = table_rows(printed)["template"]
    assert header[3:] == ["steps_score", "answer_f1"]  # the judge's columns after it
    title = next(line for line in printed.splitlines() if line.startswith("Per template"))
    assert "answer_relevance" in title and "steps_score" not in title


def test_answer_correctness_tsv_has_plain_decimals(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    source, target = tmp_path / "in.tsv", tmp_path / "out.tsv"
    write_tsv(source, [("Which transformers are in S1?", "T1a, T1b", "T1a")])
    config = write_judge_config(tmp_path, server.url)
    assert answer_correctness_main(["-i", str(source), "-o", str(target), "-c", str(config)]) == 0
    assert capsys.readouterr().out.startswith(f"1 answer judged (0 failed); results in {target}")
    with target.open() as stream:
        [judged] = list(csv.DictReader(stream, delimiter="\t"))
    cost = judged["answer_correctness_cost"]
    assert 0 < float(cost) < 0.0001  # small enough that str() would write an exponent
    assert re.fullmatch(r"0\.0000\d{1,12}", cost), cost  # no exponent, no float noise
    assert judged["answer_recall"] == "0.5"
    assert judged["answer_f1"] == "0.666666666667"  # 2/3 to 12 significant digits
