"""A run that could not make every call it planned: a judge endpoint that is down, or the cost
limit. It exits 3 with one line saying what is missing, and every metric it attempted shows
its failures in the summary, the aggregates and the report; ``--resume`` finishes it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_eval.cli import answer_correctness_main, main
from graphrag_eval.cli.errors import EXIT_INCOMPLETE
from graphrag_eval.llm.client import BREAKER_FAILURES, BREAKER_UNUSABLE

from builders import (
    evaluate_cli,
    failing_metric,
    read_records,
    write_answered,
    write_judge_config,
    write_tsv,
)
from judge_server import Faults, JudgeServer, closed_port_url

pytestmark = pytest.mark.usefixtures("no_real_key")

QUESTIONS = 6
MAX_CONCURRENCY = 16


def write_inputs(folder: Path, count: int = QUESTIONS) -> tuple[Path, Path]:
    """Questions with reference answers and responses with answers: correctness and
    relevance apply to each."""
    return write_answered(folder, count, "Which units are in S{i}?", "U{i}", "U{i}")


def write_config(
    folder: Path, url: str, sections: dict[str, Any] | None = None, **llm: Any
) -> Path:
    settings = {"max_concurrency": MAX_CONCURRENCY, "backoff_initial_s": 0.05, **llm}
    return write_judge_config(folder, url, sections, **settings)


def test_a_dead_judge_fails_fast_exits_3_and_every_metric_shows_its_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = closed_port_url()
    reference, responses = write_inputs(tmp_path)
    out = tmp_path / "out"

    code = evaluate_cli(reference, responses, "-c", write_config(tmp_path, url), "-o", out)

    printed = capsys.readouterr()
    assert code == EXIT_INCOMPLETE
    # One line saying what is missing and how to finish.
    [line] = printed.err.strip().splitlines()
    assert line.startswith(f"evaluation incomplete: 12 metric values on {QUESTIONS} questions")
    assert f"judge at {url} unreachable (connection failed" in line
    assert line.endswith("--resume")
    # Every call stopped once the breaker opened: no minutes of retries.
    run = yaml.safe_load((out / "run.yaml").read_text())
    assert run["llm"]["requests"] <= BREAKER_FAILURES + 2 * MAX_CONCURRENCY
    reason = f"judge at {url} unreachable"
    [unusable] = run["llm"]["unusable_endpoints"]
    assert unusable.startswith(reason)
    for result in read_records(out):
        assert result["answer_eval_error"].startswith(reason)
        assert result["answer_relevance_error"].startswith(reason)
    # The answer metrics are in the aggregates' coverage with their failures...
    coverage = yaml.safe_load((out / "aggregates.yaml").read_text())["micro"]["coverage"]
    for key in ("answer_f1", "answer_recall", "answer_precision", "answer_relevance"):
        assert coverage[key]["scored"] == 0
        assert coverage[key]["failed"] == QUESTIONS
        assert coverage[key]["failed_reason"].startswith(reason)
    # ... in the summary table and its failure line ...
    assert re.search(r"answer_f1 +- .* 0/6 \(6 failed\)", printed.out)
    assert f"answer_f1, answer_relevance 0/6, 6 failed: {reason}" in printed.out.replace(
        "answer_recall, answer_precision, ", ""
    )
    assert "12 metric values failed" in printed.out
    # ... and in the report's coverage table.
    page = (out / "report.html").read_text()
    assert '<tr><td>answer_f1</td><td class="num">0</td><td class="num">6</td>' in page
    assert "endpoint not usable" in page


def test_resume_finishes_the_run_once_the_judge_is_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = closed_port_url()
    reference, responses = write_inputs(tmp_path)
    config = write_config(tmp_path, url)
    out = tmp_path / "out"
    args = (reference, responses, "-c", config, "-o", out, "-q")
    assert evaluate_cli(*args) == EXIT_INCOMPLETE

    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with JudgeServer(port=port):
        assert evaluate_cli(*args, "--resume") == 0

    assert capsys.readouterr().err.count("evaluation incomplete") == 1
    for result in read_records(out):
        assert "answer_eval_error" not in result
        assert "answer_f1" in result
        assert "answer_relevance" in result


def test_the_resume_line_of_a_run_made_with_overwrite_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--overwrite and --resume cannot go together: the printed line drops --overwrite, so
    running it as printed finishes the run."""
    url = closed_port_url()
    reference, responses = write_inputs(tmp_path)
    config = write_config(tmp_path, url)
    out = tmp_path / "out"
    args = ["evaluate", str(reference), str(responses), "-c", str(config), "-o", str(out)]
    assert main([*args, "-q", "--overwrite"]) == EXIT_INCOMPLETE
    [line] = capsys.readouterr().err.strip().splitlines()
    command = shlex.split(line.split("finish the run with: ", 1)[1])
    assert "--overwrite" not in command and command[-1] == "--resume"
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with JudgeServer(port=port):
        assert main(command[1:]) == 0
    assert "answer_f1" in read_records(out)[0]


