"""Tests of the SPARQL results comparison (docs/steps.md)."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphrag_eval.steps.sparql import compare_sparql_results, parse_sparql_results

XSD = "http://www.w3.org/2001/XMLSchema#"

Term = dict[str, str]
Row = Sequence[Term | str | None]


# --------------------------------------------------------------------------------------------
# Builders


def uri(value: str) -> Term:
    return {"type": "uri", "value": value}


def bnode(value: str) -> Term:
    return {"type": "bnode", "value": value}


def lit(value: str, datatype: str | None = None) -> Term:
    term = {"type": "literal", "value": value}
    if datatype is not None:
        term["datatype"] = XSD + datatype
    return term


def integer(value: int | str) -> Term:
    return lit(str(value), "integer")


def decimal(value: float | str) -> Term:
    return lit(str(value), "decimal")


def double(value: float | str) -> Term:
    return lit(repr(value) if isinstance(value, float) else value, "double")


def doc(variables: Sequence[str], rows: Sequence[Row]) -> dict[str, Any]:
    """A SPARQL results JSON mapping. A ``None`` cell is unbound (its key is left out of the
    binding); a ``str`` cell is a plain literal; anything else is an RDF term object."""
    bindings = []
    for row in rows:
        assert len(row) == len(variables)
        binding: dict[str, Term] = {}
        for var, cell in zip(variables, row, strict=True):
            if cell is None:
                continue
            binding[var] = lit(cell) if isinstance(cell, str) else cell
        bindings.append(binding)
    return {"head": {"vars": list(variables)}, "results": {"bindings": bindings}}


def select(variables: Sequence[str], rows: Sequence[Row]) -> str:
    return json.dumps(doc(variables, rows))


def ask(value: bool) -> str:
    return json.dumps({"head": {}, "boolean": value})


def one_column(*cells: Term | str | None) -> str:
    return select(["x"], [[cell] for cell in cells])


def compare(reference: Any, actual: Any, required: Sequence[str] | None = None, **mode: Any) -> int:
    return compare_sparql_results(reference, actual, required, **mode)


MODES = [
    pytest.param(False, True, id="set"),
    pytest.param(False, False, id="multiset"),
    pytest.param(True, True, id="sequence-without-repeats"),
    pytest.param(True, False, id="sequence"),
]

TURTLE = """@prefix ex: <http://example.org/> .
ex:a ex:p ex:b ;
    ex:q "literal" .
