"""The report and compare commands, the results formats and report.html of evaluate, and the
--fail-under / --fail-on-regression gates, through the command line (no browser: the page
itself is tested in tests/report/test_browser.py)."""

from __future__ import annotations

import inspect
import json
import math
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from graphrag_eval.cli import cli, main
from graphrag_eval.comparison.compare import compare_results
from graphrag_eval.comparison.page import render_comparison
from graphrag_eval.report.html import render_report
from graphrag_eval.results.read_run import load_run

from builders import dataset, question, response, sparql, sparql_ref, step

SCRIPT = "<script>window.__pwned=1</script>"
IMAGE = '<img src=x onerror="window.__pwned=1">'
PLANTED = SCRIPT + IMAGE
CSP = re.compile(
    r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', flags=re.IGNORECASE
)


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def small(tmp_path: Path) -> tuple[Path, Path]:
    """Two questions: q1's steps right (steps_score 1), q2's wrong (0)."""
    reference = tmp_path / "ref.json"
    reference.write_text(
        json.dumps(
            dataset(
                question("q1", [[sparql_ref(sparql(["a"], [["x"]]))]]),
                question("q2", [[sparql_ref(sparql(["a"], [["y"]]))]]),
            )
        )
    )
    responses = tmp_path / "responses.jsonl"
    responses.write_text(
        json.dumps(response("q1", [step("sparql_query", sparql(["a"], [["x"]]), "s")]))
        + "\n"
        + json.dumps(response("q2", [step("sparql_query", sparql(["a"], [["z"]]), "s")]))
        + "\n"
    )
    return reference, responses


@pytest.fixture
def evaluated(capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]) -> Path:
    """The output directory of ``evaluate`` on the two small questions."""
    out = tmp_path / "out"
    code, _, _ = run(capsys, "evaluate", *small, "-o", out, "-q")
    assert code == 0
    return out


def synthetic_results(
    scores: Sequence[float], key: str = "steps_score", templates: int = 4
) -> list[dict[str, Any]]:
    return [
        {
            "template_id": f"t{index % templates}",
            "question_id": f"q{index}",
            "status": "success",
            "reference_steps": [[]],
            key: score,
        }
        for index, score in enumerate(scores)
    ]


def write_run(folder: Path, results: Sequence[dict[str, Any]]) -> Path:
    """A run's output directory with only its results.jsonl."""
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text(
        "".join(json.dumps(result) + "\n" for result in results), encoding="utf-8"
    )
    return folder


def noisy(count: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [round(rng.random(), 3) for _ in range(count)]


def approx_tree(value: Any) -> Any:
    """``value`` with every float inside (dicts, lists) compared with a tolerance."""
    if isinstance(value, dict):
        return {key: approx_tree(item) for key, item in value.items()}
    if isinstance(value, list):
        return [approx_tree(item) for item in value]
    if isinstance(value, float):
        return pytest.approx(value, rel=1e-9, abs=1e-12)
    return value


# evaluate: results formats and report.html ------------------------------------------------


def test_evaluate_writes_the_report_by_default(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]
) -> None:
    out = tmp_path / "out"
    code, stdout, _ = run(capsys, "evaluate", *small, "-o", out)
    assert code == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "steps_score" in page
    assert f"report in {out / 'report.html'}" in stdout


def test_evaluate_no_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]
) -> None:
    out = tmp_path / "out"
    code, stdout, _ = run(capsys, "evaluate", *small, "-o", out, "--no-report")
    assert code == 0
    assert (out / "results.jsonl").is_file()
    assert not (out / "report.html").exists()
    assert "report in" not in stdout


@pytest.mark.parametrize(
    ("results_format", "written", "absent"),
    [
        ("json", "results.json", "results.yaml"),
        ("yaml", "results.yaml", "results.json"),
    ],
)
def test_evaluate_format_writes_the_results_in_that_format_too(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    small: tuple[Path, Path],
    results_format: str,
    written: str,
    absent: str,
) -> None:
    out = tmp_path / "out"
    code, _, _ = run(capsys, "evaluate", *small, "-o", out, "--format", results_format, "-q")
    assert code == 0
    loaded = yaml.safe_load((out / written).read_text(encoding="utf-8"))  # JSON is YAML too
    assert loaded == read_jsonl(out / "results.jsonl")
    assert [item["question_id"] for item in loaded] == ["q1", "q2"]
    assert not (out / absent).exists()