def test_a_run_the_cost_limit_cut_short_says_so_and_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path)
    with JudgeServer() as server:
        config = write_config(tmp_path, server.url, max_concurrency=1)
        args = ("-c", config, "-o", tmp_path / "out", "-q", "--max-cost", "0.000001")
        assert evaluate_cli(reference, responses, *args) == EXIT_INCOMPLETE

    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("evaluation incomplete: ")
    assert "the cost limit of $1e-06 was reached" in line
    assert line.endswith("--resume")


def test_a_complete_run_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reference, responses = write_inputs(tmp_path)
    with JudgeServer() as server:
        config = write_config(tmp_path, server.url)
        assert evaluate_cli(reference, responses, "-c", config, "-o", tmp_path / "out") == 0
    printed = capsys.readouterr()
    assert "incomplete" not in printed.err
    assert "failed" not in printed.out


def test_answer_correctness_with_a_dead_judge_exits_3_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = closed_port_url()
    answers = tmp_path / "answers.tsv"
    write_tsv(answers, [(f"Which units are in S{i}?", f"U{i}", f"U{i}") for i in range(3)])
    judged = tmp_path / "judged.tsv"

    code = answer_correctness_main(
        ["-i", str(answers), "-o", str(judged), "-c", str(write_config(tmp_path, url))]
    )

    printed = capsys.readouterr()
    assert code == EXIT_INCOMPLETE
    [line] = printed.err.strip().splitlines()
    assert line.startswith("judging incomplete: 3 answers of 3 not judged (judge at ")
    assert f"{url} unreachable (connection failed" in line
    assert len(judged.read_text().splitlines()) == 4  # the header and every row, each failed


# ------------------------------------------------------------------ a judge of no use

UNUSABLE = {
    "an HTML page with 200": (Faults(html=1.0), "the judge's reply is not a chat completion"),
    "JSON that is not the API's, with 200": (
        Faults(foreign_json=1.0),
        'the judge\'s reply is not a chat completion (no "choices")',
    ),
    "a 302 redirect": (Faults(redirect=1.0), "302 Error code: 302 - redirected to "),
    "a 301 redirect": (
        Faults(redirect=1.0, redirect_status=301),
        "301 Error code: 301 - redirected to ",
    ),
    "a 502 on every request": (Faults(bad_gateway=1.0), "502 Error code: 502"),
}


@pytest.mark.parametrize(("faults", "what"), UNUSABLE.values(), ids=list(UNUSABLE))
def test_evaluate_with_a_judge_of_no_use_exits_3_after_few_requests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], faults: Faults, what: str
) -> None:
    questions = 20
    reference, responses = write_inputs(tmp_path, questions)
    out = tmp_path / "out"
    with JudgeServer(faults=faults) as server:
        config = write_config(tmp_path, server.url)
        code = evaluate_cli(reference, responses, "-c", config, "-o", out)
        requests = server.count()

    printed = capsys.readouterr()
    assert code == EXIT_INCOMPLETE
    [line] = printed.err.strip().splitlines()
    assert line.startswith(f"evaluation incomplete: 40 metric values on {questions} questions")
    assert what in line
    assert line.endswith("--resume")
    # Unusable replies in a row open the breaker: no minutes of retries (each of the 40 judge
    # calls would be sent 7 times).
    assert requests <= BREAKER_UNUSABLE + MAX_CONCURRENCY
    results = read_records(out)
    assert [result["question_id"] for result in results] == [f"q{i}" for i in range(questions)]
    for result in results:
        assert "answer_eval_error" in result
        assert "answer_relevance_error" in result
    run = yaml.safe_load((out / "run.yaml").read_text())
    [unusable] = run["llm"]["unusable_endpoints"]
    assert f"judge at {server.url} gives no usable reply ({what}" in unusable


@pytest.mark.parametrize(("faults", "what"), UNUSABLE.values(), ids=list(UNUSABLE))
def test_answer_correctness_with_a_judge_of_no_use_exits_3_with_every_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], faults: Faults, what: str
) -> None:
    rows = 30
    answers = tmp_path / "answers.tsv"
    write_tsv(answers, [(f"Which units are in S{i}?", f"U{i}", f"U{i}") for i in range(rows)])
    judged = tmp_path / "judged.tsv"
    with JudgeServer(faults=faults) as server:
        config = write_config(tmp_path, server.url)
        code = answer_correctness_main(["-i", str(answers), "-o", str(judged), "-c", str(config)])
        requests = server.count()

    printed = capsys.readouterr()
    assert code == EXIT_INCOMPLETE
    [line] = printed.err.strip().splitlines()
    assert line.startswith(f"judging incomplete: {rows} answers of {rows} not judged (")
    assert what in line
    assert requests <= BREAKER_UNUSABLE + MAX_CONCURRENCY
    written = judged.read_text().splitlines()
    assert len(written) == rows + 1  # the header and every row, each failed


