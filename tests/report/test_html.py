"""The HTML report's numbers and words, read from the page source: the judge's cost table,
costs with their significant digits, counts of one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval.cli import main
from graphrag_eval.report.console import format_dollars


def write_results(path: Path, results: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(result) + "\n" for result in results))
    return path


def retrieval_result(index: int) -> dict[str, Any]:
    return {
        "template_id": "t",
        "question_id": f"q{index}",
        "question_text": f"question {index}?",
        "status": "success",
        "actual_steps": [
            {
                "name": "retrieval",
                "status": "success",
                "retrieval_answer_recall": 0.5,
                "retrieval_answer_recall_cost": 0.00001,
                "retrieval_answer_precision": 1.0,
                "retrieval_answer_precision_cost": 0.00002,
                "retrieval_answer_f1": 2 / 3,
                "retrieval_answer_f1_cost": 0.00003,
            }
        ],
    }


def cells(page: str, start: str, end: str) -> list[str]:
    """The text of the table cells between two markers of the page."""
    section = page[page.index(start) : page.index(end, page.index(start))]
    return [
        re.sub(r"<[^>]+>", "", cell).strip()
        for cell in re.findall(r"<td[^>]*>(.*?)</td>", section, re.S)
    ]


def test_the_cost_table_counts_retrieval_answer_calls_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """retrieval_answer_f1_cost is the sum of the recall and precision costs: the table of
    costs lists the two parts only, so its rows add up to what the calls cost."""
    results = write_results(tmp_path / "results.jsonl", [retrieval_result(i) for i in range(2)])
    assert main(["report", str(results)]) == 0
    page = (tmp_path / "report.html").read_text()
    assert cells(page, "Cost written on the questions", "</table>") == [
        "retrieval_answer_recall_cost",
        "$0.00002",
        "retrieval_answer_precision_cost",
        "$0.00004",
    ]
    # In the metric table the costs have their significant digits, never 0.000.
    metrics = cells(page, 'id="metrics"', "</table>")
    row = metrics[metrics.index("retrieval_answer_f1_cost") :][:7]
    assert row[1:5] == ["$0.00003"] * 4
    assert "0.000" not in row


def test_counts_of_one_are_singular(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = retrieval_result(0)
    result["answer_f1"] = 0.5
    results = write_results(tmp_path / "results.jsonl", [result])
    assert main(["report", str(results)]) == 0
    assert capsys.readouterr().out.startswith("report of 1 question in ")
    page = (tmp_path / "report.html").read_text()
    assert '<div class="label">question</div>' in page
    assert "lowest of 1 scored question, by" in page
    assert "1 question, by value" in page  # the histogram's axis
    assert not re.search(r"\b1 questions\b", page)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "$0"),
        (0.00005, "$0.00005"),
        (0.00004995, "$0.00005"),
        (0.000864, "$0.000864"),
        (0.0000004, "$0.0000004"),  # "$0." before
        (1e-12, "$0.000000000001"),
        (0.25, "$0.2500"),
    ],
)
def test_dollars_have_significant_digits(value: float, text: str) -> None:
    assert format_dollars(value) == text


def test_a_resumed_run_that_kept_one_item_says_so_in_the_singular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    write_results(run / "results.jsonl", [retrieval_result(0), retrieval_result(1)])
    (run / "run.yaml").write_text("resumed:\n  kept: 1\n")
    assert main(["report", str(run)]) == 0
    page = (run / "report.html").read_text()
    assert "<tr><td>resumed</td><td>kept 1 item</td></tr>" in page


def skipping_results() -> list[dict[str, Any]]:
    """Three questions in two templates; answer_f1 scored on one, skipped on two."""
    scored = {**retrieval_result(0), "template_id": "a", "answer_f1": 0.25}
    skipped = [
        {
            **retrieval_result(index),
            "template_id": template,
            "skipped": {"answer_correctness": reason},
        }
        for index, template, reason in ((1, "a", "no reference answer"), (2, "b", "no answer"))
    ]
    return [scored, *skipped]


def test_skips_are_counted_per_metric_and_per_template_with_their_reason(
    tmp_path: Path,
) -> None:
    """The skipped column counts each metric's skips with the most common reason, overall and
    per template."""
    from graphrag_eval.report.html import render_report
    from graphrag_eval.results.read_run import load_run

    path = write_results(tmp_path / "results.jsonl", skipping_results())
    run = load_run(path)
    page = render_report(run)
    overall = page[page.index('id="overview"') : page.index('id="templates"')]
    assert re.search(
        r"answer_f1</td>.*?<td class=\"skip\">2 <span[^>]*>\(no reference answer\)", overall, re.S
    )
    template_a = page[page.index("<summary>a ") : page.index("<summary>b ")]
    assert re.search(
        r"answer_f1</td>.*?<td class=\"skip\">1 <span[^>]*>\(no reference answer\)",
        template_a,
        re.S,
    )
    # The one question scored on answer_f1 is listed, with its score.
    assert "q0" in page


def test_the_worst_are_the_lowest_scores_ties_in_question_order(tmp_path: Path) -> None:
    """The questions listed are the lowest-scoring ones, lowest first, questions with the
    same score in their order in the results (as a stable sort of every score gives them)."""
    scores = [0.5, 0.1, 0.5, 0.1, 0.9, 0.1, 0.5]
    records = [
        {"template_id": "t", "question_id": f"q{i}", "question_text": f"question {i}?",
         "status": "success", "answer_f1": score}
        for i, score in enumerate(scores)
    ]  # fmt: skip
    results = write_results(tmp_path / "results.jsonl", records)
    assert main(["report", str(results), "--worst", "5"]) == 0
    page = (tmp_path / "report.html").read_text()
    listed = page[page.index('<h2 id="worst">') :]
    shown = re.findall(r"question (\d)\?", listed)
    assert list(dict.fromkeys(shown)) == ["1", "3", "5", "0", "2"]