def test_evaluate_default_format_writes_jsonl_only(evaluated: Path) -> None:
    assert (evaluated / "results.jsonl").is_file()
    assert not (evaluated / "results.json").exists()
    assert not (evaluated / "results.yaml").exists()


# report --------------------------------------------------------------------------------


def test_report_of_an_output_directory(capsys: pytest.CaptureFixture[str], evaluated: Path) -> None:
    (evaluated / "report.html").unlink()
    code, stdout, stderr = run(capsys, "report", evaluated)
    assert code == 0
    assert stderr == ""
    assert stdout.strip() == f"report of 2 questions in {evaluated / 'report.html'}"
    page = (evaluated / "report.html").read_text(encoding="utf-8")
    assert "question q2?" in page  # the worst question, listed in full


def test_report_question_writes_one_question_beside_the_results(
    capsys: pytest.CaptureFixture[str], evaluated: Path
) -> None:
    code, stdout, _ = run(capsys, "report", evaluated, "--question", "q2")
    assert code == 0
    page_path = evaluated / "question-q2.html"
    assert stdout.strip() == f"question 'q2' in {page_path}"
    page = page_path.read_text(encoding="utf-8")
    assert "<h1>Question q2</h1>" in page and "question q2?" in page
    assert "question q1?" not in page


def test_report_of_a_results_file_to_another_path(
    capsys: pytest.CaptureFixture[str], evaluated: Path, tmp_path: Path
) -> None:
    target = tmp_path / "elsewhere" / "x.html"
    target.parent.mkdir()
    code, stdout, _ = run(capsys, "report", evaluated / "results.jsonl", "-o", target)
    assert code == 0
    assert target.is_file()
    assert str(target) in stdout
    assert "graphrag-eval report" in target.read_text(encoding="utf-8")


def test_report_worst_0_lists_no_question(
    capsys: pytest.CaptureFixture[str], evaluated: Path, tmp_path: Path
) -> None:
    target = tmp_path / "x.html"
    code, _, _ = run(capsys, "report", evaluated, "-o", target, "--worst", "0")
    assert code == 0
    page = target.read_text(encoding="utf-8")
    assert "<details open>" not in page.split('id="worst"')[1].split('id="settings"')[0]
    assert "question q2?" not in page
    assert "--worst 0" in page


def test_report_on_a_missing_path_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere"
    code, stdout, stderr = run(capsys, "report", missing)
    assert code == 2
    assert stdout == ""
    assert stderr == f"graphrag-eval: error: {missing}: no such file or directory\n"


def test_report_on_an_empty_directory_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, stderr = run(capsys, "report", empty)
    assert code == 2
    assert stderr.startswith(f"graphrag-eval: error: {empty}: no results.jsonl or results.json")
    assert stderr.count("\n") == 1
    assert not (empty / "report.html").exists()


def test_report_skips_a_torn_line_with_a_warning(
    capsys: pytest.CaptureFixture[str], evaluated: Path
) -> None:
    results = evaluated / "results.jsonl"
    torn = results.read_text(encoding="utf-8") + '{"template_id": "t1", "question_id": "q3", "st'
    results.write_text(torn, encoding="utf-8")
    code, stdout, stderr = run(capsys, "report", evaluated)
    assert code == 0
    assert "report of 2 questions" in stdout
    assert stderr.startswith("warning: skipped ")
    assert "line 3" in stderr
    page = (evaluated / "report.html").read_text(encoding="utf-8")
    assert "1 record(s) of the results file could not be read" in page


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_report_of_results_with_a_non_finite_score(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, value: float
) -> None:
    folder = write_run(tmp_path / "run", synthetic_results([value, 0.5, 1.0]))
    code, _, stderr = run(capsys, "report", folder)
    assert code == 0, stderr
    assert (folder / "report.html").is_file()


# --fail-under on evaluate ----------------------------------------------------------------


