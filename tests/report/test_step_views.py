"""The report's view of reference steps that did not match (report/step_views.py), from saved
per-question fields (the browser test shows it rendered)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval.cli import main
from graphrag_eval.report.step_views import PARSED_CHARACTERS, SHOWN_ROWS, mismatch_views

from builders import (
    SPARQL_JSON,
    ask,
    dataset,
    question,
    ref_step,
    response,
    sparql,
    sparql_ref,
    step,
    uri,
)


def fields(reference_output: Any, actual_output: Any, **reference: Any) -> dict[str, Any]:
    step = {
        "name": "sparql_query",
        "output": reference_output,
        "output_media_type": SPARQL_JSON,
        "mismatch_reason": "why",
        "nearest_match": "s1",
        **reference,
    }
    return {
        "reference_steps": [[{"name": "other", "matches": "s0"}, step]],
        "actual_steps": [{"id": "s1", "name": "sparql_query", "output": actual_output}],
    }


def test_only_steps_with_a_reason_are_shown_with_the_first_rows_side_by_side() -> None:
    reference = sparql(["t"], [[f"r{n}"] for n in range(15)])
    actual = sparql(["x"], [[f"r{n}"] for n in range(14)] + [["new"]])
    [view] = mismatch_views(fields(reference, actual))
    assert (view.label, view.name, view.reason, view.nearest) == (
        "1.2",
        "sparql_query",
        "why",
        "s1",
    )
    assert view.columns == [("t", "x")]
    assert len(view.rows) == SHOWN_ROWS
    assert view.more_rows == "10 of 15 reference and 15 actual rows, those that differ first"
    # The rows that differ come first: r14 is missing (nothing in common with the extra row
    # "new", so they are not paired), "new" is extra; then rows in both, in order.
    missing, extra, *same = view.rows
    assert (missing.reference_mark, [c.text for c in missing.reference], missing.actual) == (
        "missing",
        ["'r14'"],
        [],
    )
    assert (extra.actual_mark, [c.text for c in extra.actual], extra.reference) == (
        "extra",
        ["'new'"],
        [],
    )
    assert [[c.text for c in row.reference] for row in same] == [[f"'r{n}'"] for n in range(8)]
    assert not any(row.reference_mark or row.actual_mark for row in same)


def test_changed_cells_are_marked_where_a_missing_row_faces_an_extra_one() -> None:
    reference = sparql(["t", "n"], [["a", "1"], ["b", "2"]])
    actual = sparql(["t", "n"], [["a", "1"], ["b", "3"]])
    [view] = mismatch_views(fields(reference, actual))
    changed, same = view.rows
    assert (changed.reference_mark, changed.actual_mark) == ("missing", "extra")
    assert [cell.differs for cell in changed.reference] == [False, True]
    assert [cell.text for cell in changed.actual] == ["'b'", "'3'"]
    assert (same.reference_mark, same.actual_mark) == ("", "")


def test_no_table_for_ask_results_other_media_types_or_very_large_outputs() -> None:
    small = sparql(["t"], [["a"]])
    large = sparql(["t"], [["x" * 100] for _ in range(PARSED_CHARACTERS // 100)])
    for case in (
        fields(ask(True), ask(False)),
        fields(small, "not JSON"),
        fields(small, large),
        fields(small, small, output_media_type="application/json"),
    ):
        [view] = mismatch_views(case)
        assert view.reason == "why" and view.columns == [] and view.rows == []


def test_without_an_actual_step_the_expected_rows_are_shown_alone() -> None:
    """A reference step with nothing to compare (no actual step of its name, or a group not
    scored in last_group mode) shows the rows it expects."""
    reference = sparql(["t", "name"], [[f"urn:T{n}", f"OSLO T{n}"] for n in range(12)])
    case = fields(reference, None, nearest_match=None, mismatch_reason="not scored: ...")
    [view] = mismatch_views(case)
    assert view.reference_only and view.nearest == ""
    assert view.columns == [("t", ""), ("name", "")]
    assert [[c.text for c in row.reference] for row in view.rows[:2]] == [
        ["'urn:T0'", "'OSLO T0'"],
        ["'urn:T1'", "'OSLO T1'"],
    ]
    assert len(view.rows) == SHOWN_ROWS and all(row.actual == [] for row in view.rows)
    assert view.more_rows == "10 of 12 reference rows"
    for other in (ask(True), "not JSON"):
        [view] = mismatch_views(fields(other, None, nearest_match=None))
        assert not view.reference_only and view.rows == []


def test_report_question_shows_why_a_group_was_not_scored_and_what_it_expects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = sparql(["t"], [[uri("urn:T1")]])
    reference = tmp_path / "ref.json"
    reference.write_text(
        json.dumps(
            dataset(
                question(
                    "q1",
                    [
                        [ref_step("iri_discovery", "<http://example.org/OSLO>")],
                        [sparql_ref(sparql(["t"], [[uri("urn:T9")]]))],
                        [sparql_ref(rows)],
                    ],
                )
            )
        )
    )
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps(response("q1", [step("sparql_query", rows, "s1")])) + "\n")
    out = tmp_path / "out"
    assert main(["evaluate", str(reference), str(responses), "-o", str(out), "-q"]) == 0
    assert main(["report", str(out), "--question", "q1"]) == 0
    capsys.readouterr()

    page = (out / "question-q1.html").read_text(encoding="utf-8")
    assert "<http://example.org/OSLO>" not in page  # escaped
    text = html.unescape(page)
    not_scored = "not scored: in last_group mode only reference group 3 is scored; "
    assert not_scored + "expected IRI <http://example.org/OSLO>" in text
    assert not_scored + "expected 1 row of (t), first ('urn:T9')" in text
    assert "expected (reference) rows" in page
    # the step table's status says so too
    assert text.count(">not scored<") == 2
    assert ">not matched<" not in text
