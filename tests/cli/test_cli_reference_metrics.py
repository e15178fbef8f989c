"""The command line with the metrics of the metrics reference (docs/metrics.md) selected by
``metrics:``: the dry-run plan per selected metric, one-line config errors, and the class and
grade counts of a run, against the local OpenAI-compatible server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_eval.cli import main

from judge_server import JudgeServer

ANSWERS = ["T0a and T0b", "I don't know", "T2a"]


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GRAPHRAG_EVAL_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("COLUMNS", "160")  # no metric name folded over two table lines


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer() as running:
        yield running


def write_inputs(folder: Path) -> tuple[Path, Path]:
    """Three questions with reference answers; responses with an answer (the second one
    uncertain) and one retrieved context each."""
    questions = [
        {
            "id": f"q{i}",
            "question_text": f"Which transformers are in substation S{i}?",
            "reference_answer": f"T{i}a, T{i}b",
        }
        for i in range(len(ANSWERS))
    ]
    reference = folder / "reference.yaml"
    reference.write_text(yaml.safe_dump([{"template_id": "t", "questions": questions}]))
    responses = folder / "responses.jsonl"
    lines = [
        json.dumps(
            {
                "question_id": f"q{i}",
                "actual_answer": answer,
                "retrieved_contexts": [f"T{i}a is in substation S{i}."],
            }
        )
        for i, answer in enumerate(ANSWERS)
    ]
    responses.write_text("\n".join(lines) + "\n")
    return reference, responses


def write_config(folder: Path, server: JudgeServer | None, **settings: Any) -> Path:
    config: dict[str, Any] = dict(settings)
    if server is not None:
        config["llm"] = {
            "generation": {"provider": "openai-compatible", "base_url": server.url},
            "embedding": {"provider": "openai-compatible", "base_url": server.url},
            "cache": {"path": str(folder / "cache.sqlite3")},
        }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def evaluate(*args: str | Path) -> int:
    return main(["evaluate", *(str(arg) for arg in args)])


def planned_calls(printed: str) -> dict[str, int]:
    """Metric -> planned calls, from the rows of the dry-run table."""
    rows = {}
    for line in printed.splitlines():
        cells = [cell.strip() for cell in line.split("│") if cell.strip()]
        if len(cells) >= 2 and cells[1].replace(",", "").isdigit():
            rows[cells[0]] = int(cells[1].replace(",", ""))
    return rows


def test_dry_run_plans_the_selected_metrics_only_and_calls_nothing(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path)
    metrics = ["factual_accuracy", "ragas_faithfulness", "answer_classification"]
    config = write_config(tmp_path, server, metrics=metrics)
    out = tmp_path / "out"

    code = evaluate(reference, responses, "-c", config, "-o", out, "--dry-run")

    assert code == 0
    assert server.count() == 0
    assert not out.exists()
    assert planned_calls(capsys.readouterr().out) == {
        "answer_classification": 2,  # "I don't know" needs no judge call
        "factual_accuracy": 3,
        "ragas_faithfulness": 6,  # the claims, then their verification, per item
        "total": 11,
    }


def test_dry_run_of_ragas_score_plans_its_four_components(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path)
    config = write_config(tmp_path, server, metrics=["ragas_score"])

    assert evaluate(reference, responses, "-c", config, "--dry-run") == 0

    planned = planned_calls(capsys.readouterr().out)
    assert set(planned) == {
        "ragas_faithfulness",
        "ragas_context_precision",
        "ragas_context_recall",
        "ragas_answer_relevance",
        "total",
    }
    assert planned["ragas_context_precision"] == 3
    assert planned["ragas_context_recall"] == 6
    assert server.count() == 0


def test_dry_run_without_a_metrics_list_plans_only_the_seed_metrics(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path)
    config = write_config(tmp_path, server)

    assert evaluate(reference, responses, "-c", config, "--dry-run") == 0

    assert set(planned_calls(capsys.readouterr().out)) == {
        "answer_correctness",
        "answer_relevance",
        "total",
    }
    assert server.count() == 0


@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry-run"])
def test_selected_metric_without_a_judge_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], dry_run: bool
) -> None:
    reference, responses = write_inputs(tmp_path)
    config = write_config(tmp_path, None, metrics=["factual_accuracy"])
    options = ["--dry-run"] if dry_run else ["-o", str(tmp_path / "out")]

    code = evaluate(reference, responses, "-c", config, *options)

    captured = capsys.readouterr()
    assert code == 2
    assert captured.err == (
        "graphrag-eval: error: metrics: metric 'factual_accuracy' needs an LLM judge "
        "(llm.generation)\n"
    )
    assert not (tmp_path / "out").exists()


def test_unknown_metric_in_the_config_file_exits_2_with_a_suggestion(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path)
    config = write_config(tmp_path, server, metrics=["ragas_scor"])

    code = evaluate(reference, responses, "-c", config, "-o", tmp_path / "out")

    assert code == 2
    assert capsys.readouterr().err == (
        f"graphrag-eval: error: {config}: metrics[0]: unknown metric 'ragas_scor' "
        "(did you mean 'ragas_score'?)\n"
    )
    assert server.count() == 0


def test_run_writes_and_prints_class_counts_and_grades(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path)
    config = write_config(tmp_path, server, metrics=["answer_classification", "factual_accuracy"])
    out = tmp_path / "out"

    assert evaluate(reference, responses, "-c", config, "-o", out) == 0

    micro = yaml.safe_load((out / "aggregates.yaml").read_text())["micro"]
    assert (
        micro["correct_answers_count"],
        micro["wrong_answers_count"],
        micro["dont_know_answers_count"],
    ) == (1, 1, 1)
    # The rule judge: all, none and half of the ground truth stated (consistency 100).
    assert micro["factual_accuracy_grade"] == {"A": 1, "B": 1, "C": 0, "D": 1, "E": 0}
    printed = capsys.readouterr().out
    assert "answer_classification: CORRECT 1, WRONG 1, DON'T KNOW 1" in printed
    assert "factual_accuracy_grade: A 1, B 1, C 0, D 1, E 0" in printed
    assert server.count() == 5  # 3 factual accuracy, 2 classifications


def test_validate_checks_that_selected_metrics_have_their_models(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path)
    config = write_config(tmp_path, None, metrics=["ragas_score"])

    code = main(["validate", str(reference), str(responses), "-c", str(config)])

    assert code == 2
    assert capsys.readouterr().err == (
        "graphrag-eval: error: metrics: metric 'ragas_faithfulness' needs an LLM judge "
        "(llm.generation)\n"
    )
