"""Labels of the HTML report in a real headless Chromium: long key names, template ids and
metric names are shown whole (wrapped where need be), never cut off or hidden under the next
column; costs are shown with their significant digits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from graphrag_eval.cli import main

if TYPE_CHECKING:
    from conftest import OpenPage

LONG_TEMPLATE = "list_all_substations_that_are_connected_via_an_ac_line_to_substation_named_X"


def result(index: int) -> dict[str, Any]:
    return {
        "template_id": LONG_TEMPLATE if index % 2 else "short",
        "question_id": f"q{index}",
        "question_text": f"Which transformers are in substation S{index}?",
        "status": "success",
        "reference_answer": "T1, T2",
        "actual_answer": "T1",
        "answer_recall": 0.5,
        "answer_precision": 1.0,
        "answer_f1": 0.2 + index / 10,
        "answer_correctness_reason": "The candidate states 1 of the 2 reference claims",
        "answer_correctness_cost": 0.00005,
        "answer_relevance": 0.5,
        "answer_relevance_reason": "What is T1?",
        "answer_relevance_error_details_from_the_judge_reason": "a long key name",
    }


@pytest.fixture
def report(tmp_path: Path) -> Path:
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(result(index)) + "\n" for index in range(6)))
    assert main(["report", str(results)]) == 0
    return tmp_path / "report.html"


def test_no_label_is_cut_off(report: Path, open_page: OpenPage) -> None:
    page = open_page(report).page
    page.locator("#worst ~ details").first.evaluate("element => { element.open = true; }")
    # An element whose text is wider than its box shows part of it (or runs under its
    # neighbour): the names of an item's keys, the table cells and the card labels.
    clipped = page.evaluate(
        """() => [...document.querySelectorAll(
              'dl.item dt, dl.item dd, td, th, .card .label, summary')]
            .filter(element => element.getClientRects().length > 0)
            .filter(element => element.scrollWidth > element.clientWidth + 1)
            .map(element => element.textContent.trim().slice(0, 60))"""
    )
    assert clipped == []
    names = page.locator("#worst ~ details[open] dl.item dt").all_inner_texts()
    assert "answer_correctness_reason" in [name.replace("\n", "") for name in names]


def test_chart_labels_are_inside_their_charts(report: Path, open_page: OpenPage) -> None:
    page = open_page(report).page
    outside = page.evaluate(
        """() => [...document.querySelectorAll('svg')].flatMap(svg => {
              const frame = svg.getBoundingClientRect();
              return [...svg.querySelectorAll('text')]
                .filter(text => text.textContent.trim())
                .filter(text => {
                  const box = text.getBoundingClientRect();
                  return box.left < frame.left - 1 || box.right > frame.right + 1
                    || box.top < frame.top - 1 || box.bottom > frame.bottom + 1;
                })
                .map(text => text.textContent);
            })"""
    )
    assert outside == []
    texts = page.locator("svg text").all_text_contents()
    assert not [text for text in texts if "\u2026" in text]  # nothing shortened with "..."
    assert "6 questions, by value" in texts


def test_costs_have_their_significant_digits(report: Path, open_page: OpenPage) -> None:
    page = open_page(report).page
    row = page.locator("#metrics ~ div.scroll tr", has_text="answer_correctness_cost").first
    cells = row.locator("td").all_inner_texts()
    assert cells[1:5] == ["$0.00005"] * 4  # mean, median, min, max
    judge = page.locator("h3", has_text="Cost written").locator("xpath=following-sibling::table[1]")
    assert judge.locator("td").all_inner_texts() == ["answer_correctness", "$0.0003"]  # 6 x