def test_evaluate_fail_under_met(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]
) -> None:
    args = ("evaluate", *small, "-o", tmp_path / "out", "--fail-under", "steps_score=0.5")
    code, stdout, stderr = run(capsys, *args)
    assert code == 0
    assert re.search(r"^ok: steps_score mean .*0\.5$", stdout, flags=re.MULTILINE)
    assert "FAIL" not in stderr


def test_evaluate_fail_under_not_met(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]
) -> None:
    args = ("evaluate", *small, "-o", tmp_path / "out", "--fail-under", "steps_score=0.9")
    code, stdout, stderr = run(capsys, *args)
    assert code == 1
    assert stderr == "FAIL steps_score: mean 0.5 is under 0.9\n"
    assert "ok:" not in stdout
    # The outputs are written all the same: the gate is read after the run.
    assert (tmp_path / "out" / "report.html").is_file()


def test_evaluate_fail_under_unknown_metric(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]
) -> None:
    args = ("evaluate", *small, "-o", tmp_path / "out", "--fail-under", "steps_scor=0.5")
    code, _, stderr = run(capsys, *args)
    assert code == 2
    assert stderr.count("\n") == 1
    assert "no metric writes 'steps_scor' (did you mean steps_score?)" in stderr
    assert not (tmp_path / "out").exists()  # checked before anything is evaluated


def test_evaluate_fail_under_bad_value(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]
) -> None:
    args = ("evaluate", *small, "-o", tmp_path / "out", "--fail-under", "steps_score=high")
    code, _, stderr = run(capsys, *args)
    assert code == 2
    assert "--fail-under" in stderr
    assert "--fail-under steps_score=high: the threshold 'high' is not a number" in stderr
    assert "Traceback" not in stderr


def test_evaluate_fail_under_a_metric_with_no_values(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]
) -> None:
    # answer_f1 needs a judge; this run has none, so no question has a value.
    args = ("evaluate", *small, "-o", tmp_path / "out", "-q", "--fail-under", "answer_f1=0.1")
    code, _, stderr = run(capsys, *args)
    assert code == 1
    assert stderr == "FAIL answer_f1: no question has a value, so it cannot meet 0.1\n"


# compare ---------------------------------------------------------------------------------


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    """Two runs of 40 questions with noisy steps_score values."""
    a = write_run(tmp_path / "a", synthetic_results(noisy(40, 1)))
    b = write_run(tmp_path / "b", synthetic_results(noisy(40, 2)))
    return a, b


def test_compare_text_has_the_metric_table(
    capsys: pytest.CaptureFixture[str], runs: tuple[Path, Path]
) -> None:
    code, stdout, _ = run(capsys, "compare", *runs)
    assert code == 0
    assert f"A: {runs[0]}" in stdout
    assert f"B: {runs[1]}" in stdout
    assert "40 questions in both runs" in stdout
    assert "paired bootstrap interval" in stdout
    row = next(line for line in stdout.splitlines() if line.lstrip().startswith("steps_score"))
    assert " 40 " in row
    assert re.search(r"better|worse|unchanged", row)


def test_compare_json(capsys: pytest.CaptureFixture[str], runs: tuple[Path, Path]) -> None:
    code, stdout, _ = run(capsys, "compare", *runs, "--json")
    assert code == 0
    data = json.loads(stdout)
    for key in (
        "run_a",
        "run_b",
        "seed",
        "resamples",
        "confidence",
        "paired",
        "only_in_a",
        "only_in_b",
        "status_changes",
        "metrics",
        "per_template",
    ):
        assert key in data, key
    assert data["run_a"] == str(runs[0])
    assert data["paired"] == 40
    assert data["seed"] == 0
    assert set(data["per_template"]) == {"t0", "t1", "t2", "t3"}
    steps = data["metrics"]["steps_score"]
    assert steps["pairs"] == 40
    assert steps["ci_low"] <= steps["difference"] <= steps["ci_high"]


def test_compare_format_yaml_to_a_file(
    capsys: pytest.CaptureFixture[str], runs: tuple[Path, Path], tmp_path: Path
) -> None:
    target = tmp_path / "diff.yaml"
    code, stdout, _ = run(capsys, "compare", *runs, "--format", "yaml", "-o", target)
    assert code == 0
    assert stdout == ""
    as_yaml = yaml.safe_load(target.read_text(encoding="utf-8"))
    code, stdout, _ = run(capsys, "compare", *runs, "--format", "json")
    assert as_yaml == json.loads(stdout)