def test_a_judge_whose_every_reply_is_malformed_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Replies of the API (JSON chat completions), so no breaker opens: every value fails
    # because no reply has the form asked for, and that is no complete run either.
    reference, responses = write_inputs(tmp_path)
    out = tmp_path / "out"
    with JudgeServer(faults=Faults(malformed=1.0)) as server:
        config = write_config(tmp_path, server.url)
        code = evaluate_cli(reference, responses, "-c", config, "-o", out, "-q")

    assert code == EXIT_INCOMPLETE
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"evaluation incomplete: 12 metric values on {QUESTIONS} questions")
    assert "(answer_correctness failed on every question (malformed judge reply" in line
    assert "; answer_relevance failed on every question (malformed judge reply" in line
    assert line.endswith("--resume")
    assert len(read_records(out)) == QUESTIONS


def test_a_judge_that_fails_some_values_only_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path)
    with JudgeServer(faults=Faults(server_error=0.3), seed=3) as server:
        config = write_config(tmp_path, server.url, max_retries=0)
        code = evaluate_cli(reference, responses, "-c", config, "-o", tmp_path / "out")
        failed = server.count(outcome="server_error")

    printed = capsys.readouterr()
    assert 0 < failed < 2 * QUESTIONS
    assert code == 0
    assert "metric values failed" in printed.out
    assert "incomplete" not in printed.err


def test_a_metric_that_failed_on_every_question_for_an_internal_reason_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path)
    out = tmp_path / "out"
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"metrics": ["broken"]}))

    with failing_metric("broken", "a bug"):
        code = evaluate_cli(reference, responses, "-c", config, "-o", out, "-q")

    assert code == EXIT_INCOMPLETE
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line == (
        f"evaluation incomplete: 6 metric values on {QUESTIONS} questions not computed (broken "
        "failed on every question (internal error in broken: RuntimeError('a bug'))); when "
        "that is fixed, run the command again (without --resume)"
    )
    assert all(r["broken_error"].startswith("internal error") for r in read_records(out))


# ------------------------------------------------------------------------- cost limit


def run_yaml(out: Path) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((out / "run.yaml").read_text())
    return document


def test_the_cost_limit_holds_with_many_calls_in_flight(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path, 20)
    # Replies take a while, so that many calls are in flight at once (each reserves its
    # estimated cost before it is sent; before that, all of them started under the limit).
    with JudgeServer(latency_s=0.05) as server:
        config = write_config(tmp_path, server.url)
        args = (reference, responses, "-c", config, "-q", "--no-cache")
        assert evaluate_cli(*args, "-o", tmp_path / "full") == 0
        full = run_yaml(tmp_path / "full")["llm"]
        limit = round(full["cost_usd"] / 2, 8)

        code = evaluate_cli(*args, "-o", tmp_path / "out", "--max-cost", str(limit))

    assert code == EXIT_INCOMPLETE
    assert f"the cost limit of ${limit:g} was reached" in capsys.readouterr().err
    llm = run_yaml(tmp_path / "out")["llm"]
    assert 0 < llm["cost_usd"] <= limit
    assert (llm["budget_reached"], llm["budget_exceeded"]) == (True, False)
    assert len(read_records(tmp_path / "out")) == 20


def test_a_reply_longer_than_its_estimate_is_said_to_exceed_the_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A reply of about 1,000 tokens where 300 are reserved (no max_tokens): the one call the
    # limit lets through costs more than all of it.
    long_reason = "the candidate names the unit " * 140
    reference, responses = write_inputs(tmp_path, 1)
    with JudgeServer(responder=lambda body: f"1\t1\t1\t{long_reason}") as server:
        config = write_config(tmp_path, server.url, {"answer_relevance": {"enabled": False}})
        out = tmp_path / "out"
        code = evaluate_cli(reference, responses, "-c", config, "-o", out, "--max-cost", "0.0003")

    printed = capsys.readouterr()
    assert code == 0, printed.err  # every call was made: the run is complete
    llm = run_yaml(out)["llm"]
    assert llm["cost_usd"] > 0.0003
    assert (llm["budget_reached"], llm["budget_exceeded"]) == (False, True)
    assert "cost limit of $0.0003 exceeded: $0.000" in printed.out
    page = (out / "report.html").read_text()
    assert "cost limit exceeded" in page
    assert "by replies longer than estimated (limit $0.0003)" in page
