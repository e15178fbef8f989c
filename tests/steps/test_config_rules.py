"""Rules for the user's own tools from the config's ``steps.rules`` (docs/steps.md, "Rules for
your own tools"), through real evaluation runs (their config errors: tests/config)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from graphrag_eval import run_evaluation
from graphrag_eval.steps.config_rules import args_difference, values_equal

from builders import dataset, question, ref_step, response, sparql, sparql_ref, step, uri


def run(
    reference: dict[str, Any], actual: Sequence[dict[str, Any]], rules: dict[str, Any]
) -> tuple[float, dict[str, Any]]:
    """``steps_score`` and the reference step of a one-step question."""
    results = run_evaluation(
        dataset(question("q1", [[reference]])),
        [response("q1", list(actual))],
        {"steps": {"rules": rules}},
    )
    return results[0]["steps_score"], dict(results[0]["reference_steps"][0][0])


WEATHER = {"get_weather": {"args": ["city", "unit"], "output": "ignore"}}


def test_listed_args_must_be_equal_and_other_args_are_ignored() -> None:
    reference = ref_step("get_weather", "12 C", args={"city": "Oslo", "unit": "C", "day": 1})
    score, found = run(
        reference,
        [step("get_weather", "13 C", "w1", args={"city": " oslo ", "unit": "c", "day": 2})],
        WEATHER,
    )
    assert score == pytest.approx(1.0)
    assert found["matches"] == "w1"
    score, found = run(
        reference, [step("get_weather", "", "w1", args={"city": "Bergen", "unit": "C"})], WEATHER
    )
    assert score == pytest.approx(0.0)
    assert found["mismatch_reason"] == "arg 'city': 'Bergen' vs 'Oslo'"
    assert found["nearest_match"] == "w1"


def test_without_a_rule_the_same_steps_need_identical_outputs() -> None:
    reference = ref_step("get_weather", "12 C", args={"city": "Oslo"})
    score, found = run(reference, [step("get_weather", "13 C", "w1", args={"city": "Oslo"})], {})
    assert score == pytest.approx(0.0)
    assert found["mismatch_reason"] == "outputs differ from character 2: '3 C' vs '2 C'"


def test_ids_output_scores_recall_at_k_over_the_id_field() -> None:
    rules = {"search_documents": {"args": ["query"], "output": "ids", "ids_field": "id"}}
    reference = ref_step(
        "search_documents", json.dumps([{"id": "d1"}, {"id": "d2"}]), args={"query": "oslo"}
    )
    actual = json.dumps([{"id": "d1", "score": 0.9}, {"id": "d7"}])
    score, found = run(
        reference, [step("search_documents", actual, "s1", args={"query": "Oslo"})], rules
    )
    assert score == pytest.approx(0.5)
    assert found["matches"] == "s1"
    assert found["mismatch_reason"] == (
        "recall@2 = 1/2: reference context d2 not retrieved in the first 2"
    )


def test_json_output() -> None:
    rules = {"lookup": {"args": "ignore", "output": "json"}}
    reference = ref_step("lookup", json.dumps({"a": 1, "b": [True]}))
    score, _ = run(reference, [step("lookup", json.dumps({"b": [True], "a": 1.0}), "l1")], rules)
    assert score == pytest.approx(1.0)
    score, found = run(reference, [step("lookup", json.dumps({"a": 1, "b": [1]}), "l1")], rules)
    assert score == pytest.approx(0.0)
    assert found["mismatch_reason"] == "differs at $.b[0]: 1 vs true"


def test_sparql_results_output_for_a_tool_of_another_name() -> None:
    rules = {"graph_query": {"args": "ignore", "output": "sparql_results"}}
    rows = [[uri("urn:a"), "A"], [uri("urn:b"), "B"]]
    reference = ref_step("graph_query", sparql(["x", "name"], rows))
    score, _ = run(
        reference, [step("graph_query", sparql(["label", "y"], [r[::-1] for r in rows]))], rules
    )
    assert score == pytest.approx(1.0)
    score, found = run(reference, [step("graph_query", sparql(["x", "name"], rows[:1]))], rules)
    assert score == pytest.approx(0.0)
    assert found["mismatch_reason"] == "1 of 2 reference rows missing (first: ('urn:b', 'B'))"


def test_a_config_rule_takes_precedence_over_the_built_in_rule() -> None:
    rows = [[uri("urn:a"), "A"]]
    reference = sparql_ref(sparql(["x", "name"], rows), args={"query": "SELECT ..."})
    actual = [step("sparql_query", "not even JSON", "s1", args={"query": "select ..."})]
    score, _ = run(reference, actual, {})
    assert score == pytest.approx(0.0)  # the built-in SPARQL comparison
    score, found = run(reference, actual, {"sparql_query": {"args": ["query"], "output": "ignore"}})
    assert score == pytest.approx(1.0)
    assert found["matches"] == "s1"


@pytest.mark.parametrize(
    ("mode", "actual_args", "expected"),
    [
        ("exact", {"a": 1, "b": "x"}, ""),
        ("exact", {"a": 1}, "arg 'b' missing (reference: 'x')"),
        ("exact", {"a": 1, "b": "x", "c": 2}, "extra arg 'c' (args: exact)"),
        ("subset", {"a": 1}, ""),
        ("subset", {"a": 2}, "arg 'a': 2 vs 1"),
        ("subset", {"c": 1}, "arg 'c' is not among the reference's (args: subset)"),
        ("superset", {"a": 1, "b": "X", "c": 2}, ""),
        ("superset", {"a": 1}, "arg 'b' missing (reference: 'x')"),
        ("ignore", {}, ""),
        (["a"], {"a": 1.000000001, "b": "other"}, ""),
    ],
)
def test_args_modes(mode: Any, actual_args: dict[str, Any], expected: str) -> None:
    assert args_difference({"a": 1, "b": "x"}, actual_args, mode) == expected


def test_argument_equality() -> None:
    assert values_equal("  New   York ", "new york")
    assert values_equal(["b", "A"], ["a", "B"])
    assert values_equal(0.1 + 0.2, 0.3)
    assert not values_equal(1, 1.001)
    assert not values_equal(True, 1)
    assert values_equal({"k": ["y", "x"]}, {"k": ["x", "y"]})


def test_the_built_in_reference_checks_do_not_apply_to_a_name_the_config_scores() -> None:
    reference = sparql_ref("<urn:a> <urn:b> <urn:c> .")  # Turtle: not SPARQL results JSON
    actual = [step("sparql_query", "<urn:a> <urn:b> <urn:c> .", "s1")]
    score, found = run(reference, actual, {})
    assert score == pytest.approx(0.0)
    assert found["input_error"].startswith("output is not SPARQL results JSON")
    score, found = run(reference, actual, {"sparql_query": {"args": "ignore", "output": "exact"}})
    assert score == pytest.approx(1.0)
    assert "input_error" not in found