def test_compare_output_file_format_comes_from_its_extension(
    capsys: pytest.CaptureFixture[str], runs: tuple[Path, Path], tmp_path: Path
) -> None:
    code, stdout, _ = run(capsys, "compare", *runs, "-o", tmp_path / "diff.json")
    assert (code, stdout) == (0, "")
    assert json.loads((tmp_path / "diff.json").read_text(encoding="utf-8"))["paired"] == 40
    code, stdout, _ = run(capsys, "compare", *runs, "-o", tmp_path / "diff.yml")
    assert (code, stdout) == (0, "")
    assert yaml.safe_load((tmp_path / "diff.yml").read_text(encoding="utf-8"))["paired"] == 40
    code, stdout, _ = run(capsys, "compare", *runs, "-o", tmp_path / "diff.txt")
    assert (code, stdout) == (0, "")
    text = (tmp_path / "diff.txt").read_text(encoding="utf-8")
    assert "40 questions in both runs" in text and "\x1b" not in text
    # --format or --json wins over the extension
    code, _, _ = run(capsys, "compare", *runs, "--json", "-o", tmp_path / "diff.txt")
    assert json.loads((tmp_path / "diff.txt").read_text(encoding="utf-8"))["paired"] == 40
    # An extension that names no format is one line, with what to do.
    code, _, stderr = run(capsys, "compare", *runs, "-o", tmp_path / "diff.out")
    assert code == 2
    assert stderr == (
        f"graphrag-eval: error: -o {tmp_path / 'diff.out'}: cannot tell the format from its "
        "extension: name the file .json, .yaml, .yml or .txt, or give --format json|yaml|text\n"
    )
    assert not (tmp_path / "diff.out").exists()
    # -o with .html: the option that writes the page is named.
    code, _, stderr = run(capsys, "compare", *runs, "-o", tmp_path / "diff.html")
    assert code == 2
    assert stderr == (
        f"graphrag-eval: error: -o {tmp_path / 'diff.html'}: the HTML page is written with "
        f"--html {tmp_path / 'diff.html'}; -o writes the comparison as .json, .yaml, .yml or "
        ".txt\n"
    )
    assert not (tmp_path / "diff.html").exists()


def test_compare_usage_error_writes_nothing(
    capsys: pytest.CaptureFixture[str], runs: tuple[Path, Path], tmp_path: Path
) -> None:
    page = tmp_path / "comparison.html"
    code, _, _ = run(capsys, "compare", *runs, "--html", page, "-o", tmp_path / "diff.out")
    assert code == 2
    assert not page.exists()


def test_compare_html(
    capsys: pytest.CaptureFixture[str], runs: tuple[Path, Path], tmp_path: Path
) -> None:
    target = tmp_path / "comparison.html"
    code, stdout, _ = run(capsys, "compare", *runs, "--html", target)
    assert code == 0
    assert f"comparison page in {target}" in stdout
    page = target.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "graphrag-eval comparison" in page
    assert "steps_score" in page


def test_compare_is_reproducible_and_seeded(
    capsys: pytest.CaptureFixture[str], runs: tuple[Path, Path]
) -> None:
    first = run(capsys, "compare", *runs, "--json")[1]
    again = run(capsys, "compare", *runs, "--json")[1]
    other = run(capsys, "compare", *runs, "--json", "--seed", "1")[1]
    assert json.loads(first) == approx_tree(json.loads(again))

    def intervals(text: str) -> list[tuple[float, float]]:
        data = json.loads(text)
        scopes = [data["metrics"], *data["per_template"].values()]
        return [
            (change["ci_low"], change["ci_high"]) for scope in scopes for change in scope.values()
        ]

    assert json.loads(other)["seed"] == 1
    assert intervals(other) != intervals(first)
    # Only the resampling changed, not the means.
    assert json.loads(other)["metrics"]["steps_score"]["difference"] == pytest.approx(
        json.loads(first)["metrics"]["steps_score"]["difference"]
    )


