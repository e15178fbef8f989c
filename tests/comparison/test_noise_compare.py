"""``graphrag-eval compare`` of two runs with judge repeats: the two-level intervals, the
judge's part of them in the text, JSON and HTML outputs, and the verdict (and
``--fail-on-regression``) when the judge's noise swamps a difference (docs/report.md, "Judge
noise in a comparison")."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval.cli import main

QUESTIONS = 24


def record(index: int, repeats: list[float] | None, f1: float) -> dict[str, Any]:
    """Question ``q<index>`` with ``answer_relevance`` the mean of its judge ``repeats``."""
    data: dict[str, Any] = {
        "template_id": f"t{index % 2}",
        "question_id": f"q{index}",
        "question_text": f"question {index}?",
        "status": "success",
        "answer_f1": f1,
    }
    if repeats is not None:
        data["answer_relevance"] = statistics.fmean(repeats)
        data["answer_relevance_repeats"] = repeats
        data["answer_relevance_repeats_std"] = statistics.pstdev(repeats)
    return data


def write_run(folder: Path, records: list[dict[str, Any]]) -> Path:
    folder.mkdir()
    (folder / "results.jsonl").write_text(
        "".join(json.dumps(item) + "\n" for item in records), encoding="utf-8"
    )
    return folder


@pytest.fixture
def noisy_fall(tmp_path: Path) -> tuple[Path, Path]:
    """Every question's relevance falls by exactly 0.05 (the mean of its repeats), but the
    judge's repeats of each are 0.35 apart; answer_f1 falls by 0.1 on every question, with
    no repeats (a deterministic metric)."""
    base = [record(i, [0.1 + i * 0.01, 0.9 + i * 0.01], 0.8) for i in range(QUESTIONS)]
    worse = [record(i, [0.05 + i * 0.01, 0.85 + i * 0.01], 0.7) for i in range(QUESTIONS)]
    return write_run(tmp_path / "a", base), write_run(tmp_path / "b", worse)


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    code = main(["compare", *map(str, args)])
    return code, capsys.readouterr().out


def test_noise_swamps_a_fall_the_one_level_interval_calls_significant(
    noisy_fall: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(capsys, *noisy_fall, "--json")
    assert code == 0
    data = json.loads(out)
    relevance = data["metrics"]["answer_relevance"]
    noise = relevance["noise"]
    # The questions alone: every question fell by 0.05, so the interval is that point...
    assert noise["one_level_ci_low"] == pytest.approx(-0.05)
    assert noise["one_level_ci_high"] == pytest.approx(-0.05)
    # ...but each mean is of 2 repeats 0.8 apart (s^2 = 0.32): the judge's variance of B - A
    # is 2 x 0.32 / 2 / 24, and the two-level interval holds 0.
    assert noise["judge_variance"] == pytest.approx(0.32 / QUESTIONS)
    assert noise["question_variance"] == pytest.approx(0.0)
    assert noise["judge_share"] == pytest.approx(1.0)
    assert noise["narrows_most"] == "repeats"
    assert relevance["ci_low"] < 0 < relevance["ci_high"]
    assert relevance["change"] == "unchanged"
    standard_error = (0.32 / QUESTIONS) ** 0.5
    assert noise["detectable_difference"] == pytest.approx(2.8016 * standard_error, rel=0.05)
    assert noise["power"] == 0.8
    assert (noise["repeats_a"], noise["repeats_b"]) == (2, 2)
    assert data["judge_repeats"]["a"] == 2 and data["judge_repeats"]["b"] == 2
    # A metric without repeats keeps its one-level interval and verdict, and no noise key.
    assert data["metrics"]["answer_f1"]["change"] == "worse"
    assert "noise" not in data["metrics"]["answer_f1"]
    assert data["significant_scores"]["worse"] == ["answer_f1"]
    # Per template too.
    assert "noise" in data["per_template"]["t0"]["answer_relevance"]


def relevance_fall(tmp_path: Path, spread: float) -> tuple[Path, Path]:
    """Only the relevance changes: it falls by 0.05 on every question, its two repeats
    ``spread`` apart."""

    def repeats(i: int, shift: float) -> list[float]:
        return [0.5 - spread / 2 + i * 0.01 - shift, 0.5 + spread / 2 + i * 0.01 - shift]

    base = [record(i, repeats(i, 0.0), 0.8) for i in range(QUESTIONS)]
    worse = [record(i, repeats(i, 0.05), 0.8) for i in range(QUESTIONS)]
    return write_run(tmp_path / "a", base), write_run(tmp_path / "b", worse)


@pytest.mark.parametrize(("spread", "code"), [(0.0, 1), (0.8, 0)])
def test_fail_on_regression_needs_a_fall_beyond_the_judges_noise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spread: float, code: int
) -> None:
    """The same fall of 0.05 on every question is a regression when the judge's repeats agree,
    and none when they are 0.8 apart."""
    runs = relevance_fall(tmp_path, spread)
    found = main(["compare", *map(str, runs), "--fail-on-regression", "--json"])
    captured = capsys.readouterr()
    assert found == code
    change = json.loads(captured.out)["metrics"]["answer_relevance"]
    assert change["difference"] == pytest.approx(-0.05)
    assert change["change"] == ("worse" if code else "unchanged")
    assert change["noise"]["judge_share"] == (1.0 if spread else 0.0)  # agreeing repeats: 0
    if code:  # the gate's message says which interval it read
        assert "two-level interval [-0.05000, -0.05000], 24 pairs, judge noise included" in (
            captured.err
        )


def test_a_run_without_repeats_is_taken_as_exact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run A judged once per question, run B three times: A's values count as exact, and the
    output says so; the judge's variance is B's alone."""
    a = write_run(
        tmp_path / "a",
        [{**record(i, [0.5], 0.8), "answer_relevance_repeats": None} for i in range(QUESTIONS)],
    )
    b = write_run(tmp_path / "b", [record(i, [0.4, 0.6, 0.8], 0.8) for i in range(QUESTIONS)])
    code, out = run(capsys, a, b, "--json")
    data = json.loads(out)
    assert code == 0
    noise = data["metrics"]["answer_relevance"]["noise"]
    assert (noise["repeats_a"], noise["repeats_b"]) == (1, 3)
    assert noise["judge_variance"] == pytest.approx(0.04 / 3 / QUESTIONS)
    assert data["judge_repeats"]["a"] == 1
    assert "run A has no repeats: its values are taken as exact" in data["judge_repeats"]["note"]
    _, text = run(capsys, a, b)
    assert "run A has no repeats: its values are taken as exact" in " ".join(text.split())


