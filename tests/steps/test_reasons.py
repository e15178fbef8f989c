"""``mismatch_reason`` and ``nearest_match`` on reference steps (docs/steps.md, "Why a step
did not match"), through a real evaluation run: one test per reason kind."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from graphrag_eval import run_evaluation
from graphrag_eval.steps import StepRule, register_step_rule, unregister_step_rule
from graphrag_eval.steps.reasons import REASON_CHARACTERS

from builders import (
    ask,
    contexts,
    dataset,
    lit,
    question,
    ref_step,
    response,
    sparql,
    sparql_ref,
    step,
    uri,
)

ROWS = [[uri(f"urn:T{n}"), f"OSLO T{n}"] for n in range(1, 6)]


def reference_step(
    reference: dict[str, Any], actual: Sequence[dict[str, Any]], config: Any = None
) -> dict[str, Any]:
    """The reference step of a one-step question after a run against ``actual``."""
    results = run_evaluation(
        dataset(question("q1", [[reference]])), [response("q1", list(actual))], config
    )
    return dict(results[0]["reference_steps"][0][0])


def reason(reference: dict[str, Any], *actual: dict[str, Any], config: Any = None) -> str:
    found = reference_step(reference, actual, config)
    assert "matches" not in found
    return str(found["mismatch_reason"])


# -- not written when it matched ------------------------------------------------------------


def test_a_full_match_has_no_reason_and_the_user_data_is_not_changed() -> None:
    reference = sparql_ref(sparql(["t", "name"], ROWS))
    found = reference_step(reference, [step("sparql_query", sparql(["t", "name"], ROWS), "s1")])
    assert found["matches"] == "s1"
    assert "mismatch_reason" not in found and "nearest_match" not in found
    assert "mismatch_reason" not in reference


def test_stale_reasons_from_an_earlier_output_are_replaced() -> None:
    reference = sparql_ref(sparql(["t", "name"], ROWS), mismatch_reason="old", nearest_match="x")
    found = reference_step(reference, [step("sparql_query", sparql(["t", "name"], ROWS), "s1")])
    assert "mismatch_reason" not in found and "nearest_match" not in found


# -- SPARQL ---------------------------------------------------------------------------------


def test_sparql_missing_reference_rows_name_the_first() -> None:
    found = reference_step(
        sparql_ref(sparql(["t", "name"], ROWS)),
        [step("sparql_query", sparql(["t", "name"], ROWS[2:]), "s1")],
    )
    assert found["mismatch_reason"] == (
        "2 of 5 reference rows missing (first: ('urn:T1', 'OSLO T1'))"
    )
    assert found["nearest_match"] == "s1"


def test_sparql_extra_rows_are_counted() -> None:
    extra = [[uri(f"urn:X{n}"), f"X{n}"] for n in range(3)]
    why = reason(
        sparql_ref(sparql(["t", "name"], ROWS)),
        step("sparql_query", sparql(["t", "name"], ROWS + extra), "s1"),
    )
    assert why == "3 extra rows (first: ('urn:X0', 'X0'))"


def test_sparql_order_differs_from_the_first_row_out_of_place() -> None:
    reordered = [*ROWS[:3], ROWS[4], ROWS[3]]
    why = reason(
        sparql_ref(sparql(["t", "name"], ROWS), ordered=True),
        step("sparql_query", sparql(["t", "name"], reordered), "s1"),
    )
    assert why == "same rows, order differs (ordered) from row 4"


def test_sparql_required_column_without_a_counterpart_names_the_closest() -> None:
    changed = [[row[0], f"other {n}" if n < 3 else row[1]] for n, row in enumerate(ROWS)]
    why = reason(
        sparql_ref(sparql(["t", "name"], ROWS)),
        step("sparql_query", sparql(["t", "label"], changed), "s1"),
    )
    assert why == (
        "required column 'name' has no matching actual column (closest: 'label', "
        "3 of 5 values differ)"
    )


def test_sparql_plain_literal_against_an_integer_names_both_kinds() -> None:
    reference = sparql(["count"], [[lit("1", "integer")], [lit("2", "integer")]])
    actual = sparql(["count"], [["1"], ["2"]])
    why = reason(sparql_ref(reference), step("sparql_query", actual, "s1"))
    assert why == "'1' (plain literal) vs 1 (xsd:integer) in column 'count'"


def test_sparql_ask_against_select() -> None:
    why = reason(sparql_ref(sparql(["t", "name"], ROWS)), step("sparql_query", ask(True), "s1"))
    assert why == "ASK result vs SELECT result"
    assert reason(sparql_ref(ask(True)), step("sparql_query", ask(False))) == (
        "ASK result False vs True"
    )


def test_sparql_actual_output_in_turtle() -> None:
    why = reason(
        sparql_ref(sparql(["t", "name"], ROWS)),
        step("sparql_query", "@prefix ex: <http://example.org/> .\nex:a ex:b ex:c .", "s1"),
    )
    assert why == "actual output is not SPARQL results JSON (looks like Turtle)"


def test_sparql_fewer_actual_columns_than_required() -> None:
    why = reason(
        sparql_ref(sparql(["t", "name"], ROWS)),
        step("sparql_query", sparql(["t"], [row[:1] for row in ROWS]), "s1"),
    )
    assert why == "fewer actual columns (1) than required (2)"


def test_the_nearest_of_several_candidates_is_the_closest() -> None:
    found = reference_step(
        sparql_ref(sparql(["t", "name"], ROWS)),
        [
            step("sparql_query", sparql(["t", "name"], ROWS[:4]), "close"),
            step("sparql_query", sparql(["t", "name"], ROWS[:1]), "far"),
        ],
    )
    assert found["nearest_match"] == "close"
    assert found["mismatch_reason"].startswith("1 of 5 reference rows missing")
    assert found["mismatch_reason"].endswith("(the nearest of 2 candidate actual steps)")


# -- no candidate, failed candidates, candidates taken --------------------------------------


def test_no_actual_step_of_the_name() -> None:
    found = reference_step(
        sparql_ref(sparql(["t", "name"], ROWS)), [step("retrieval", contexts("a"))]
    )
    assert found["mismatch_reason"] == "no actual step named sparql_query"
    assert "nearest_match" not in found


def test_a_failed_actual_step_says_so() -> None:
    found = reference_step(
        sparql_ref(sparql(["t", "name"], ROWS)),
        [step("sparql_query", "timeout", "s1", status="error")],
    )
    assert found["mismatch_reason"] == "actual step s1 did not succeed (status error)"
    assert found["nearest_match"] == "s1"


def test_an_actual_step_taken_by_another_reference_step() -> None:
    same = sparql(["t", "name"], ROWS)
    results = run_evaluation(
        dataset(question("q1", [[sparql_ref(same), sparql_ref(same)]])),
        [response("q1", [step("sparql_query", same, "s1")])],
    )
    first, second = results[0]["reference_steps"][0]
    assert second["matches"] == "s1"
    assert first["mismatch_reason"] == (
        "actual step s1 matches, but was matched to reference step 1.2"
    )


# -- retrieval, time series, JSON, text -----------------------------------------------------


def test_retrieval_recall_names_the_missing_context() -> None:
    found = reference_step(
        ref_step("retrieval", contexts(("doc/1", None), ("doc/5", None))),
        [step("retrieval", contexts(("doc/1", None), ("doc/9", None)), "r1", args={"k": 2})],
    )
    assert found["matches"] == "r1"  # a partial match: recall 0.5
    assert found["mismatch_reason"] == (
        "recall@2 = 1/2: reference context doc/5 not retrieved in the first 2"
    )
    assert found["nearest_match"] == "r1"


def test_time_series_mrid() -> None:
    why = reason(
        ref_step("retrieve_time_series", args={"mrid": "B"}),
        step("retrieve_time_series", "[]", "t1", args={"mrid": "A"}),
    )
    assert why == "mrid differs: A vs B"


def test_data_points_granularity_and_relative_start() -> None:
    reference = ref_step(
        "retrieve_data_points",
        args={"external_id": "x", "granularity": "1d", "start": "365d-ago"},
    )
    why = reason(
        reference,
        step("retrieve_data_points", "[]", "d1", args={"external_id": "x", "granularity": "1w"}),
    )
    assert why == "granularity 1w vs 1d"
    why = reason(
        reference,
        step(
            "retrieve_data_points",
            "[]",
            "d1",
            args={"external_id": "x", "granularity": "1d", "start": "2025-01-01"},
            execution_timestamp="2026-11-24T00:00:00Z",
        ),
    )
    assert why == "start 2025-01-01 vs 365d-ago resolved to 2025-11-24T00:00:00Z"


def test_json_output_names_the_path() -> None:
    expected = {"results": [{"value": 1}, {"value": 2}, {"value": 4}]}
    actual = {"results": [{"value": 1}, {"value": 2}, {"value": 3}]}
    why = reason(
        ref_step("lookup", json.dumps(expected), output_media_type="application/json"),
        step("lookup", json.dumps(actual), "j1"),
    )
    assert why == "differs at $.results[2].value: 3 vs 4"


def test_identical_output_names_the_first_differing_character() -> None:
    text = "x" * 119
    why = reason(ref_step("lookup", text + "abc"), step("lookup", text + "abd", "l1"))
    assert why == "outputs differ from character 122: 'd' vs 'c'"


def test_iri_discovery_names_the_iri() -> None:
    why = reason(
        ref_step("iri_discovery", "<http://example.org/OSLO>"),
        step("autocomplete_search", sparql(["iri"], [[uri("http://example.org/BERGEN")]]), "a1"),
    )
    assert why == "IRI <http://example.org/OSLO> not found in the output's URI bindings"


# -- groups ---------------------------------------------------------------------------------


def test_all_groups_says_which_groups_were_not_compared() -> None:
    same = sparql(["t", "name"], ROWS)
    results = run_evaluation(
        dataset(question("q1", [[sparql_ref(same)], [ref_step("lookup", "x")]])),
        [response("q1", [step("sparql_query", same, "s1")])],
        {"steps": {"score_mode": "all_groups"}},
    )
    first, second = (group[0] for group in results[0]["reference_steps"])
    assert second["mismatch_reason"] == "no actual step named lookup"
    assert first["mismatch_reason"] == "not compared: reference group 2 was not fully matched"


@pytest.mark.parametrize("mode", ["last_group", "all_groups"])
def test_earlier_groups_of_last_group_mode_are_not_scored(mode: str) -> None:
    same = sparql(["t", "name"], ROWS)
    results = run_evaluation(
        dataset(question("q1", [[ref_step("lookup", "x")], [sparql_ref(same)]])),
        [response("q1", [step("sparql_query", same, "s1")])],
        {"steps": {"score_mode": mode}},
    )
    first, second = (group[0] for group in results[0]["reference_steps"])
    assert second["matches"] == "s1"
    if mode == "last_group":
        assert first["mismatch_reason"] == (
            "not scored: in last_group mode only reference group 2 is scored; expected output 'x'"
        )
        assert "nearest_match" not in first
    else:
        assert first["mismatch_reason"] == "no actual step named lookup"


def last_group_reason(reference: dict[str, Any]) -> str:
    """The reason of ``reference`` in the first of two groups, in last_group mode (the
    second group matched)."""
    same = sparql(["t", "name"], ROWS)
    results = run_evaluation(
        dataset(question("q1", [[reference], [sparql_ref(same)]])),
        [response("q1", [step("sparql_query", same, "s1")])],
    )
    first = results[0]["reference_steps"][0][0]
    assert "matches" not in first and "nearest_match" not in first
    return str(first["mismatch_reason"])


NOT_SCORED = "not scored: in last_group mode only reference group 2 is scored; "


def test_a_group_not_scored_in_last_group_mode_shows_the_expected_iri() -> None:
    assert last_group_reason(ref_step("iri_discovery", "<http://example.org/OSLO>")) == (
        NOT_SCORED + "expected IRI <http://example.org/OSLO>"
    )
    assert last_group_reason(ref_step("iri_discovery", " http://example.org/OSLO ")) == (
        NOT_SCORED + "expected IRI <http://example.org/OSLO>"
    )


def test_a_group_not_scored_in_last_group_mode_shows_the_expected_sparql_rows() -> None:
    assert last_group_reason(sparql_ref(sparql(["t", "name"], ROWS))) == (
        NOT_SCORED + "expected 5 rows of (t, name), first ('urn:T1', 'OSLO T1')"
    )
    assert last_group_reason(sparql_ref(sparql(["t"], []))) == (
        NOT_SCORED + "expected no rows of (t)"
    )
    assert last_group_reason(sparql_ref(ask(True))) == NOT_SCORED + "expected ASK result True"


def test_a_group_not_scored_in_last_group_mode_shows_the_expected_args_and_output() -> None:
    reference = ref_step("retrieve_time_series", "[]", args={"mrid": ["A", "B"]})
    assert last_group_reason(reference) == (
        NOT_SCORED + 'expected args {"mrid": ["A", "B"]}, output \'[]\''
    )
    long = ref_step("lookup", "x" * 500)
    assert last_group_reason(long) == NOT_SCORED + "expected output '" + "x" * 76 + "..."


def test_all_groups_a_step_matched_after_the_next_groups_match_says_so() -> None:
    """Group 1's step is matched by t2, but t2 comes after t1, group 2's match: not an
    argument difference (the arguments are identical)."""
    results = run_evaluation(
        dataset(
            question(
                "q1",
                [
                    [ref_step("retrieve_time_series", args={"mrid": "A"})],
                    [ref_step("retrieve_time_series", args={"mrid": "B"})],
                ],
            )
        ),
        [
            response(
                "q1",
                [
                    step("retrieve_time_series", "[]", "t1", args={"mrid": "B"}),
                    step("retrieve_time_series", "[]", "t2", args={"mrid": "A"}),
                ],
            )
        ],
        {"steps": {"score_mode": "all_groups"}},
    )
    first, second = (group[0] for group in results[0]["reference_steps"])
    assert second["matches"] == "t1"
    assert first["mismatch_reason"] == (
        "actual step t2 matches, but comes after actual step t1, the first match of reference "
        "group 2 (all_groups mode: a group may use only actual steps before the next group's "
        "first match) (the nearest of 2 candidate actual steps)"
    )
    assert first["nearest_match"] == "t2"


# -- rules registered in code ---------------------------------------------------------------


def test_a_registered_rule_explains_with_its_own_line_or_a_generic_one() -> None:
    def explain(ref: Any, act: Any) -> str:
        if act.output == "boom":
            raise RuntimeError("a bug in the rule's explanation")
        return f"wanted {ref.output}"

    register_step_rule(
        StepRule(name="halves", reference_steps="halves", score=lambda r, a: 0.5, explain=explain)
    )
    register_step_rule(StepRule(name="zero", reference_steps="zero", score=lambda r, a: 0.0))
    try:
        assert reason(ref_step("zero", "x"), step("zero", "y", "z1")) == "scored 0 by rule zero"
        found = reference_step(ref_step("halves", "x"), [step("halves", "y", "h1")])
        assert found["matches"] == "h1"  # a partial match
        assert found["mismatch_reason"] == "wanted x"
        found = reference_step(ref_step("halves", "x"), [step("halves", "boom", "h1")])
        assert found["mismatch_reason"] == "scored 0.5 by rule halves"
    finally:
        unregister_step_rule("halves")
        unregister_step_rule("zero")


def test_a_reason_quoting_long_values_is_cut() -> None:
    why = reason(
        ref_step("retrieve_time_series", args={"mrid": [f"m{n}" for n in range(1000)]}),
        step("retrieve_time_series", "[]", "t1", args={"mrid": "A"}),
    )
    assert why.startswith("mrid differs: A vs m0, m1")
    assert len(why) == REASON_CHARACTERS and why.endswith("...")


def test_an_unreadable_actual_output_gives_the_reason_it_could_not_be_read() -> None:
    found = reference_step(
        ref_step("retrieval", contexts(("doc/1", None))),
        [step("retrieval", "HTTP 500: upstream error", "r1")],
    )
    assert found["mismatch_reason"] == "output is not a JSON list of contexts"
    assert found["nearest_match"] == "r1"