def test_compare_resamples_and_confidence(
    capsys: pytest.CaptureFixture[str], runs: tuple[Path, Path]
) -> None:
    narrow = json.loads(
        run(capsys, "compare", *runs, "--json", "--resamples", "500", "--confidence", "0.5")[1]
    )
    wide = json.loads(
        run(capsys, "compare", *runs, "--json", "--resamples", "500", "--confidence", "0.99")[1]
    )
    assert narrow["resamples"] == wide["resamples"] == 500
    assert (narrow["confidence"], wide["confidence"]) == (0.5, 0.99)
    a, b = narrow["metrics"]["steps_score"], wide["metrics"]["steps_score"]
    assert b["ci_high"] - b["ci_low"] > a["ci_high"] - a["ci_low"]


def test_compare_fail_on_regression(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    before = noisy(40, 3)
    a = write_run(tmp_path / "a", synthetic_results([0.5 + score / 2 for score in before]))
    worse = write_run(tmp_path / "worse", synthetic_results([score / 2 for score in before]))
    same = write_run(tmp_path / "same", synthetic_results([0.5 + score / 2 for score in before]))

    code, _, stderr = run(capsys, "compare", a, worse, "--fail-on-regression")
    assert code == 1
    assert stderr.startswith("FAIL steps_score: significantly worse")
    assert "(-0.5, 95% interval" in stderr

    code, _, stderr = run(capsys, "compare", a, same, "--fail-on-regression")
    assert code == 0
    assert stderr == ""


def test_compare_fail_under(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    a = write_run(tmp_path / "a", synthetic_results([0.9] * 40, key="answer_f1"))
    below = write_run(tmp_path / "below", synthetic_results([0.6] * 40, key="answer_f1"))
    slipped = write_run(tmp_path / "slipped", synthetic_results([0.85] * 40, key="answer_f1"))

    code, _, stderr = run(capsys, "compare", a, below, "--fail-under", "answer_f1=0.7")
    assert code == 1
    assert (
        "FAIL answer_f1: mean 0.6 is under 0.7 (run B, over 40 paired questions)"
        in stderr.splitlines()
    )

    # Above the threshold, but significantly worse than run A: a gate on the metric fails too.
    code, _, stderr = run(capsys, "compare", a, slipped, "--fail-under", "answer_f1=0.7")
    assert code == 1
    assert stderr.startswith("FAIL answer_f1: significantly worse, 0.9 -> 0.85")
    assert "is under" not in stderr

    code, _, stderr = run(capsys, "compare", a, a, "--fail-under", "answer_f1=0.7")
    assert code == 0
    assert stderr == ""


def test_compare_fail_under_unknown_metric(
    capsys: pytest.CaptureFixture[str], runs: tuple[Path, Path]
) -> None:
    code, stdout, stderr = run(capsys, "compare", *runs, "--fail-under", "step_score=0.5")
    assert code == 2
    assert stdout == ""
    assert "did you mean steps_score?" in stderr


def test_compare_missing_run_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], runs: tuple[Path, Path], tmp_path: Path
) -> None:
    code, _, stderr = run(capsys, "compare", runs[0], tmp_path / "nowhere")
    assert code == 2
    assert stderr == f"graphrag-eval: error: {tmp_path / 'nowhere'}: no such file or directory\n"


def worse_lines(stdout: str) -> list[str]:
    """The question lines under "Questions worse on ..." in a compare text output."""
    return [line for line in stdout.splitlines() if re.match(r"  q\d+ \(t\d+\): ", line)]