def test_text_and_html_show_the_judges_part(
    noisy_fall: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    page = tmp_path / "comparison.html"
    code, out = run(capsys, *noisy_fall, "--html", page)
    assert code == 0
    text = " ".join(out.split())
    assert "Judge repeats per question: up to 2 in A, 2 in B" in text
    assert "significant only when its two-level interval leaves out 0" in text
    table = next(
        line
        for line in out.splitlines()
        if line.strip().startswith("answer_relevance") and "%" in line
    )
    assert "100%" in table and "more repeats" in table and "[-0.0500, -0.0500]" in table
    html = page.read_text(encoding="utf-8")
    assert 'id="noise"' in html and "more repeats" in html and "two-level" in html


def test_python_api_and_dataframe_have_the_noise(tmp_path: Path) -> None:
    """compare_results gives each metric with repeats its noise; comparison_frame one
    ``noise_*`` column per figure, empty for the metrics without repeats."""
    pytest.importorskip("pandas")
    from graphrag_eval import comparison_frame
    from graphrag_eval.comparison.compare import compare_results

    base = [record(i, [0.1 + i * 0.01, 0.9 + i * 0.01], 0.8) for i in range(QUESTIONS)]
    worse = [record(i, [0.05 + i * 0.01, 0.85 + i * 0.01], 0.7) for i in range(QUESTIONS)]
    comparison = compare_results(base, worse)
    noise = comparison.overall["answer_relevance"].noise
    assert noise is not None and noise.judge_share == pytest.approx(1.0)
    assert comparison.overall["answer_f1"].noise is None
    frame = comparison_frame(comparison).set_index(["scope", "template_id", "metric"])
    overall = frame.xs("all", level="scope")
    assert overall.loc[(None, "answer_relevance"), "noise_judge_share"] == pytest.approx(1.0)
    assert (
        overall.loc[(None, "answer_f1"), "noise_judge_share"]
        != overall.loc[(None, "answer_f1"), "noise_judge_share"]
    )  # NaN: no repeats


def test_failed_repeats_are_left_out() -> None:
    """A repeat that failed (null) is not a value: a question keeps the repeats that
    succeeded, and one whose repeats all failed but one counts as exact."""
    from graphrag_eval.comparison.compare import compare_results

    base = [record(i, [0.5, 0.5], 0.8) for i in range(QUESTIONS)]
    worse = [record(i, [0.3, 0.7], 0.8) for i in range(QUESTIONS)]
    for item in worse[: QUESTIONS // 2]:  # half the questions: the 0.7 repeat failed
        item["answer_relevance_repeats"] = [0.3, None]
        item["answer_relevance"] = 0.3
    change = compare_results(base, worse).overall["answer_relevance"]
    assert change.noise is not None
    # Only the 12 questions with both repeats have judge noise: s^2 = 0.08, k = 2.
    assert change.noise.judge_variance == pytest.approx(12 * 0.08 / 2 / QUESTIONS / QUESTIONS)
    assert change.noise.repeats_b == pytest.approx(1.5)
