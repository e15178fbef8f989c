"""What ``graphrag-eval compare`` says about a clearly worse candidate that costs $0.0000001
less per question: its scores are the headline, costs, tokens and seconds a section of their
own in their units (text, JSON, HTML); which --error-samples mode made the means; and its
one-line messages for a missing run, a responses file or a reference given as a run."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def result(index: int, worse: bool) -> dict[str, Any]:
    """Question ``q<index>``: the candidate (``worse``) answers 0.3 worse, its judge calls
    cost $0.0000001 less, it uses 1,000 more input tokens and half a second more."""
    f1 = 0.8 + (index % 5) * 0.02 - (0.3 if worse else 0.0)
    cost = 0.0000573 + (index % 3) * 1e-6 - (1e-7 if worse else 0.0)
    return {
        "template_id": f"t{index % 2}",
        "question_id": f"q{index}",
        "question_text": f"question {index}?",
        "status": "success",
        "answer_recall": f1,
        "answer_precision": f1,
        "answer_f1": f1,
        "answer_correctness_cost": cost,
        "input_tokens": 200_000 + index * 37 + (1000 if worse else 0),
        "output_tokens": 260,
        "total_tokens": 200_260 + index * 37 + (1000 if worse else 0),
        "elapsed_sec": 6.5 + index * 0.1 + (0.5 if worse else 0.0),
    }


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    paths = []
    for name, worse in (("baseline", False), ("candidate", True)):
        folder = tmp_path / name
        folder.mkdir()
        records = [result(index, worse) for index in range(20)]
        (folder / "results.jsonl").write_text(
            "".join(json.dumps(record) + "\n" for record in records), encoding="utf-8"
        )
        paths.append(folder)
    return paths[0], paths[1]


def compare(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main(["compare", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def section(text: str, start: str, end: str | None = None) -> str:
    begin = text.index(start)
    return text[begin : text.index(end, begin) if end else None]


def test_text_headline_counts_scores_and_costs_have_their_own_table(
    capsys: pytest.CaptureFixture[str], runs: tuple[Path, Path]
) -> None:
    code, stdout, _ = compare(capsys, *runs)
    assert code == 0
    assert "Scores: 0 significantly better, 3 significantly worse" in stdout
    scores = section(stdout, "Scores:", "Costs, tokens and time").split("\n", 1)[1]
    assert "answer_f1" in scores and "worse" in scores
    assert "_cost" not in scores and "tokens" not in scores and "elapsed_sec" not in scores
    assert "better" not in scores.replace("better/worse/same", "")
    resources = section(stdout, "Costs, tokens and time", "Significant changes")
    lines = {line.split()[0]: line for line in resources.splitlines()[1:] if line.strip()}
    cost = lines["answer_correctness_cost"].split()
    # dollars with their digits, never an exponent; the change says lower, not better
    assert cost[1:5] == ["20", "$0.0000582", "$0.0000581", "-$0.0000001"]
    assert "[-$0.0000001, -$0.0000001]" in lines["answer_correctness_cost"]
    assert cost[-2] == "lower"
    tokens = lines["input_tokens"].split()
    assert tokens[2:5] == ["200,352", "201,352", "+1,000"] and tokens[-2] == "higher"
    assert lines["output_tokens"].split()[2:4] == ["260", "260"]
    seconds = lines["elapsed_sec"]
    assert re.search(r" 7\.45 s +7\.95 s +\+0\.500 s +\[\+0\.500 s, \+0\.500 s\] +higher", seconds)
    assert "e-0" not in stdout


def test_text_says_which_error_samples_mode_made_the_means(
    capsys: pytest.CaptureFixture[str], runs: tuple[Path, Path]
) -> None:
    _, stdout, _ = compare(capsys, *runs)
    assert "Means with --error-samples zero: an error response counts as 0" in stdout
    assert "they differ from evaluate's means" in stdout
    _, stdout, _ = compare(capsys, *runs, "--error-samples", "exclude")
    assert "Means with --error-samples exclude: error responses are left out" in stdout


def test_json_keeps_its_keys_and_adds_the_headline_and_the_resources(
    capsys: pytest.CaptureFixture[str], runs: tuple[Path, Path]
) -> None:
    code, stdout, _ = compare(capsys, *runs, "--json")
    assert code == 0
    document = json.loads(stdout)
    # The existing keys: every metric, the costs with their old verdict.
    assert document["metrics"]["answer_correctness_cost"]["change"] == "better"
    assert document["metrics"]["answer_f1"]["change"] == "worse"
    assert document["error_samples"] == "zero"
    assert document["significant_scores"] == {
        "better": [],
        "worse": ["answer_recall", "answer_precision", "answer_f1"],
    }
    resources = document["resources"]
    assert list(resources) == [
        "answer_correctness_cost",
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "elapsed_sec",
    ]
    assert resources["answer_correctness_cost"]["unit"] == "dollars"
    assert resources["answer_correctness_cost"]["change"] == "lower"
    assert resources["answer_correctness_cost"]["difference"] == pytest.approx(-1e-7)
    assert (resources["input_tokens"]["unit"], resources["input_tokens"]["change"]) == (
        "tokens",
        "higher",
    )
    assert resources["elapsed_sec"]["unit"] == "seconds"
    assert resources["elapsed_sec"]["mean_b"] == pytest.approx(7.95)
    assert document["metrics"]["answer_f1"]["unit"] == "score"


def test_html_headline_counts_scores_and_costs_have_their_own_table(
    capsys: pytest.CaptureFixture[str], runs: tuple[Path, Path], tmp_path: Path
) -> None:
    page_path = tmp_path / "comparison.html"
    assert compare(capsys, *runs, "--html", page_path)[0] == 0
    page = page_path.read_text(encoding="utf-8")
    cards = re.findall(r'<div class="value [a-z]+">(\d+)</div><div class="label">([^<]+)<', page)
    assert cards == [("0", "scores significantly better"), ("3", "scores significantly worse")]
    assert "--error-samples zero</code>: an error response counts as 0" in page
    overall = section(page, 'id="overall"', 'id="resources"')
    assert "answer_f1" in overall and "_cost" not in overall and "input_tokens" not in overall
    resources = section(page, 'id="resources"', "</table>")
    assert "$0.0000581</td>" in resources and "-$0.0000001</td>" in resources
    assert "201,352</td>" in resources and "7.95 s</td>" in resources
    assert ">lower</td>" in resources and ">higher</td>" in resources
    assert ">better</td>" not in resources


def test_a_missing_run_b_is_one_line_with_the_hint(
    capsys: pytest.CaptureFixture[str], runs: tuple[Path, Path]
) -> None:
    code, stdout, stderr = compare(capsys, runs[0])
    assert (code, stdout) == (2, "")
    assert stderr == (
        "graphrag-eval: error: missing RUN_B: compare takes two runs, as in graphrag-eval "
        "compare baseline/ candidate/ (output directories of graphrag-eval evaluate)\n"
    )
    code, _, stderr = compare(capsys)
    assert code == 2 and stderr.startswith("graphrag-eval: error: missing RUN_A and RUN_B:")
    assert len(stderr.splitlines()) == 1


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("responses.jsonl", "a responses file"),
        ("reference.yaml", "a reference dataset"),
    ],
)
def test_an_input_file_given_as_a_run_is_named_for_what_it_is(
    capsys: pytest.CaptureFixture[str], runs: tuple[Path, Path], name: str, kind: str
) -> None:
    path = EXAMPLES / name
    code, stdout, stderr = compare(capsys, runs[0], path)
    assert (code, stdout) == (2, "")
    assert stderr == (
        f"graphrag-eval: error: {path}: this is {kind}, not a run (a run is the output "
        "directory of graphrag-eval evaluate)\n"
    )


def test_responses_as_json_by_question_id_are_named_too(
    capsys: pytest.CaptureFixture[str], runs: tuple[Path, Path], tmp_path: Path
) -> None:
    path = tmp_path / "responses.json"
    path.write_text(json.dumps({"q1": {"actual_answer": "x"}, "q2": {"actual_answer": "y"}}))
    code, _, stderr = compare(capsys, runs[0], path)
    assert code == 2
    assert "this is a responses file, not a run" in stderr


def test_a_config_given_as_a_run_is_not_called_responses(
    capsys: pytest.CaptureFixture[str], runs: tuple[Path, Path]
) -> None:
    code, _, stderr = compare(capsys, runs[0], EXAMPLES / "config.yaml")
    assert code == 2
    assert "not a run" not in stderr and "expected a list of results" in stderr