def test_compare_text_lists_as_many_worse_questions_as_top(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    a = write_run(tmp_path / "a", synthetic_results([1.0] * 24))
    b = write_run(tmp_path / "b", synthetic_results([0.5] * 12 + [1.0] * 12))
    code, stdout, _ = run(capsys, "compare", a, b)
    assert code == 0
    assert "Questions worse on steps_score (12 of 24, worse overall; largest fall first):" in stdout
    assert len(worse_lines(stdout)) == 10  # --top defaults to 10
    assert "  ... and 2 more (--top 0 lists them all)" in stdout.splitlines()
    code, stdout, _ = run(capsys, "compare", a, b, "--top", "3")
    # Equal falls in question id order.
    assert worse_lines(stdout) == [
        "  q0 (t0): 1.000 -> 0.500",
        "  q1 (t1): 1.000 -> 0.500",
        "  q10 (t2): 1.000 -> 0.500",
    ]
    assert "  ... and 9 more (--top 0 lists them all)" in stdout.splitlines()
    code, stdout, _ = run(capsys, "compare", a, b, "--top", "0")
    assert len(worse_lines(stdout)) == 12
    assert "more (--top 0" not in stdout


def test_compare_text_lists_the_questions_that_fell_when_the_score_rose(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows_a = synthetic_results([0.5] * 40)
    rows_b = synthetic_results([0.2, 0.3] + [0.9] * 38)
    for row_a, row_b in zip(rows_a, rows_b, strict=True):  # seconds: noise, no verdict
        row_a["elapsed_sec"] = 10.0
        row_b["elapsed_sec"] = 10.0 + (1 if int(row_b["question_id"][1:]) % 2 else -1)
    a, b = write_run(tmp_path / "a", rows_a), write_run(tmp_path / "b", rows_b)
    code, stdout, _ = run(capsys, "compare", a, b, "--json")
    assert json.loads(stdout)["metrics"]["steps_score"]["change"] == "better"
    assert json.loads(stdout)["metrics"]["elapsed_sec"]["change"] == "unchanged"
    code, stdout, _ = run(capsys, "compare", a, b)
    assert code == 0
    assert "Questions worse on steps_score (2 of 40, better overall; largest fall first):" in (
        stdout.splitlines()
    )
    assert worse_lines(stdout) == ["  q0 (t0): 0.500 -> 0.200", "  q1 (t1): 0.500 -> 0.300"]
    # Seconds that rose on half the questions but not overall are load, not a finding.
    assert "Questions worse on elapsed_sec" not in stdout


def test_compare_and_compare_results_have_the_same_defaults() -> None:
    command = cli.commands["compare"]
    context = click.Context(command)
    options = {param.name: param.get_default(context) for param in command.params}
    signature = inspect.signature(compare_results).parameters
    for name in ("seed", "resamples", "confidence", "top", "error_samples"):
        assert options[name] == signature[name].default, name


def test_compare_and_compare_results_give_the_same_comparison_by_default(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    before = noisy(40, 5)
    rows_a = synthetic_results([0.5 + score / 2 for score in before])
    rows_b = synthetic_results([score / 2 for score in before])
    for row in rows_b[:6]:  # newly failed questions: a fall to 0 in both, by default
        del row["steps_score"]
        row.update(status="error", error="the agent timed out")
    a, b = write_run(tmp_path / "a", rows_a), write_run(tmp_path / "b", rows_b)
    code, stdout, _ = run(capsys, "compare", a, b, "--json")
    assert code == 0
    from_cli = json.loads(stdout)
    library = compare_results(
        load_run(a).results, load_run(b).results, run_a=str(a), run_b=str(b)
    ).as_dict()
    assert from_cli == approx_tree(library)
    assert from_cli["metrics"]["steps_score"]["pairs"] == 40
    assert len(from_cli["metrics"]["steps_score"]["worse_items"]) == 10


@pytest.fixture
def log_output(monkeypatch: pytest.MonkeyPatch) -> None:
    """Standard output as in a CI job: not a terminal, no colours forced, 60 columns."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "60")


@pytest.mark.usefixtures("log_output")
def test_compare_text_in_a_log_wraps_no_metric_name_or_template_id(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    metric = "retrieval_answer_quality_of_the_longest_possible_metric_name_ever"
    template = "list_all_substations_connected_via_an_ac_line_or_a_dc_line_to_SUBSTATION"
    rows_a = [
        {"template_id": template, "question_id": f"q{i}", "status": "success", metric: 0.5}
        for i in range(20)
    ]
    rows_b = [{**row, metric: 0.1 if i < 2 else 0.9} for i, row in enumerate(rows_a)]
    a, b = write_run(tmp_path / "a", rows_a), write_run(tmp_path / "b", rows_b)
    code, stdout, _ = run(capsys, "compare", a, b)
    assert code == 0
    assert "\x1b" not in stdout
    lines = stdout.splitlines()
    row = next(line for line in lines if line.lstrip().startswith(metric))
    assert re.search(r"\b20\b.*0\.500.*0\.820.*better\s+18/2/0$", row)  # every column
    header = next(line for line in lines if line.lstrip().startswith("metric"))
    assert "better/worse/same" in header
    # Per template and per question, the template id is whole on its line.
    assert f"  {template}: {metric} better +0.320" in stdout
    assert f"  q0 ({template}): 0.500 -> 0.100" in lines
    # No line holds a piece of either without the whole.
    for line in lines:
        if metric[:20] in line:
            assert metric in line
        if template[:20] in line:
            assert template in line


# help ------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", sorted(cli.commands))
def test_every_command_help_has_an_example(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    code, stdout, _ = run(capsys, command, "--help")
    assert code == 0
    assert "Example" in stdout


# HTML escaping and the Content-Security-Policy (rendered strings, no browser) ------------


@pytest.fixture
def planted_run(tmp_path: Path) -> Path:
    """A results file whose template id, question, answers, judge reason, step and error
    texts carry markup."""
    results = []
    for index in range(8):
        results.append(
            {
                "template_id": "evil_" + PLANTED if index % 2 else "plain",
                "question_id": f"q{index}",
                "question_text": f"Question {index} {PLANTED}",
                "reference_answer": "Reference " + PLANTED,
                "status": "success",
                "actual_answer": "Answer " + PLANTED,
                "answer_f1": index / 8,
                "answer_recall": index / 8,
                "answer_precision": 1.0,
                "answer_correctness_reason": "Reason " + PLANTED,
                "reference_steps": [[{"name": "sparql_query", "args": {"query": PLANTED}}]],
                "actual_steps": [
                    {
                        "name": "sparql_query",
                        "id": PLANTED,
                        "status": "error",
                        "args": {"query": PLANTED},
                        "error": "Step error " + PLANTED,
                    }
                ],
                "steps_score": 0.0,
            }
        )
    results.append(
        {
            "template_id": "plain",
            "question_id": "q-error",
            "question_text": "Failed " + PLANTED,
            "status": "error",
            "error": "Crashed " + PLANTED,
        }
    )
    return write_run(tmp_path / "planted", results)


def assert_escaped(page: str) -> None:
    lowered = page.lower()
    assert "<script" not in lowered  # none at all: not pygal's either
    assert "<img" not in lowered
    assert "onerror=" not in lowered.replace("onerror=&#34;", "").replace("onerror=&quot;", "")
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=" in page


def assert_locked_down(page: str) -> None:
    policies = CSP.findall(page)
    assert len(policies) == 1
    policy = {part.split()[0]: part.split()[1:] for part in policies[0].split(";") if part.strip()}
    assert policy["default-src"] == ["'none'"]
    assert "script-src" not in policy  # default-src 'none' forbids scripts
    assert all("http" not in source for sources in policy.values() for source in sources)
    # Nothing that loads from elsewhere either.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page, flags=re.IGNORECASE)
    assert "@import" not in page
    assert "url(" not in page


def test_report_escapes_user_text(planted_run: Path) -> None:
    page = render_report(load_run(planted_run))
    assert_escaped(page)
    for text in ("Question 1 ", "Reference ", "Answer ", "Reason ", "Step error ", "Crashed "):
        assert text + "&lt;script&gt;" in page, text
    assert "evil_&lt;script&gt;" in page


def test_report_has_a_content_security_policy(planted_run: Path) -> None:
    assert_locked_down(render_report(load_run(planted_run)))


def test_comparison_escapes_user_text_and_has_a_content_security_policy(
    planted_run: Path, tmp_path: Path
) -> None:
    run_a = load_run(planted_run)
    records = [
        json.loads(line) for line in (planted_run / "results.jsonl").read_text().splitlines()
    ]
    for record in records:
        if "answer_f1" in record:
            record["answer_f1"] = 1 - record["answer_f1"]
    changed = tmp_path / "b" / "results.jsonl"
    changed.parent.mkdir()
    changed.write_text("".join(json.dumps(record) + "\n" for record in records))
    run_b = load_run(changed)
    comparison = compare_results(run_a.results, run_b.results, run_a=PLANTED, run_b="B " + PLANTED)
    page = render_comparison(comparison, run_a, run_b)
    assert_escaped(page)
    assert "Question 1 &lt;script&gt;" in page  # a question that changed
    assert "evil_&lt;script&gt;" in page
    assert_locked_down(page)