"""


# --------------------------------------------------------------------------------------------
# Output that is not SPARQL results JSON


@pytest.mark.parametrize(
    "actual",
    [
        pytest.param(TURTLE, id="describe-turtle"),
        pytest.param("<http://ex/a> <http://ex/p> <http://ex/b> .", id="construct-ntriples"),
        pytest.param("Error: Query timed out after 30s", id="error-text"),
        pytest.param("MALFORMED QUERY: Lexical error at line 1", id="malformed-query"),
        pytest.param("", id="empty-string"),
        pytest.param("[1, 2]", id="json-list"),
        pytest.param("null", id="json-null"),
        pytest.param('{"head": {"vars": ["x"]}}', id="json-without-results"),
        pytest.param('{"error": "oops"}', id="json-error-object"),
    ],
)
def test_actual_output_that_is_not_sparql_json_scores_zero(actual: str) -> None:
    assert compare(one_column("a"), actual) == 0


@pytest.mark.parametrize(
    "actual",
    [
        pytest.param({"head": {"vars": ["x"]}, "results": {"bindings": ["x"]}}, id="binding"),
        pytest.param({"head": {"vars": ["x"]}, "results": {"bindings": [{"x": "a"}]}}, id="term"),
        pytest.param(
            {"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "uri"}}]}},
            id="term-without-value",
        ),
        pytest.param(
            {
                "head": {"vars": ["x"]},
                "results": {
                    "bindings": [{"x": {"type": "literal", "value": "1", "datatype": [1]}}]
                },
            },
            id="unhashable-datatype",
        ),
        pytest.param({"head": {"vars": "x"}, "results": {"bindings": []}}, id="vars-not-list"),
        pytest.param({"head": [], "results": {"bindings": []}}, id="head-not-object"),
        pytest.param({"head": {}, "boolean": "yes"}, id="boolean-not-bool"),
    ],
)
def test_structurally_broken_actual_json_scores_zero_without_exception(
    actual: dict[str, Any],
) -> None:
    assert compare(one_column(integer(1)), json.dumps(actual)) == 0


def test_actual_that_is_not_text_or_mapping_scores_zero() -> None:
    assert compare(one_column("a"), None) == 0


@pytest.mark.parametrize(
    "reference",
    [TURTLE, "Error: timeout", "", "[1]", '{"head": {"vars": ["x"]}}'],
)
def test_reference_that_is_not_sparql_json_raises_value_error(reference: str) -> None:
    with pytest.raises(ValueError):
        compare(reference, one_column("a"))


def test_parse_rejects_non_json_text_with_value_error() -> None:
    with pytest.raises(ValueError, match="not JSON"):
        parse_sparql_results(TURTLE)


# --------------------------------------------------------------------------------------------
# Parsing


def test_parse_select_reads_vars_rows_and_unbound_cells() -> None:
    parsed = parse_sparql_results(select(["a", "b"], [["x", None], [None, uri("http://ex/y")]]))
    assert not parsed.is_ask
    assert parsed.vars == ("a", "b")
    assert parsed.row_count == 2
    assert parsed.columns["a"] == ("x", None)
    assert parsed.columns["b"] == (None, "http://ex/y")


def test_parse_ask_reads_the_boolean() -> None:
    parsed = parse_sparql_results(ask(False))
    assert parsed.is_ask
    assert parsed.boolean is False


def test_parse_accepts_a_mapping_like_the_equivalent_text() -> None:
    mapping = doc(["a"], [[integer(3)], ["z"]])
    assert parse_sparql_results(mapping) == parse_sparql_results(json.dumps(mapping))


def test_parse_without_head_vars_takes_variables_from_bindings() -> None:
    parsed = parse_sparql_results({"head": {}, "results": {"bindings": [{"b": lit("1")}]}})
    assert parsed.vars == ("b",)
    assert parsed.columns["b"] == ("1",)


def test_parse_repeated_head_var_is_one_column() -> None:
    parsed = parse_sparql_results(
        {"head": {"vars": ["a", "a"]}, "results": {"bindings": [{"a": lit("1")}]}}
    )
    assert parsed.vars == ("a",)


def test_parse_normalises_typed_numbers() -> None:
    parsed = parse_sparql_results(select(["n"], [[integer("042")], [decimal("2.50")]]))
    assert parsed.columns["n"] == (42, 2.5)


# --------------------------------------------------------------------------------------------
# Already-parsed inputs


def test_compare_accepts_mappings_as_well_as_text() -> None:
    reference = doc(["a", "b"], [["x", integer(1)], ["y", integer(2)]])
    actual = doc(["p", "q"], [[integer(2), "y"], [integer(1), "x"]])
    assert compare(reference, actual) == 1
    assert compare(json.dumps(reference), actual) == 1
    assert compare(reference, json.dumps(actual)) == 1


def test_compare_of_mappings_still_detects_a_mismatch() -> None:
    reference = doc(["a"], [["x"]])
    assert compare(reference, doc(["a"], [["y"]])) == 0


def test_compare_accepts_parsed_results() -> None:
    reference = parse_sparql_results(one_column("x", "y"))
    assert compare(reference, parse_sparql_results(one_column("y", "x"))) == 1
    assert compare(reference, parse_sparql_results(one_column("y", "z"))) == 0


# --------------------------------------------------------------------------------------------
# ASK


@pytest.mark.parametrize("value", [True, False])
def test_ask_with_equal_booleans_scores_one(value: bool) -> None:
    assert compare(ask(value), ask(value)) == 1


@pytest.mark.parametrize("reference", [True, False])
def test_ask_with_different_booleans_scores_zero(reference: bool) -> None:
    assert compare(ask(reference), ask(not reference)) == 0


def test_ask_reference_against_select_actual_scores_zero() -> None:
    assert compare(ask(True), select(["x"], [[lit("true", "boolean")]])) == 0


def test_select_reference_against_ask_actual_scores_zero() -> None:
    assert compare(select(["x"], [[lit("true", "boolean")]]), ask(True)) == 0


def test_empty_select_reference_against_ask_actual_scores_zero() -> None:
    assert compare(select(["x"], []), ask(False)) == 0


# --------------------------------------------------------------------------------------------
# Empty results and variable counts


def test_both_empty_with_as_many_actual_vars_scores_one() -> None:
    assert compare(select(["a", "b"], []), select(["c", "d"], [])) == 1


def test_both_empty_with_more_actual_vars_scores_one() -> None:
    assert compare(select(["a"], []), select(["c", "d", "e"], [])) == 1


def test_both_empty_with_fewer_actual_vars_scores_zero() -> None:
    assert compare(select(["a", "b"], []), select(["c"], [])) == 0


def test_both_empty_counts_only_required_columns() -> None:
    assert compare(select(["a", "b", "c"], []), select(["z"], []), ["b"]) == 1


def test_empty_reference_non_empty_actual_scores_zero() -> None:
    assert compare(select(["a"], []), one_column("x")) == 0


def test_non_empty_reference_empty_actual_scores_zero() -> None:
    assert compare(one_column("x"), select(["x"], [])) == 0


def test_fewer_actual_vars_than_required_columns_scores_zero() -> None:
    reference = select(["a", "b"], [["x", "y"]])
    assert compare(reference, select(["a"], [["x"]])) == 0


def test_row_of_all_unbound_cells_is_not_an_empty_result() -> None:
    assert compare(select(["a"], [[None]]), select(["a"], [])) == 0
    assert compare(select(["a"], [[None]]), select(["a"], [[None]])) == 1


# --------------------------------------------------------------------------------------------
# Unbound cells


def test_unbound_equals_unbound() -> None:
    assert compare(one_column("a", None), one_column(None, "a")) == 1


def test_unbound_does_not_equal_empty_string() -> None:
    assert compare(one_column(None), one_column("")) == 0
    assert compare(one_column(""), one_column(None)) == 0


def test_unbound_does_not_equal_a_literal() -> None:
    assert compare(one_column(None), one_column("null")) == 0
    assert compare(one_column(None), one_column("None")) == 0
    assert compare(one_column(integer(0)), one_column(None)) == 0


def test_unbound_position_matters_within_a_row() -> None:
    reference = select(["a", "b"], [["x", None], ["y", "z"]])
    assert compare(reference, select(["a", "b"], [[None, "x"], ["y", "z"]])) == 0
    assert compare(reference, select(["a", "b"], [["y", "z"], ["x", None]])) == 1


# --------------------------------------------------------------------------------------------
# Whole-value comparison


def test_cells_are_not_concatenated() -> None:
    reference = select(["p", "q"], [["ab", "c"]])
    assert compare(reference, select(["p", "q"], [["a", "bc"]])) == 0


def test_cells_are_not_concatenated_across_rows() -> None:
    reference = one_column("ab", "c")
    assert compare(reference, one_column("a", "bc")) == 0


def test_cells_are_not_concatenated_with_separators() -> None:
    reference = select(["p", "q"], [["a b", "c"]])
    assert compare(reference, select(["p", "q"], [["a", "b c"]])) == 0


# --------------------------------------------------------------------------------------------
# Term values


def test_uris_compare_by_value() -> None:
    assert compare(one_column(uri("http://ex/a")), one_column(uri("http://ex/a"))) == 1
    assert compare(one_column(uri("http://ex/a")), one_column(uri("http://ex/b"))) == 0


def test_bnodes_compare_by_value() -> None:
    assert compare(one_column(bnode("b0")), one_column(bnode("b0"))) == 1
    assert compare(one_column(bnode("b0")), one_column(bnode("b1"))) == 0


def test_plain_literals_compare_by_value() -> None:
    assert compare(one_column("Sofia"), one_column("Sofia")) == 1
    assert compare(one_column("Sofia"), one_column("sofia")) == 0
    assert compare(one_column("Sofia"), one_column("Sofia ")) == 0


def test_xsd_string_literal_equals_plain_literal() -> None:
    assert compare(one_column(lit("abc", "string")), one_column("abc")) == 1


def test_language_tagged_literal_compares_by_value() -> None:
    tagged = {"type": "literal", "value": "chat", "xml:lang": "fr"}
    assert compare(one_column(tagged), one_column(dict(tagged))) == 1
    assert compare(one_column(tagged), one_column({**tagged, "value": "cat"})) == 0


# --------------------------------------------------------------------------------------------
# Numbers


def test_integer_equals_decimal_with_same_value() -> None:
    assert compare(one_column(integer(1)), one_column(decimal("1.0"))) == 1
    assert compare(one_column(decimal("1.0")), one_column(integer(1))) == 1


def test_integer_equals_double_with_same_value() -> None:
    assert compare(one_column(integer(100)), one_column(double("1.0E2"))) == 1


def test_integer_subtypes_compare_as_integers() -> None:
    assert compare(one_column(integer(7)), one_column(lit("7", "int"))) == 1
    assert compare(one_column(lit("007", "long")), one_column(integer(7))) == 1


def test_different_integers_do_not_match() -> None:
    assert compare(one_column(integer(1)), one_column(integer(2))) == 0


def test_float_rounding_error_is_tolerated() -> None:
    assert 0.1 + 0.2 != 0.3  # plain float arithmetic is off in the last digit
    assert compare(one_column(decimal("0.3")), one_column(double(0.1 + 0.2))) == 1
    assert compare(one_column(double(0.1 + 0.2)), one_column(decimal("0.3"))) == 1


def test_difference_within_1e_8_matches() -> None:
    assert compare(one_column(decimal("2.5")), one_column(decimal("2.500000005"))) == 1


def test_difference_of_1e_6_does_not_match() -> None:
    assert compare(one_column(decimal("1.0")), one_column(decimal("1.000001"))) == 0
    assert compare(one_column(decimal("0.000001")), one_column(integer(0))) == 0


def test_close_numbers_in_the_reference_are_not_all_merged() -> None:
    reference = one_column(decimal("1.0"), decimal("1.000001"))
    assert compare(reference, one_column(decimal("1.0"), decimal("1.0"))) == 0


def test_values_of_an_extra_actual_column_do_not_bridge_numbers() -> None:
    # 0 and 1.5e-8 are not equal; an unrelated actual value between them must not make them so.
    reference = one_column(decimal("0"), decimal("0.000000015"))
    without_extra = select(["x"], [[decimal("0")], [decimal("0")]])
    with_extra = select(
        ["x", "extra"],
        [[decimal("0"), decimal("0.0000000075")], [decimal("0"), decimal("0.0000000075")]],
    )
    assert compare(reference, without_extra) == 0
    assert compare(reference, with_extra) == 0


def test_actual_number_between_two_reference_numbers_takes_the_nearest() -> None:
    # 1.000000009 is within 1e-8 of both reference values but nearer to 1.000000015.
    reference = one_column(decimal("1.0"), decimal("1.000000015"))
    assert compare(reference, one_column(decimal("1.0"), decimal("1.000000009"))) == 1
    assert compare(reference, one_column(decimal("1.000000009"), decimal("1.000000015"))) == 0


def test_boolean_true_does_not_equal_integer_one() -> None:
    assert compare(one_column(lit("true", "boolean")), one_column(integer(1))) == 0
    assert compare(one_column(integer(1)), one_column(lit("true", "boolean"))) == 0


def test_boolean_lexical_forms_are_equivalent() -> None:
    assert compare(one_column(lit("true", "boolean")), one_column(lit("1", "boolean"))) == 1
    assert compare(one_column(lit("false", "boolean")), one_column(lit("0", "boolean"))) == 1
    assert compare(one_column(lit("true", "boolean")), one_column(lit("false", "boolean"))) == 0


def test_boolean_does_not_equal_plain_literal_true() -> None:
    assert compare(one_column(lit("true", "boolean")), one_column("true")) == 0


def test_plain_literal_one_does_not_equal_integer_one() -> None:
    assert compare(one_column("1"), one_column(integer(1))) == 0
    assert compare(one_column(integer(1)), one_column("1")) == 0


def test_plain_literal_does_not_equal_decimal() -> None:
    assert compare(one_column("1.5"), one_column(decimal("1.5"))) == 0


def test_dates_compare_by_exact_lexical_value() -> None:
    date = lit("2024-01-05", "date")
    assert compare(one_column(date), one_column(lit("2024-01-05", "date"))) == 1
    assert compare(one_column(date), one_column(lit("2024-1-5", "date"))) == 0
    assert (
        compare(
            one_column(lit("2024-01-05T00:00:00Z", "dateTime")),
            one_column(lit("2024-01-05T00:00:00+00:00", "dateTime")),
        )
        == 0
    )


def test_durations_compare_by_exact_lexical_value() -> None:
    assert compare(one_column(lit("PT1H", "duration")), one_column(lit("PT1H", "duration"))) == 1
    assert compare(one_column(lit("PT1H", "duration")), one_column(lit("PT60M", "duration"))) == 0


def test_nan_does_not_crash_and_equals_only_nan() -> None:
    nan = double("NaN")
    assert compare(one_column(nan), one_column(double("NaN"))) == 1
    assert compare(one_column(nan), one_column(integer(0))) == 0
    assert compare(one_column(integer(0)), one_column(nan)) == 0
    assert compare(one_column(nan, decimal("1.5")), one_column(decimal("1.5"), nan)) == 1


def test_infinity_equals_only_itself() -> None:
    assert compare(one_column(double("INF")), one_column(double("INF"))) == 1
    assert compare(one_column(double("INF")), one_column(double("-INF"))) == 0
    assert compare(one_column(double("1.0E308")), one_column(double("INF"))) == 0


def test_infinity_does_not_absorb_neighbouring_numbers() -> None:
    reference = one_column(double("-INF"), double("0.0"))
    assert compare(reference, one_column(double("-INF"), double("-INF"))) == 0
    assert compare(reference, one_column(double("0.0"), double("-INF"))) == 1


def test_huge_integer_against_a_double_does_not_crash() -> None:
    huge = integer(10**400)
    assert compare(one_column(huge), one_column(double("1.5"))) == 0
    assert compare(one_column(huge, decimal("1.5")), one_column(decimal("1.5"), huge)) == 1


def test_invalid_numeric_lexical_compares_as_text() -> None:
    assert compare(one_column(integer("abc")), one_column(integer("abc"))) == 1
    assert compare(one_column(integer("abc")), one_column(integer(0))) == 0


# --------------------------------------------------------------------------------------------
# Row order and duplicates


def test_unordered_ignores_row_order() -> None:
    assert compare(one_column("a", "b", "c"), one_column("c", "a", "b")) == 1


def test_unordered_ignore_duplicates_is_the_default() -> None:
    assert compare(one_column("a", "b"), one_column("a", "b", "b")) == 1


def test_unordered_ignore_duplicates_ignores_actual_duplicates() -> None:
    assert (
        compare(one_column("a", "b"), one_column("b", "a", "a", "b"), ignore_duplicates=True) == 1
    )


def test_unordered_ignore_duplicates_ignores_reference_duplicates() -> None:
    assert compare(one_column("a", "a", "b"), one_column("b", "a"), ignore_duplicates=True) == 1


def test_unordered_ignore_duplicates_still_needs_every_value() -> None:
    assert compare(one_column("a", "b"), one_column("a", "a")) == 0
    assert compare(one_column("a", "a"), one_column("a", "b")) == 0


def test_multiset_duplicate_actual_row_fails() -> None:
    assert compare(one_column("a", "b"), one_column("a", "b", "b"), ignore_duplicates=False) == 0


def test_multiset_duplicate_reference_row_fails() -> None:
    assert compare(one_column("a", "b", "b"), one_column("a", "b"), ignore_duplicates=False) == 0


def test_multiset_counts_must_agree_with_same_row_count() -> None:
    reference = one_column("a", "a", "b")
    assert compare(reference, one_column("a", "b", "b"), ignore_duplicates=False) == 0
    assert compare(reference, one_column("b", "a", "a"), ignore_duplicates=False) == 1


def test_multiset_counts_duplicates_of_projected_rows() -> None:
    # The full actual rows are distinct, but projected onto the matched column they repeat.
    reference = one_column("a", "b")
    actual = select(["x", "extra"], [["a", "1"], ["a", "2"]])
    assert compare(reference, actual, ignore_duplicates=False) == 0
    assert compare(reference, actual, ignore_duplicates=True) == 0
    assert compare(one_column("a"), actual, ignore_duplicates=True) == 1


def test_multiset_with_empty_required_columns_still_counts_rows() -> None:
    reference = select(["a"], [["x"], ["y"]])
    assert compare(reference, one_column("z"), [], ignore_duplicates=False) == 0
    assert compare(reference, one_column("z", "w"), [], ignore_duplicates=False) == 1
    assert compare(reference, one_column("z"), [], ignore_duplicates=True) == 1


def test_ordered_same_order_matches() -> None:
    assert compare(one_column("a", "b", "c"), one_column("a", "b", "c"), ordered=True) == 1


@pytest.mark.parametrize("ignore_duplicates", [True, False])
def test_ordered_reversed_rows_fail(ignore_duplicates: bool) -> None:
    reference = one_column("a", "b", "c")
    actual = one_column("c", "b", "a")
    assert compare(reference, actual, ordered=True, ignore_duplicates=ignore_duplicates) == 0


def test_ordered_ignore_duplicates_drops_repeats_keeping_first_occurrence() -> None:
    reference = one_column("a", "b")
    mode = {"ordered": True, "ignore_duplicates": True}
    assert compare(reference, one_column("a", "a", "b", "a", "b"), **mode) == 1
    assert compare(reference, one_column("b", "a", "b"), **mode) == 0


def test_ordered_ignore_duplicates_drops_reference_repeats() -> None:
    mode = {"ordered": True, "ignore_duplicates": True}
    assert compare(one_column("a", "b", "a"), one_column("a", "b"), **mode) == 1


def test_ordered_exact_requires_the_same_sequence() -> None:
    mode = {"ordered": True, "ignore_duplicates": False}
    assert compare(one_column("a", "b", "a"), one_column("a", "b", "a"), **mode) == 1
    assert compare(one_column("a", "b", "a"), one_column("a", "b"), **mode) == 0
    assert compare(one_column("a", "b"), one_column("a", "a", "b"), **mode) == 0
    assert compare(one_column("a", "a", "b"), one_column("a", "b", "b"), **mode) == 0


def test_ordered_multi_column_rows_must_line_up() -> None:
    reference = select(["a", "b"], [["1", "x"], ["2", "y"]])
    actual = select(["b", "a"], [["x", "1"], ["y", "2"]])
    swapped = select(["a", "b"], [["2", "x"], ["1", "y"]])
    assert compare(reference, actual, ordered=True, ignore_duplicates=False) == 1
    assert compare(reference, swapped, ordered=True, ignore_duplicates=False) == 0


# --------------------------------------------------------------------------------------------
# required_columns and column assignment


def test_only_required_columns_must_match() -> None:
    reference = select(["a", "b"], [["x", "1"], ["y", "2"]])
    actual = select(["a", "b"], [["x", "9"], ["y", "8"]])
    assert compare(reference, actual, ["a"]) == 1
    assert compare(reference, actual, ["b"]) == 0
    assert compare(reference, actual) == 0


def test_required_columns_fewer_actual_columns_suffice() -> None:
    reference = select(["a", "b", "c"], [["x", "1", "p"]])
    assert compare(reference, select(["z"], [["1"]]), ["b"]) == 1


def test_required_column_missing_from_reference_raises() -> None:
    with pytest.raises(ValueError, match="nope"):
        compare(select(["a"], [["x"]]), select(["a"], [["x"]]), ["a", "nope"])


def test_required_column_missing_from_empty_reference_raises() -> None:
    with pytest.raises(ValueError):
        compare(select(["a"], []), select(["a"], []), ["nope"])


def test_extra_actual_columns_are_ignored() -> None:
    reference = select(["a"], [["x"], ["y"]])
    actual = select(["z", "a", "w"], [["1", "x", None], ["2", "y", "q"]])
    assert compare(reference, actual) == 1


def test_column_names_do_not_matter() -> None:
    reference = select(["city", "population"], [["Sofia", integer(1)], ["Varna", integer(2)]])
    actual = select(["c", "n"], [["Sofia", integer(1)], ["Varna", integer(2)]])
    assert compare(reference, actual) == 1


def test_same_names_do_not_force_an_assignment() -> None:
    reference = select(["a", "b"], [["x", "y"]])
    actual = select(["a", "b"], [["y", "x"]])
    assert compare(reference, actual) == 1


def test_column_order_does_not_matter() -> None:
    reference = select(["a", "b", "c"], [["1", "2", "3"], ["4", "5", "6"]])
    actual = select(["c", "a", "b"], [["3", "1", "2"], ["6", "4", "5"]])
    assert compare(reference, actual) == 1


def test_each_reference_column_needs_a_distinct_actual_column() -> None:
    reference = select(["a", "b"], [["x", "x"], ["y", "y"]])
    assert compare(reference, select(["a"], [["x"], ["y"]])) == 0
    assert compare(reference, select(["a", "z"], [["x", "1"], ["y", "2"]])) == 0
    assert compare(reference, select(["a", "z"], [["x", "x"], ["y", "y"]])) == 1


def test_repeated_actual_var_does_not_count_as_two_columns() -> None:
    reference = select(["a", "b"], [["x", "x"]])
    actual = {"head": {"vars": ["a", "a"]}, "results": {"bindings": [{"a": lit("x")}]}}
    assert compare(reference, json.dumps(actual)) == 0


# --------------------------------------------------------------------------------------------
# Decoy columns


@pytest.mark.parametrize(("ordered", "ignore_duplicates"), MODES)
def test_permuted_column_with_same_values_is_not_a_match(
    ordered: bool, ignore_duplicates: bool
) -> None:
    # Each actual column has the reference column's values (same signature in the unordered
    # modes), but the second is permuted across rows so the joint rows differ.
    reference = select(["n", "l"], [["1", "a"], ["2", "b"], ["3", "c"]])
    actual = select(["n", "l"], [["1", "b"], ["2", "c"], ["3", "a"]])
    assert compare(reference, actual, ordered=ordered, ignore_duplicates=ignore_duplicates) == 0


def test_decoy_passing_a_partial_check_is_backtracked() -> None:
    # ref rows (x, y, z): every pair of columns of (dx, y, z) agrees with the reference except
    # the triple; dx is tried before the true x.
    reference = select(
        ["x", "y", "z"], [["1", "a", "p"], ["1", "b", "q"], ["2", "a", "q"], ["2", "b", "p"]]
    )
    actual = select(
        ["dx", "x", "y", "z"],
        [
            ["2", "1", "a", "p"],
            ["2", "1", "b", "q"],
            ["1", "2", "a", "q"],
            ["1", "2", "b", "p"],
        ],
    )
    assert compare(reference, actual) == 1
    assert compare(reference, actual, ignore_duplicates=False) == 1
    without_true_x = select(["dx", "y", "z"], [[r[0], r[2], r[3]] for r in _rows(actual)])
    assert compare(reference, without_true_x) == 0


@pytest.mark.parametrize("ignore_duplicates", [True, False])
def test_right_assignment_found_after_decoys(ignore_duplicates: bool) -> None:
    # dn and dl come first and have the signatures of n and l (same values, permuted rows),
    # but no pairing that uses either of them reproduces the reference rows.
    reference = select(["n", "l"], [["1", "a"], ["2", "b"], ["3", "c"]])
    actual = select(
        ["dn", "dl", "n", "l"],
        [["2", "c", "1", "a"], ["3", "a", "2", "b"], ["1", "b", "3", "c"]],
    )
    decoys_only = select(["dn", "dl"], [["2", "c"], ["3", "a"], ["1", "b"]])
    assert compare(reference, actual, ignore_duplicates=ignore_duplicates) == 1
    assert compare(reference, decoys_only, ignore_duplicates=ignore_duplicates) == 0


def test_decoys_sharing_signatures_with_every_reference_column() -> None:
    # Many actual columns hold the same values; only one pair lines up the rows.
    values = ["a", "b", "c", "d"]
    reference = select(["p", "q"], [[v, values[(i + 1) % 4]] for i, v in enumerate(values)])
    rotations = [[values[(i + k) % 4] for i in range(4)] for k in range(4)]
    names = [f"r{k}" for k in range(4)]
    actual_rows = [[rotations[k][i] for k in range(4)] for i in range(4)]
    assert compare(reference, select(names, actual_rows)) == 1  # r0 with r1 (or r1 with r2...)
    scrambled = [["a", "c"], ["b", "a"], ["c", "d"], ["d", "b"]]
    assert compare(reference, select(["x", "y"], scrambled)) == 0


def _rows(text: str) -> list[list[str]]:
    document = json.loads(text)
    variables = document["head"]["vars"]
    return [[b[v]["value"] for v in variables] for b in document["results"]["bindings"]]


# --------------------------------------------------------------------------------------------
# Large inputs (timings live in benchmarks/bench_sparql.py, not here)


def test_wide_result_with_shuffled_and_extra_columns() -> None:
    rows = 50
    reference = select(
        [f"r{c}" for c in range(8)], [[f"v{c}-{r}" for c in range(8)] for r in range(rows)]
    )
    actual_rows = [[f"v{c}-{r}" if c < 8 else f"w{c}-{r}" for c in range(12)] for r in range(rows)]
    order = [11, 3, 9, 0, 7, 5, 10, 1, 8, 6, 2, 4]
    actual = select([f"a{c}" for c in order], [[row[c] for c in order] for row in actual_rows])
    assert compare(reference, actual) == 1


def test_many_rows_reversed_and_renamed() -> None:
    rows = [
        [integer(r), f"s{r % 97}", decimal(f"{r}.5"), uri(f"http://ex/{r}")] for r in range(10_000)
    ]
    reference = select(["a", "b", "c", "d"], rows)
    actual = select(["d", "c", "b", "a"], [list(reversed(row)) for row in reversed(rows)])
    assert compare(reference, actual) == 1


# --------------------------------------------------------------------------------------------
# Property tests

POOL: list[Term | None] = [
    uri("http://ex/a"),
    uri("http://ex/b"),
    lit("a"),
    lit("b"),
    integer(1),
    decimal("1.0"),  # equals integer 1
    integer(2),
    decimal("2.5"),
    None,
]

PROPERTY_SETTINGS = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _oracle_cell(term: Term | None) -> Hashable:
    if term is None:
        return None
    datatype = term.get("datatype")
    if datatype == XSD + "integer":
        return int(term["value"])
    if datatype == XSD + "decimal":
        return float(term["value"])
    return term["value"]  # pool values are distinct strings, so URI vs literal never collide


def _oracle_normalise(rows: list[tuple[Hashable, ...]], ordered: bool, ignore: bool) -> Any:
    if ordered:
        return tuple(dict.fromkeys(rows)) if ignore else tuple(rows)
    return frozenset(rows) if ignore else Counter(rows)


def oracle(
    ref_vars: list[str],
    ref_rows: list[list[Term | None]],
    act_vars: list[str],
    act_rows: list[list[Term | None]],
    required: list[str],
    ordered: bool,
    ignore_duplicates: bool,
) -> int:
    """Brute force: try every injective assignment of required columns to actual columns."""
    if not ref_rows or not act_rows:
        return int(len(ref_rows) == len(act_rows) and len(act_vars) >= len(required))
    ref_indices = [ref_vars.index(name) for name in required]
    ref_projected = [tuple(_oracle_cell(row[i]) for i in ref_indices) for row in ref_rows]
    target = _oracle_normalise(ref_projected, ordered, ignore_duplicates)
    for assignment in itertools.permutations(range(len(act_vars)), len(required)):
        projected = [tuple(_oracle_cell(row[i]) for i in assignment) for row in act_rows]
        if _oracle_normalise(projected, ordered, ignore_duplicates) == target:
            return 1
    return 0


@st.composite
def tables(draw: st.DrawFn, min_cols: int = 1, max_cols: int = 5, max_rows: int = 15) -> Any:
    n_cols = draw(st.integers(min_cols, max_cols))
    rows = draw(
        st.lists(
            st.lists(st.sampled_from(POOL), min_size=n_cols, max_size=n_cols), max_size=max_rows
        )
    )
    return n_cols, rows


@st.composite
def cases(draw: st.DrawFn, max_cols: int = 5, max_rows: int = 15) -> Any:
    """A reference, its required columns, and an actual result that is either a mutation of
    the reference (so that both matches and near-misses are common) or unrelated."""
    n_cols, ref_rows = draw(tables(max_cols=max_cols, max_rows=max_rows))
    ref_vars = [f"v{c}" for c in range(n_cols)]
    required = draw(
        st.one_of(
            st.just(list(ref_vars)),
            st.lists(st.sampled_from(ref_vars), unique=True, max_size=n_cols),
        )
    )
    kind = draw(st.sampled_from(["copy", "mutated", "random"]))
    if kind == "random":
        act_n, act_rows = draw(tables(max_cols=max_cols, max_rows=max_rows))
    else:
        act_n, act_rows = n_cols, [list(row) for row in ref_rows]
        if kind == "mutated":
            for _ in range(draw(st.integers(1, 3))):
                op = draw(st.sampled_from(["cell", "drop", "dup", "swap"]))
                if op == "cell" and act_rows:
                    r = draw(st.integers(0, len(act_rows) - 1))
                    c = draw(st.integers(0, act_n - 1))
                    act_rows[r][c] = draw(st.sampled_from(POOL))
                elif op == "drop" and act_rows:
                    del act_rows[draw(st.integers(0, len(act_rows) - 1))]
                elif op == "dup" and act_rows:
                    act_rows.append(list(draw(st.sampled_from(act_rows))))
                elif op == "swap" and len(act_rows) > 1:
                    i = draw(st.integers(0, len(act_rows) - 1))
                    j = draw(st.integers(0, len(act_rows) - 1))
                    act_rows[i], act_rows[j] = act_rows[j], act_rows[i]
    act_vars = [f"a{c}" for c in range(act_n)]
    return ref_vars, ref_rows, act_vars, act_rows, required


def _permute_columns(
    variables: list[str], rows: list[list[Term | None]], permutation: list[int]
) -> tuple[list[str], list[list[Term | None]]]:
    return [variables[i] for i in permutation], [[row[i] for i in permutation] for row in rows]


modes = st.sampled_from([(False, True), (False, False), (True, True), (True, False)])


@PROPERTY_SETTINGS
@given(table=tables(), data=st.data())
def test_property_identical_actual_matches_in_every_mode(table: Any, data: st.DataObject) -> None:
    n_cols, rows = table
    variables = [f"v{c}" for c in range(n_cols)]
    ordered, ignore = data.draw(modes)
    text = select(variables, rows)
    assert compare(text, text, ordered=ordered, ignore_duplicates=ignore) == 1


@PROPERTY_SETTINGS
@given(table=tables(), ignore=st.booleans(), data=st.data())
def test_property_shuffled_rows_still_match_unordered(
    table: Any, ignore: bool, data: st.DataObject
) -> None:
    n_cols, rows = table
    variables = [f"v{c}" for c in range(n_cols)]
    shuffled = data.draw(st.permutations(rows))
    reference = select(variables, rows)
    assert compare(reference, select(variables, shuffled), ignore_duplicates=ignore) == 1


@PROPERTY_SETTINGS
@given(table=tables(), data=st.data())
def test_property_permuted_columns_still_match(table: Any, data: st.DataObject) -> None:
    n_cols, rows = table
    variables = [f"v{c}" for c in range(n_cols)]
    ordered, ignore = data.draw(modes)
    permutation = data.draw(st.permutations(range(n_cols)))
    act_vars, act_rows = _permute_columns(variables, rows, permutation)
    reference = select(variables, rows)
    actual = select(act_vars, act_rows)
    assert compare(reference, actual, ordered=ordered, ignore_duplicates=ignore) == 1


@PROPERTY_SETTINGS
@given(table=tables(), data=st.data())
def test_property_renamed_columns_still_match(table: Any, data: st.DataObject) -> None:
    n_cols, rows = table
    variables = [f"v{c}" for c in range(n_cols)]
    ordered, ignore = data.draw(modes)
    # Renaming may reuse reference names for other columns (v0 -> v2 ...).
    names = data.draw(
        st.lists(
            st.sampled_from([f"v{c}" for c in range(6)] + ["x", "y", "z", "w", "u"]),
            min_size=n_cols,
            max_size=n_cols,
            unique=True,
        )
    )
    reference = select(variables, rows)
    actual = select(names, rows)
    assert compare(reference, actual, ordered=ordered, ignore_duplicates=ignore) == 1


@PROPERTY_SETTINGS
@given(table=tables(max_cols=4), data=st.data())
def test_property_extra_columns_still_match(table: Any, data: st.DataObject) -> None:
    n_cols, rows = table
    variables = [f"v{c}" for c in range(n_cols)]
    ordered, ignore = data.draw(modes)
    n_extra = data.draw(st.integers(1, 3))
    extra = [
        data.draw(st.lists(st.sampled_from(POOL), min_size=n_extra, max_size=n_extra)) for _ in rows
    ]
    act_vars = variables + [f"extra{e}" for e in range(n_extra)]
    permutation = data.draw(st.permutations(range(len(act_vars))))
    act_vars, act_rows = _permute_columns(
        act_vars, [row + more for row, more in zip(rows, extra, strict=True)], permutation
    )
    reference = select(variables, rows)
    actual = select(act_vars, act_rows)
    assert compare(reference, actual, ordered=ordered, ignore_duplicates=ignore) == 1


@PROPERTY_SETTINGS
@given(case=cases(), data=st.data())
def test_property_column_permutation_and_renaming_never_change_the_score(
    case: Any, data: st.DataObject
) -> None:
    ref_vars, ref_rows, act_vars, act_rows, required = case
    ordered, ignore = data.draw(modes)
    reference = select(ref_vars, ref_rows)
    before = compare(
        reference, select(act_vars, act_rows), required, ordered=ordered, ignore_duplicates=ignore
    )
    permutation = data.draw(st.permutations(range(len(act_vars))))
    new_vars, new_rows = _permute_columns(act_vars, act_rows, permutation)
    new_vars = [f"renamed_{name}" for name in reversed(new_vars)]
    after = compare(
        reference, select(new_vars, new_rows), required, ordered=ordered, ignore_duplicates=ignore
    )
    assert after == before


@PROPERTY_SETTINGS
@given(case=cases(), ignore=st.booleans(), data=st.data())
def test_property_row_shuffle_never_changes_the_unordered_score(
    case: Any, ignore: bool, data: st.DataObject
) -> None:
    ref_vars, ref_rows, act_vars, act_rows, required = case
    reference = select(ref_vars, ref_rows)
    before = compare(reference, select(act_vars, act_rows), required, ignore_duplicates=ignore)
    shuffled = data.draw(st.permutations(act_rows))
    after = compare(reference, select(act_vars, shuffled), required, ignore_duplicates=ignore)
    assert after == before


@PROPERTY_SETTINGS
@given(case=cases(max_cols=4), data=st.data())
def test_property_extra_columns_never_turn_a_match_into_a_mismatch(
    case: Any, data: st.DataObject
) -> None:
    # Adding columns can only add candidate assignments: 1 stays 1; 0 may become 1 when an
    # added column happens to fit, so the score is monotone rather than invariant.
    ref_vars, ref_rows, act_vars, act_rows, required = case
    ordered, ignore = data.draw(modes)
    reference = select(ref_vars, ref_rows)
    mode = {"ordered": ordered, "ignore_duplicates": ignore}
    before = compare(reference, select(act_vars, act_rows), required, **mode)
    n_extra = data.draw(st.integers(1, 2))
    extra_rows = [
        row + data.draw(st.lists(st.sampled_from(POOL), min_size=n_extra, max_size=n_extra))
        for row in act_rows
    ]
    extra_vars = act_vars + [f"extra{e}" for e in range(n_extra)]
    after = compare(reference, select(extra_vars, extra_rows), required, **mode)
    assert after >= before
    expected = oracle(ref_vars, ref_rows, extra_vars, extra_rows, required, ordered, ignore)
    assert after == expected


@PROPERTY_SETTINGS
@given(case=cases(max_cols=4, max_rows=8), data=st.data())
def test_property_agrees_with_brute_force_oracle(case: Any, data: st.DataObject) -> None:
    ref_vars, ref_rows, act_vars, act_rows, required = case
    reference = select(ref_vars, ref_rows)
    actual = select(act_vars, act_rows)
    for ordered, ignore in [(False, True), (False, False), (True, True), (True, False)]:
        expected = oracle(ref_vars, ref_rows, act_vars, act_rows, required, ordered, ignore)
        got = compare(reference, actual, required, ordered=ordered, ignore_duplicates=ignore)
        assert got == expected, (ordered, ignore)


@pytest.mark.parametrize(("ordered", "ignore_duplicates"), MODES)
@PROPERTY_SETTINGS
@given(data=st.data())
def test_property_decoy_heavy_inputs_agree_with_oracle(
    ordered: bool, ignore_duplicates: bool, data: st.DataObject
) -> None:
    # Actual columns are row-permutations of reference columns: signatures collide, rows differ.
    n_cols = data.draw(st.integers(1, 3))
    n_rows = data.draw(st.integers(1, 6))
    small_pool = [*POOL[:3], integer(1), decimal("1.0")]
    ref_rows = [
        data.draw(st.lists(st.sampled_from(small_pool), min_size=n_cols, max_size=n_cols))
        for _ in range(n_rows)
    ]
    ref_vars = [f"v{c}" for c in range(n_cols)]
    columns = [[row[c] for row in ref_rows] for c in range(n_cols)]
    act_columns = []
    for _ in range(data.draw(st.integers(n_cols, n_cols + 2))):
        source = data.draw(st.sampled_from(columns))
        act_columns.append(data.draw(st.permutations(source)))
    act_vars = [f"a{c}" for c in range(len(act_columns))]
    act_rows = [[column[r] for column in act_columns] for r in range(n_rows)]
    expected = oracle(ref_vars, ref_rows, act_vars, act_rows, ref_vars, ordered, ignore_duplicates)
    got = compare(
        select(ref_vars, ref_rows),
        select(act_vars, act_rows),
        ordered=ordered,
        ignore_duplicates=ignore_duplicates,
    )
    assert got == expected


def test_adversarial_search_gives_up_deterministically(monkeypatch: pytest.MonkeyPatch) -> None:
    # Binary columns: every column of the actual has the signature of every reference column
    # and every partial assignment agrees, so only a full assignment can tell (and none fits).
    import itertools

    from graphrag_eval.steps import sparql as module

    monkeypatch.setattr(module, "SEARCH_BUDGET_CELLS", 200_000)
    ref_rows = [[integer(str(b)) for b in row] for row in itertools.product([0, 1], repeat=5)][1:]
    act_rows = [[integer(str(b)) for b in row] for row in itertools.product([0, 1], repeat=8)]
    reference = select([f"r{i}" for i in range(5)], ref_rows)
    actual = select([f"a{i}" for i in range(8)], act_rows)
    with pytest.raises(module.SearchBudgetExceeded, match="given up as no match"):
        compare(reference, actual)


def test_an_uncommon_datatype_is_read_as_its_lexical_value() -> None:
    # Common XSD datatypes are decoded as shared strings; any other takes the general decoder.
    wkt = "http://www.opengis.net/ont/geosparql#wktLiteral"
    reference = select(["p", "n"], [[lit("POINT(1 2)", wkt), integer(3)]])
    parsed = parse_sparql_results(reference)
    assert parsed.columns == {"p": ("POINT(1 2)",), "n": (3,)}
    assert compare(reference, select(["x", "y"], [[lit("POINT(1 2)", wkt), decimal("3.0")]])) == 1
    assert compare(reference, select(["x", "y"], [[lit("POINT(1 3)", wkt), integer(3)]])) == 0


def test_a_comparison_leaves_no_reference_cycle_for_the_collector() -> None:
    # The column search is a nested function that calls itself: left as it was, each
    # comparison made a cycle holding the actual columns until the collector's next pass
    # (docs/benchmarks.md, "Speed, third pass on `evaluate`"). Only this module's garbage is
    # looked at: another thread's cycles do not count.
    import gc
    import types

    from graphrag_eval.steps import sparql

    reference = parse_sparql_results(
        select(["a", "b"], [[uri("x"), uri("y")], [uri("z"), uri("w")]])
    )
    actual = parse_sparql_results(
        select(["p", "q", "r"], [[uri("x"), uri("y"), uri("y")], [uri("z"), uri("w"), uri("w")]])
    )
    enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a pass finds unreachable is kept in gc.garbage
    try:
        gc.collect()
        gc.garbage.clear()
        assert compare_sparql_results(reference, actual) == 1
        assert compare_sparql_results(reference, actual, ordered=True) == 1
        gc.collect()
        left = [
            found
            for found in gc.garbage
            if isinstance(found, types.FunctionType) and found.__module__ == sparql.__name__
        ]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()
    assert left == []
