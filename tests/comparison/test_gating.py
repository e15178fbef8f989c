"""CI gates: thresholds on a run's means (--fail-under, --fail-over) and regressions in a
comparison (--fail-on-regression, --error-samples)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval import compare_results
from graphrag_eval.cli import main
from graphrag_eval.comparison.gates import (
    Threshold,
    check_comparison_thresholds,
    check_known,
    check_regressions,
    check_thresholds,
    parse_threshold,
)
from graphrag_eval.errors import ConfigError
from graphrag_eval.results.aggregates import GroupAggregates
from graphrag_eval.results.aggregation import aggregate
from graphrag_eval.results.from_records import read_records


def overall(records: list[dict[str, Any]]) -> GroupAggregates:
    """The typed aggregates of records over all questions (what the gates read)."""
    return aggregate(read_records(records)).micro


def results(scores: list[float], **extra: Any) -> list[dict[str, Any]]:
    return [
        {
            "template_id": "t",
            "question_id": f"q{i}",
            "status": "success",
            "reference_steps": [[]],
            "steps_score": score,
            **extra,
        }
        for i, score in enumerate(scores)
    ]


def test_parse_threshold() -> None:
    assert parse_threshold("answer_f1=0.7") == Threshold("answer_f1", 0.7)
    assert parse_threshold(" elapsed_sec = 30 ", upper=True) == Threshold("elapsed_sec", 30, True)
    for text, message in (
        ("answer_f1", "expected METRIC=VALUE"),
        ("=0.5", "expected METRIC=VALUE"),
        ("answer_f1=high", "not a number"),
        ("answer_f1=nan", "finite"),
    ):
        with pytest.raises(ValueError, match=message):
            parse_threshold(text)


def test_check_known_suggests_the_closest_metric() -> None:
    check_known([Threshold("steps_score", 1), Threshold("my_output", 1)], extra=["my_output"])
    with pytest.raises(ConfigError, match=r"--fail-under: no metric writes 'answer_f2'.*answer_f1"):
        check_known([Threshold("answer_f2", 0.5)])
    with pytest.raises(ConfigError, match="--fail-over"):
        check_known([Threshold("elapsed_secs", 5, upper=True)])
    with pytest.raises(ConfigError):  # a label, not a number
        check_known([Threshold("factual_accuracy_grade", 1)])


def test_thresholds_on_the_overall_mean() -> None:
    micro = overall(results([0.5, 1.0], elapsed_sec=20.0))
    assert check_thresholds(micro, [Threshold("steps_score", 0.75)]) == []
    assert check_thresholds(micro, [Threshold("steps_score", 0.8)]) == [
        "steps_score: mean 0.75 is under 0.8"
    ]
    assert check_thresholds(micro, [Threshold("elapsed_sec", 20, upper=True)]) == []
    assert check_thresholds(micro, [Threshold("elapsed_sec", 19.5, upper=True)]) == [
        "elapsed_sec: mean 20 is over 19.5"
    ]
    # A gate that cannot be checked does not pass.
    assert check_thresholds(micro, [Threshold("answer_f1", 0.1)]) == [
        "answer_f1: no question has a value, so it cannot meet 0.1"
    ]


def test_a_significant_fall_fails_the_regression_check() -> None:
    before = results([1.0] * 10, input_tokens=100)
    after = results([0.5] * 10, input_tokens=50)
    comparison = compare_results(before, after)
    failures = check_regressions(comparison, ["steps_score", "input_tokens"])
    assert len(failures) == 1  # fewer tokens is better, not a regression
    assert failures[0].startswith("steps_score: significantly worse, 1 -> 0.5 (-0.5, 95% interval")
    assert failures[0].endswith("10 pairs)")
    assert check_regressions(compare_results(after, before), ["steps_score"]) == []


def write_run(folder: Path, rows: list[dict[str, Any]]) -> Path:
    folder.mkdir()
    (folder / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return folder


def test_compare_counts_a_newly_failed_question_as_a_fall_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = results([0.9] * 12)
    after = results([0.9] * 12)
    for row in after[:8]:  # 8 questions now fail: their steps_score is gone
        del row["steps_score"]
        row.update(status="error", error="the agent timed out")
    a = write_run(tmp_path / "a", before)
    b = write_run(tmp_path / "b", after)

    assert main(["compare", str(a), str(b), "--json", "--fail-on-regression"]) == 1
    captured = capsys.readouterr()
    change = json.loads(captured.out)["metrics"]["steps_score"]
    assert change["pairs"] == 12
    assert change["mean_b"] == pytest.approx(0.3)
    assert change["change"] == "worse"
    assert "FAIL steps_score: significantly worse" in captured.err
    assert json.loads(captured.out)["status_changes"] == {
        "success -> error": [f"q{i}" for i in range(8)]
    }

    # Excluded, the failures leave the pairs and the four left are unchanged.
    assert main(["compare", str(a), str(b), "--json", "--error-samples", "exclude"]) == 0
    change = json.loads(capsys.readouterr().out)["metrics"]["steps_score"]
    assert change["pairs"] == 4
    assert change["scored_only_in_a"] == 8
    assert change["change"] == "too few pairs"


def test_fail_over_gates_costs_and_a_significant_rise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "a", results([1.0] * 10, elapsed_sec=10.0))
    b = write_run(tmp_path / "b", results([1.0] * 10, elapsed_sec=12.0))
    assert main(["compare", str(a), str(b), "--fail-over", "elapsed_sec=15"]) == 1
    err = capsys.readouterr().err
    assert "FAIL elapsed_sec: significantly worse, 10 -> 12" in err
    assert main(["compare", str(b), str(a), "--fail-over", "elapsed_sec=15"]) == 0
    capsys.readouterr()
    assert main(["compare", str(b), str(a), "--fail-over", "elapsed_sec=9"]) == 1
    assert "FAIL elapsed_sec: mean 10 is over 9" in capsys.readouterr().err


def test_evaluate_fail_over(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    examples = Path(__file__).parents[2] / "examples"
    args = ["evaluate", str(examples / "reference.yaml"), str(examples / "responses.jsonl")]
    args += ["-o", str(tmp_path / "out"), "--no-report", "--overwrite"]
    assert main([*args, "--fail-over", "elapsed_sec=100"]) == 0
    assert "ok: elapsed_sec mean is at most 100" in capsys.readouterr().out
    assert main([*args, "-q", "--fail-over", "elapsed_sec=10"]) == 1
    assert "FAIL elapsed_sec: mean 16.88 is over 10" in capsys.readouterr().err
    assert main([*args, "-q", "--fail-over", "elapsed_secs=10"]) == 2
    assert "did you mean elapsed_sec" in capsys.readouterr().err


def test_gate_lines_write_token_counts_as_the_tables_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """203,432 tokens, not 2.034e+05; 1,000,000, not 1e+06; a cost without an exponent."""
    examples = Path(__file__).parents[2] / "examples"
    args = ["evaluate", str(examples / "reference.yaml"), str(examples / "responses.jsonl")]
    args += ["-o", str(tmp_path / "out"), "--no-report", "--overwrite"]
    assert main([*args, "--fail-over", "input_tokens=1000000"]) == 0
    assert "ok: input_tokens mean is at most 1,000,000" in capsys.readouterr().out
    assert main([*args, "-q", "--fail-over", "input_tokens=100000"]) == 1
    assert "FAIL input_tokens: mean 203,432 is over 100,000\n" in capsys.readouterr().err
    assert main([*args, "-q", "--fail-under", "total_tokens=1e6"]) == 1
    assert "FAIL total_tokens: mean 203,692 is under 1,000,000\n" in capsys.readouterr().err


# Scales: a threshold must be on its metric's scale -------------------------------------------


@pytest.mark.parametrize(
    ("threshold", "message"),
    [
        (Threshold("ragas_score", 0.8), r"ragas_score=0\.8: ragas_score is on a 0-100 scale"),
        (Threshold("ragas_score", 1), r"0-100 scale, not 0-1 \(did you mean ragas_score=100\?\)"),
        (Threshold("factual_accuracy_percentage", 0.5), "factual_accuracy_percentage=50"),
        (Threshold("ragas_score", 120), "ragas_score is on a 0-100 scale"),
        (Threshold("answer_f1", 80), r"answer_f1 is on a 0-1 scale \(did you mean answer_f1=0\.8"),
        (Threshold("steps_score", 1.5), r"steps_score is on a 0-1 scale$"),  # no odd 0.015
        (Threshold("steps_score", -0.1), "steps_score is on a 0-1 scale"),
        (
            Threshold("elapsed_sec", -1, upper=True),
            "--fail-over elapsed_sec=-1: elapsed_sec cannot",
        ),
        (Threshold("answer_correctness_cost", -0.01, upper=True), "cannot be negative"),
    ],
)
def test_a_threshold_off_its_metrics_scale_is_a_usage_error(
    threshold: Threshold, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        check_known([threshold])


@pytest.mark.parametrize(
    "threshold",
    [
        Threshold("steps_score", 0.8),
        Threshold("answer_f1", 0),
        Threshold("answer_f1", 1),
        Threshold("ragas_score", 80),
        Threshold("ragas_score", 0),
        Threshold("ragas_score", 100),
        Threshold("semantic_similarity_percentage", 1.5),
        Threshold("elapsed_sec", 0.5, upper=True),
        Threshold("input_tokens", 250_000, upper=True),
        Threshold("answer_correctness_cost", 0.002, upper=True),
        Threshold("my_output", 80),  # a custom evaluation output: its scale is not known
        Threshold("my_output", -3),
    ],
)
def test_a_threshold_on_its_metrics_scale_passes(threshold: Threshold) -> None:
    check_known([threshold], extra=["my_output"])


def test_compare_rejects_a_threshold_off_scale_before_writing_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "a", results([0.9] * 10))
    b = write_run(tmp_path / "b", results([0.9] * 10))
    page = tmp_path / "comparison.html"
    code = main(["compare", str(a), str(b), "--html", str(page), "--fail-under", "steps_score=80"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err == (
        "graphrag-eval: error: --fail-under steps_score=80: steps_score is on a 0-1 scale "
        "(did you mean steps_score=0.8?)\n"
    )
    assert not page.exists()


def test_evaluate_rejects_a_threshold_off_scale_before_evaluating(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    examples = Path(__file__).parents[2] / "examples"
    out = tmp_path / "out"
    args = ["evaluate", str(examples / "reference.yaml"), str(examples / "responses.jsonl")]
    code = main([*args, "-o", str(out), "--fail-under", "ragas_score=0.8"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err == (
        "graphrag-eval: error: --fail-under ragas_score=0.8: ragas_score is on a 0-100 scale, "
        "not 0-1 (did you mean ragas_score=80?)\n"
    )
    assert not out.exists()


# Thresholds in a comparison: the mean the comparison shows for run B -------------------------


def newly_failing(scores: list[float], failing: int) -> list[dict[str, Any]]:
    """``results(scores)`` whose first ``failing`` questions now fail (no steps_score)."""
    rows = results(scores)
    for row in rows[:failing]:
        del row["steps_score"]
        row.update(status="error", error="the agent timed out")
    return rows


def test_comparison_thresholds_read_run_bs_mean_in_the_comparison() -> None:
    before = results([0.9] * 10)
    after = newly_failing([0.9] * 10, 2)  # two new failures: 0 each, by default
    comparison = compare_results(before, after)
    assert comparison.overall["steps_score"].mean_b == pytest.approx(0.72)
    # The run's own aggregates (errors excluded by default) would have passed this gate.
    assert check_thresholds(overall(after), [Threshold("steps_score", 0.8)]) == []
    assert check_comparison_thresholds(comparison, [Threshold("steps_score", 0.8)]) == [
        "steps_score: mean 0.72 is under 0.8 (run B, over 10 paired questions)"
    ]
    assert check_comparison_thresholds(comparison, [Threshold("steps_score", 0.72)]) == []
    excluded = compare_results(before, after, error_samples="exclude")
    assert check_comparison_thresholds(excluded, [Threshold("steps_score", 0.8)]) == []


def test_a_comparison_threshold_on_a_metric_without_pairs_fails() -> None:
    comparison = compare_results(results([0.9] * 4), results([0.9] * 4, elapsed_sec=3.0))
    assert comparison.overall["elapsed_sec"].mean_b is None  # scored in run B only
    assert check_comparison_thresholds(comparison, [Threshold("elapsed_sec", 5, upper=True)]) == [
        "elapsed_sec: no question has a value in both runs, so run B's mean cannot meet 5"
    ]
    assert check_comparison_thresholds(comparison, [Threshold("answer_f1", 0.5)]) == [
        "answer_f1: no question has a value in both runs, so run B's mean cannot meet 0.5"
    ]


def test_a_missed_threshold_is_never_printed_as_the_threshold_itself() -> None:
    micro = overall(results([0.69996, 0.69996]))
    assert check_thresholds(micro, [Threshold("steps_score", 0.7)]) == [
        "steps_score: mean 0.69996 is under 0.7"
    ]


def test_compare_fail_under_gates_the_mean_it_prints_for_run_b(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "a", results([0.9] * 10))
    b = write_run(tmp_path / "b", newly_failing([0.9] * 10, 2))
    assert main(["compare", str(a), str(b), "--json", "--fail-under", "steps_score=0.8"]) == 1
    captured = capsys.readouterr()
    shown = json.loads(captured.out)["metrics"]["steps_score"]
    assert shown["mean_b"] == pytest.approx(0.72)
    assert shown["change"] == "unchanged"  # two falls in ten: no significant regression
    assert captured.err == (
        "FAIL steps_score: mean 0.72 is under 0.8 (run B, over 10 paired questions)\n"
    )
    # With the new failures left out, run B's mean is 0.9: the gate passes.
    args = ["compare", str(a), str(b), "--fail-under", "steps_score=0.8"]
    assert main([*args, "--error-samples", "exclude"]) == 0
    assert capsys.readouterr().err == ""
