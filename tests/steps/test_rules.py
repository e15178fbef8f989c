"""The step match rules (docs/steps.md), through the rule registry's ``match_score``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from graphrag_eval.inputs import ActualStep, ReferenceStep, parse_reference, parse_responses
from graphrag_eval.steps.rules import (
    PairScore,
    StepRule,
    check_reference_step,
    match_score,
    register_step_rule,
    score_pair,
    step_rules,
    unregister_step_rule,
)

from builders import contexts, dataset, question, ref_step, response, sparql, sparql_ref, step


def _ref(data: dict[str, Any]) -> ReferenceStep:
    [parsed] = parse_reference(dataset(question("q", [[data]])), check_step=check_reference_step)
    assert parsed.reference_steps is not None
    return parsed.reference_steps[0][0]


def _act(data: dict[str, Any]) -> ActualStep:
    steps = parse_responses([response("q", [data])]).responses["q"].actual_steps
    assert steps is not None
    return steps[0]


def score(reference: dict[str, Any], actual: dict[str, Any]) -> float:
    return match_score(_ref(reference), _act(actual))


def test_rules_are_tried_in_the_specs_order() -> None:
    assert [rule.name for rule in step_rules()] == [
        "sparql_results",
        "retrieval_recall_at_k",
        "retrieve_time_series",
        "retrieve_data_points",
        "iri_discovery",
        "json_output",
        "identical_output",
    ]


# ---------------------------------------------------------------- 1. SPARQL


def test_sparql_rule_uses_the_results_comparison() -> None:
    reference = sparql_ref(sparql(["a"], [["x"], ["y"]]))
    assert score(reference, step("sparql_query", sparql(["b"], [["y"], ["x"]]))) == pytest.approx(
        1.0
    )
    assert score(reference, step("sparql_query", sparql(["b"], [["y"]]))) == pytest.approx(0.0)


def test_sparql_query_without_media_type_falls_back_to_identical_output() -> None:
    output = sparql(["a"], [["x"]])
    reference = ref_step("sparql_query", output)
    assert score(reference, step("sparql_query", output)) == pytest.approx(1.0)
    assert score(reference, step("sparql_query", sparql(["b"], [["x"]]))) == pytest.approx(0.0)


def test_turtle_output_scores_zero() -> None:
    reference = sparql_ref(sparql(["a"], [["x"]]))
    assert score(reference, step("sparql_query", "<urn:a> <urn:b> <urn:c> .")) == pytest.approx(0.0)


def test_broken_reference_never_matches() -> None:
    reference = sparql_ref("not json")
    assert _ref(reference).problem is not None
    assert score(reference, step("sparql_query", "not json")) == pytest.approx(0.0)


# ---------------------------------------------------------------- 2. retrieval


RETRIEVED = contexts(("d1", "a"), ("d3", "c"), ("d2", "b"))


def test_retrieval_recall_at_k_from_the_actual_args() -> None:
    reference = ref_step("retrieval", contexts(("d1", "a"), ("d2", "b")))
    assert score(reference, step("retrieval", RETRIEVED, args={"k": 2})) == pytest.approx(0.5)
    assert score(reference, step("retrieval", RETRIEVED, args={"k": 3})) == pytest.approx(1.0)


def test_retrieval_k_defaults_to_the_number_retrieved() -> None:
    reference = ref_step("retrieval", contexts(("d1", "a"), ("d2", "b")))
    assert score(reference, step("retrieval", RETRIEVED)) == pytest.approx(1.0)


def test_retrieval_contexts_without_ids_are_identified_by_text() -> None:
    reference = ref_step("retrieval", contexts("alpha", "beta"))
    assert score(reference, step("retrieval", contexts("beta", "gamma"))) == pytest.approx(0.5)


def test_retrieval_reference_without_output_uses_identical_output() -> None:
    reference = ref_step("retrieval", args={"query": "x"})
    assert score(reference, step("retrieval", RETRIEVED)) == pytest.approx(0.0)


def test_unreadable_actual_retrieval_output_scores_zero() -> None:
    reference = ref_step("retrieval", contexts(("d1", "a")))
    assert score(reference, step("retrieval", "Error: index offline")) == pytest.approx(0.0)


# ---------------------------------------------------------------- 3. retrieve_time_series


def _series(**args: Any) -> dict[str, Any]:
    return ref_step("retrieve_time_series", args=args)


def _series_call(**args: Any) -> dict[str, Any]:
    return step("retrieve_time_series", "[]", "t", args=args)


@pytest.mark.parametrize(
    ("reference", "actual", "expected"),
    [
        ({"mrid": "m1"}, {"mrid": ["m1"]}, 1.0),  # a string is a one-item list
        ({"mrid": ["m2", "m1"]}, {"mrid": ["m1", "m2"]}, 1.0),  # lists are sorted
        ({"mrid": ["m1"]}, {"mrid": ["m1", "m2"]}, 0.0),
        ({"mrid": "m1", "limit": 10}, {"mrid": "m1", "limit": 10}, 1.0),
        ({"mrid": "m1", "limit": 10}, {"mrid": "m1", "limit": 5}, 0.0),
        ({"mrid": "m1"}, {"mrid": "m1", "limit": 5}, 1.0),  # no reference limit: any limit
        ({"limit": 3}, {"limit": 3}, 1.0),  # no mrid on either side, equal limits
        ({"limit": 3}, {"mrid": "m1", "limit": 3}, 0.0),
        ({"limit": 3}, {"limit": 4}, 0.0),
    ],
)
def test_time_series(reference: dict[str, Any], actual: dict[str, Any], expected: float) -> None:
    assert score(_series(**reference), _series_call(**actual)) == expected


# ---------------------------------------------------------------- 4. retrieve_data_points

BASE = {"external_id": "ts1", "aggregates": ["average"], "granularity": "15m", "limit": 100}
EXECUTED = "2026-11-21T12:00:00Z"


def _points(**args: Any) -> dict[str, Any]:
    return ref_step("retrieve_data_points", args={**BASE, **args})


def _points_call(execution_timestamp: Any = EXECUTED, **args: Any) -> dict[str, Any]:
    return step(
        "retrieve_data_points",
        "[]",
        "p",
        args={**BASE, **args},
        execution_timestamp=execution_timestamp,
    )


@pytest.mark.parametrize("granularity", ["15m", "15min", "15minutes", "15 Minutes", "15mins"])
def test_data_points_granularity_forms(granularity: str) -> None:
    assert score(_points(), _points_call(granularity=granularity)) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("reference", "actual", "expected"),
    [
        ("1h", "1hour", 1.0),
        ("h", "1h", 1.0),  # a missing count is 1
        ("1mo", "1month", 1.0),
        ("1m", "1mo", 0.0),  # minutes are not months
        ("60m", "1h", 0.0),  # only the unit is normalised
        ("1q", "1quarter", 1.0),
        ("2y", "2years", 1.0),
        ("1d", "1w", 0.0),
    ],
)
def test_data_points_granularity_units(reference: str, actual: str, expected: float) -> None:
    assert score(_points(granularity=reference), _points_call(granularity=actual)) == expected


def test_data_points_lists_and_limit() -> None:
    reference = _points(external_id=["b", "a"], aggregates="max")
    assert score(
        reference, _points_call(external_id=["a", "b"], aggregates=["max"])
    ) == pytest.approx(1.0)
    assert score(reference, _points_call(external_id=["a"], aggregates=["max"])) == pytest.approx(
        0.0
    )
    assert score(_points(), _points_call(limit=10)) == pytest.approx(0.0)


def test_data_points_relative_reference_time_within_60_seconds() -> None:
    reference = _points(start="2d-ago", end="now")
    near = _points_call(start="2026-11-19T12:00:30Z", end="2026-11-21T11:59:10+00:00")
    far = _points_call(start="2026-11-19T12:01:30Z", end="2026-11-21T12:00:00Z")
    assert score(reference, near) == pytest.approx(1.0)
    assert score(reference, far) == pytest.approx(0.0)


def test_data_points_relative_times_in_other_units_and_ahead() -> None:
    reference = _points(start="24h-ago", end="1d-ahead")
    actual = _points_call(start="2026-11-20T12:00:00Z", end="2026-11-22T12:00:00Z")
    assert score(reference, actual) == pytest.approx(1.0)


def test_data_points_execution_timestamp_in_epoch_milliseconds() -> None:
    epoch_ms = 1795262400000  # 2026-11-21T12:00:00Z
    reference = _points(start="1h-ago")
    actual = _points_call(execution_timestamp=epoch_ms, start="2026-11-21T11:00:00Z")
    assert score(reference, actual) == pytest.approx(1.0)


def test_data_points_relative_actual_against_relative_reference() -> None:
    assert score(_points(start="1d-ago"), _points_call(start="24h-ago")) == pytest.approx(1.0)
    assert score(_points(start="1d-ago"), _points_call(start="2d-ago")) == pytest.approx(0.0)


def test_data_points_relative_reference_needs_an_execution_timestamp() -> None:
    actual = _points_call(execution_timestamp=None, start="2026-11-19T12:00:00Z")
    assert score(_points(start="2d-ago"), actual) == pytest.approx(0.0)


def test_data_points_absolute_times_compare_in_utc_and_naive_is_utc() -> None:
    reference = _points(start="2026-01-01T00:00:00Z")
    assert score(reference, _points_call(start="2026-01-01T01:00:00+01:00")) == pytest.approx(1.0)
    assert score(reference, _points_call(start="2026-01-01T00:00:00")) == pytest.approx(1.0)
    assert score(reference, _points_call(start="2026-01-01T00:00:01Z")) == pytest.approx(0.0)


def test_data_points_relative_actual_against_absolute_reference_fails() -> None:
    reference = _points(start="2026-11-19T12:00:00Z")
    assert score(reference, _points_call(start="2d-ago")) == pytest.approx(0.0)


def test_data_points_missing_times_must_be_missing_on_both_sides() -> None:
    assert score(_points(start="1d-ago"), _points_call()) == pytest.approx(0.0)
    assert score(_points(), _points_call(start="1d-ago")) == pytest.approx(0.0)


def test_data_points_unreadable_reference_is_a_reference_problem() -> None:
    assert _ref(_points(granularity="fortnightly")).problem is not None
    assert _ref(_points(start="yesterday-ish")).problem is not None


# ---------------------------------------------------------------- 5. iri_discovery

IRI = "urn:uuid:f1769664-9aeb-11e5-91da-b8763fd99c5f"


def _autocomplete(*terms: dict[str, str]) -> dict[str, Any]:
    return step("autocomplete_search", sparql(["iri"], [[term] for term in terms]), "a")


def test_iri_discovery_by_autocomplete_uri_binding() -> None:
    reference = ref_step("iri_discovery", IRI)
    found = _autocomplete({"type": "uri", "value": "urn:other"}, {"type": "uri", "value": IRI})
    assert score(reference, found) == pytest.approx(1.0)
    assert score(reference, _autocomplete({"type": "uri", "value": "urn:other"})) == pytest.approx(
        0.0
    )


def test_iri_discovery_ignores_a_literal_with_the_same_text() -> None:
    reference = ref_step("iri_discovery", IRI)
    assert score(reference, _autocomplete({"type": "literal", "value": IRI})) == pytest.approx(0.0)


def test_iri_discovery_accepts_angle_brackets_in_the_reference() -> None:
    reference = ref_step("iri_discovery", f"<{IRI}>")
    assert score(reference, _autocomplete({"type": "uri", "value": IRI})) == pytest.approx(1.0)


def test_iri_discovery_by_sparql_query_output_text() -> None:
    reference = ref_step("iri_discovery", IRI)
    assert score(reference, step("sparql_query", f"... <{IRI}> ...", "s")) == pytest.approx(1.0)
    assert score(reference, step("sparql_query", "nothing here", "s")) == pytest.approx(0.0)


def test_iri_discovery_other_tools_and_bad_outputs() -> None:
    reference = ref_step("iri_discovery", IRI)
    assert score(reference, step("retrieval", IRI, "r")) == pytest.approx(0.0)
    assert score(reference, step("autocomplete_search", "Error: timeout", "a")) == pytest.approx(
        0.0
    )


def test_iri_discovery_reference_must_be_an_iri_string() -> None:
    assert _ref(ref_step("iri_discovery", {"iri": IRI})).problem is not None


# ---------------------------------------------------------------- 6. JSON and 7. identical


def test_json_output_compares_parsed_values() -> None:
    reference = ref_step("lookup", '{"a": 1, "b": [1, 2]}', output_media_type="application/json")
    assert score(reference, step("lookup", '{"b": [1, 2], "a": 1.0}', "l")) == pytest.approx(1.0)
    assert score(reference, step("lookup", '{"b": [2, 1], "a": 1}', "l")) == pytest.approx(0.0)
    assert score(reference, step("lookup", "{broken", "l")) == pytest.approx(0.0)


def test_json_reference_that_does_not_parse_is_a_problem() -> None:
    reference = ref_step("lookup", "{broken", output_media_type="application/json")
    assert _ref(reference).problem == "output is not valid JSON"


def test_identical_output() -> None:
    assert score(ref_step("lookup", "x y"), step("lookup", "x y", "l")) == pytest.approx(1.0)
    assert score(ref_step("lookup", "x y"), step("lookup", "x  y", "l")) == pytest.approx(0.0)


def test_different_names_never_match() -> None:
    assert score(ref_step("lookup", "x"), step("search", "x", "s")) == pytest.approx(0.0)


def test_unsuccessful_or_malformed_actual_steps_never_match() -> None:
    assert score(
        ref_step("lookup", "x"), step("lookup", "x", "l", status="error")
    ) == pytest.approx(0.0)
    assert score(ref_step("lookup", "x"), {"name": "lookup", "output": "x"}) == pytest.approx(0.0)


# ---------------------------------------------------------------- the registry


@pytest.fixture
def custom_rule() -> Iterator[StepRule]:
    rule = register_step_rule(
        StepRule(
            name="case_insensitive_lookup",
            applies=lambda ref, act: ref.name == act.name == "lookup",
            score=lambda ref, act: float(str(ref.output).casefold() == str(act.output).casefold()),
        )
    )
    yield rule
    unregister_step_rule(rule.name)


def test_a_registered_rule_takes_part_in_matching(custom_rule: StepRule) -> None:
    assert score(ref_step("lookup", "OSLO"), step("lookup", "oslo", "l")) == pytest.approx(1.0)
    assert [r.name for r in step_rules()][-2:] == [custom_rule.name, "identical_output"]


def test_unregistering_restores_the_default() -> None:
    assert score(ref_step("lookup", "OSLO"), step("lookup", "oslo", "l")) == pytest.approx(0.0)


def test_rule_that_raises_on_bad_actual_data_scores_zero() -> None:
    # a JSON decode error inside a rule must not escape
    reference = ref_step("iri_discovery", IRI)
    assert score(reference, step("autocomplete_search", json.dumps([1, 2]), "a")) == pytest.approx(
        0.0
    )


# ---------------------------------------------------------------- review regressions


def test_json_true_is_not_one_and_nan_is_nan() -> None:
    reference = ref_step("lookup", '{"a": true, "b": NaN}', output_media_type="application/json")
    assert score(reference, step("lookup", '{"a": 1, "b": NaN}', "l")) == pytest.approx(0.0)
    assert score(reference, step("lookup", '{"b": NaN, "a": true}', "l")) == pytest.approx(1.0)
    assert (
        score(
            ref_step("lookup", "false", output_media_type="application/json"),
            step("lookup", "0", "l"),
        )
        == 0.0
    )


def test_unreadable_actual_outputs_report_why() -> None:
    sparql_reference = _ref(sparql_ref(sparql(["a"], [["x"]])))
    pair = score_pair(sparql_reference, _act(step("sparql_query", "Error: timeout", "s")))
    assert pair.score == pytest.approx(0.0)
    assert pair.problem is not None and pair.problem.startswith("output is not SPARQL results JSON")
    json_reference = _ref(ref_step("lookup", "{}", output_media_type="application/json"))
    assert score_pair(json_reference, _act(step("lookup", "{broken", "l"))).problem == (
        "output is not valid JSON"
    )
    retrieval_reference = _ref(ref_step("retrieval", contexts(("d1", "a"))))
    assert score_pair(retrieval_reference, _act(step("retrieval", "oops", "r"))).problem == (
        "output is not a JSON list of contexts"
    )
    # a wrong but readable output is just a 0
    assert score_pair(
        sparql_reference, _act(step("sparql_query", sparql(["a"], [["y"]]), "s"))
    ) == PairScore(0.0)


def test_iri_must_not_be_part_of_a_longer_iri() -> None:
    reference = ref_step("iri_discovery", "urn:x")
    assert score(reference, step("sparql_query", '{"v": "urn:xyz"}', "s")) == pytest.approx(0.0)
    assert score(reference, step("sparql_query", "<urn:x/child>", "s")) == pytest.approx(0.0)
    assert score(reference, step("sparql_query", '{"v": "urn:x"}', "s")) == pytest.approx(1.0)
    assert score(reference, step("sparql_query", "found <urn:x>.", "s")) == pytest.approx(1.0)
    assert score(reference, step("sparql_query", {"v": "urn:x"}, "s")) == pytest.approx(1.0)


@pytest.mark.parametrize(("k", "expected"), [(2, 0.5), ("2", 0.5), (2.0, 0.5), (3, 1.0)])
def test_retrieval_k_forms(k: Any, expected: float) -> None:
    reference = ref_step("retrieval", contexts(("d1", "a"), ("d2", "b")))
    actual = step("retrieval", contexts(("d1", "a"), ("x", "c"), ("d2", "b")), "r", args={"k": k})
    assert score(reference, actual) == expected


@pytest.mark.parametrize("k", [0, -3, "abc", 2.5, True])
def test_invalid_retrieval_k_is_reported(k: Any) -> None:
    reference = _ref(ref_step("retrieval", contexts(("d1", "a"))))
    pair = score_pair(reference, _act(step("retrieval", contexts(("d1", "a")), "r", args={"k": k})))
    assert pair.score == pytest.approx(0.0)
    assert pair.problem == f"args.k is not a positive integer: {k!r}"
