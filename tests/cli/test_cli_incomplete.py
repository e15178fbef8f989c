"""A run that could not make every call it planned: a judge endpoint that is down, or the cost
limit. It exits 3 with one line saying what is missing, and every metric it attempted shows
its failures in the summary, the aggregates and the report; ``--resume`` finishes it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_eval.cli import answer_correctness_main, main
from graphrag_eval.cli.errors import EXIT_INCOMPLETE
from graphrag_eval.llm.client import BREAKER_FAILURES

from builders import write_tsv
from judge_server import JudgeServer, closed_port_url

QUESTIONS = 6
MAX_CONCURRENCY = 16


@pytest.fixture(autouse=True)
def _no_real_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GRAPHRAG_EVAL_CACHE", raising=False)


def write_inputs(folder: Path) -> tuple[Path, Path]:
    """Questions with reference answers and responses with answers: correctness and
    relevance apply to each."""
    questions = [
        {"id": f"q{i}", "question_text": f"Which units are in S{i}?", "reference_answer": f"U{i}"}
        for i in range(QUESTIONS)
    ]
    reference = folder / "reference.yaml"
    reference.write_text(yaml.safe_dump([{"template_id": "t", "questions": questions}]))
    responses = folder / "responses.jsonl"
    lines = [json.dumps({"question_id": f"q{i}", "actual_answer": f"U{i}"}) for i in range(6)]
    responses.write_text("\n".join(lines) + "\n")
    return reference, responses


def write_config(folder: Path, url: str, **llm: Any) -> Path:
    settings = {
        "generation": {"provider": "openai-compatible", "base_url": url},
        "embedding": {"provider": "openai-compatible", "base_url": url},
        "cache": {"path": str(folder / "cache.sqlite3")},
        "max_concurrency": MAX_CONCURRENCY,
        "backoff_initial_s": 0.05,
        **llm,
    }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump({"llm": settings}))
    return path


def read_results(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_a_dead_judge_fails_fast_exits_3_and_every_metric_shows_its_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = closed_port_url()
    reference, responses = write_inputs(tmp_path)
    out = tmp_path / "out"

    code = main(["evaluate", str(reference), str(responses), "-c", str(write_config(tmp_path, url)),
                 "-o", str(out)])  # fmt: skip

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
    for result in read_results(out):
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
    args = ["evaluate", str(reference), str(responses), "-c", str(config), "-o", str(out), "-q"]
    assert main(args) == EXIT_INCOMPLETE

    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with JudgeServer(port=port):
        assert main([*args, "--resume"]) == 0

    assert capsys.readouterr().err.count("evaluation incomplete") == 1
    for result in read_results(out):
        assert "answer_eval_error" not in result
        assert "answer_f1" in result
        assert "answer_relevance" in result


def test_a_run_the_cost_limit_cut_short_says_so_and_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path)
    with JudgeServer() as server:
        config = write_config(tmp_path, server.url, max_concurrency=1)
        args = ["evaluate", str(reference), str(responses), "-c", str(config),
                "-o", str(tmp_path / "out"), "-q", "--max-cost", "0.000001"]  # fmt: skip
        assert main(args) == EXIT_INCOMPLETE

    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("evaluation incomplete: ")
    assert "the cost limit of $1e-06 was reached" in line
    assert line.endswith("--resume")


def test_a_complete_run_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reference, responses = write_inputs(tmp_path)
    with JudgeServer() as server:
        config = write_config(tmp_path, server.url)
        args = ["evaluate", str(reference), str(responses), "-c", str(config),
                "-o", str(tmp_path / "out")]  # fmt: skip
        assert main(args) == 0
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
