"""The SPARQL mismatch explanation on its own (docs/steps.md, "Why a step did not match"):
its bound on large results, what it says about outputs that are not SPARQL results JSON, and
the rows it gives the report."""

from __future__ import annotations

import pytest

from graphrag_eval.steps.sparql_diff import EXPLAIN_BUDGET_CELLS, diff_sparql, not_sparql
from graphrag_eval.steps.sparql_values import parse_sparql_results

from builders import lit, sparql


def test_results_over_the_budget_get_a_reason_from_their_sizes_only() -> None:
    rows = EXPLAIN_BUDGET_CELLS // 4 + 1  # two columns, reference and actual: over budget
    reference = parse_sparql_results(sparql(["a", "b"], [[f"a{n}", f"b{n}"] for n in range(rows)]))
    actual = parse_sparql_results(sparql(["a", "b"], [[f"a{n}", "x"] for n in range(rows)]))
    diff = diff_sparql(reference, actual)
    assert diff.reason == (
        f"rows differ: {rows:,} actual rows vs {rows:,} reference rows "
        f"(too large to say more: over {EXPLAIN_BUDGET_CELLS:,} cells)"
    )
    assert diff.reference_rows == [] and diff.actual_rows == []


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ('<?xml version="1.0"?><sparql/>', "(looks like SPARQL results XML)"),
        ("<!DOCTYPE html><html></html>", "(looks like HTML)"),
        ("a,b\n1,2\n", "(looks like CSV)"),
        ('{"error": "timeout"}', "actual output is JSON but not SPARQL results JSON"),
        ("Error: query timed out", "(starts with 'Error: query timed out')"),
        (42, "(int)"),
    ],
)
def test_what_an_output_that_is_not_sparql_json_looks_like(output: object, expected: str) -> None:
    assert expected in not_sparql(output)


def test_the_rows_for_the_report_are_projected_on_the_compared_columns() -> None:
    reference = parse_sparql_results(sparql(["t", "n"], [["a", lit("1", "integer")], ["b", "x"]]))
    actual = parse_sparql_results(
        sparql(["extra", "n2", "t2"], [["z", lit("1", "integer"), "a"], ["z", "y", "b"]])
    )
    diff = diff_sparql(reference, actual)
    assert diff.columns == [("t", "t2"), ("n", "n2")]
    assert diff.reference_rows == [("a", 1), ("b", "x")]
    assert diff.actual_rows == [("a", 1), ("b", "y")]
    assert diff.missing == {("b", "x")} and diff.extra == {("b", "y")}
    assert diff.closeness == pytest.approx(0.5)
    assert diff.reason == (
        "required column 'n' has no matching actual column (closest: 'n2', 1 of 2 values differ)"
    )
