"""Aggregates (docs/outputs.md): the seed's structure, coverage, error samples, declared keys."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from graphrag_eval import InputError, compute_aggregates, load_results
from graphrag_eval.metrics.base import (
    Aggregation,
    ItemContext,
    ItemMetric,
    Outcome,
    OutputKey,
    Skipped,
)
from graphrag_eval.metrics.registry import register_metric, unregister_metric
from graphrag_eval.results.aggregation import is_empty_output, item_values


def ok(template: str, qid: str, **values: Any) -> dict[str, Any]:
    return {
        "template_id": template,
        "question_id": qid,
        "question_text": "?",
        "status": "success",
        **values,
    }


def err(template: str, qid: str, **values: Any) -> dict[str, Any]:
    return {
        "template_id": template,
        "question_id": qid,
        "question_text": "?",
        "status": "error",
        "error": "boom",
        **values,
    }


STATS = {"sum", "mean", "median", "min", "max"}


def test_seed_structure_and_key_names() -> None:
    aggregates = compute_aggregates([ok("t1", "a", steps_score=1.0, input_tokens=10)])
    assert list(aggregates) == ["per_template", "micro", "macro"]
    template = aggregates["per_template"]["t1"]
    assert template["number_of_error_samples"] == 0
    assert template["number_of_success_samples"] == 1
    assert set(template["steps_score"]) == STATS
    assert set(template["steps"]) == {"total", "once_per_sample", "empty_results", "errors"}
    assert set(aggregates["micro"]["steps"]) == {
        "total",
        "once_per_sample",
        "empty_results",
        "errors",
    }
    assert aggregates["macro"]["steps_score"] == pytest.approx({"mean": 1.0})


def test_statistics_values() -> None:
    results = [ok("t1", str(i), steps_score=s) for i, s in enumerate([0.0, 1.0, 1.0, 0.5])]
    stats = compute_aggregates(results)["micro"]["steps_score"]
    assert stats == pytest.approx(
        {"sum": 2.5, "mean": 0.625, "median": 0.75, "min": 0.0, "max": 1.0}
    )


def test_templates_in_order_of_first_appearance() -> None:
    results = [ok("zeta", "1"), ok("alpha", "2"), ok("zeta", "3"), ok("mid", "4")]
    assert list(compute_aggregates(results)["per_template"]) == ["zeta", "alpha", "mid"]


def test_macro_is_the_mean_of_template_means() -> None:
    results = [
        ok("t1", "a", steps_score=1.0),
        ok("t1", "b", steps_score=1.0),
        ok("t1", "c", steps_score=1.0),
        ok("t2", "d", steps_score=0.0),
    ]
    aggregates = compute_aggregates(results)
    assert aggregates["micro"]["steps_score"]["mean"] == pytest.approx(0.75)
    assert aggregates["macro"]["steps_score"] == pytest.approx({"mean": 0.5})


def test_usage_keys_always_appear_with_zeros() -> None:
    micro = compute_aggregates([ok("t1", "a", steps_score=1.0)])["micro"]
    for key in ("input_tokens", "output_tokens", "total_tokens", "elapsed_sec"):
        assert micro[key] == {"sum": 0, "mean": 0, "median": 0, "min": 0, "max": 0}


def test_other_metrics_appear_only_when_some_item_has_them() -> None:
    micro = compute_aggregates([ok("t1", "a", input_tokens=3)])["micro"]
    assert "steps_score" not in micro
    assert "retrieval_context_recall" not in micro
    assert "steps_score" not in micro["coverage"]


def test_error_samples_are_excluded_by_default() -> None:
    results = [
        ok("t1", "a", steps_score=1.0, reference_steps=[[{}]]),
        err("t1", "b", reference_steps=[[{}]]),
    ]
    template = compute_aggregates(results)["per_template"]["t1"]
    assert template["number_of_error_samples"] == 1
    assert template["number_of_success_samples"] == 1
    assert template["steps_score"]["mean"] == pytest.approx(1.0)
    assert template["coverage"]["steps_score"] == {"scored": 1, "failed": 0, "skipped": 1}


def test_error_samples_zero_mode_scores_what_they_would_have_had() -> None:
    results = [
        ok("t1", "a", steps_score=1.0, reference_steps=[[{}]]),
        err("t1", "b", reference_steps=[[{}]]),  # would have had a steps_score
        err("t1", "c"),  # no reference steps: nothing to zero
    ]
    template = compute_aggregates(results, {"aggregation": {"error_samples": "zero"}})[
        "per_template"
    ]["t1"]
    assert template["steps_score"]["mean"] == pytest.approx(0.5)
    assert template["steps_score"]["sum"] == pytest.approx(1.0)
    assert template["coverage"]["steps_score"] == {"scored": 2, "failed": 0, "skipped": 1}
    # usage is never invented for error samples
    assert template["input_tokens"]["sum"] == 0


def test_zero_mode_does_not_invent_metrics_no_success_has() -> None:
    results = [ok("t1", "a"), err("t1", "b", reference_steps=[[{}]])]
    micro = compute_aggregates(results, {"aggregation": {"error_samples": "zero"}})["micro"]
    assert "steps_score" not in micro


USAGE = ("input_tokens", "output_tokens", "total_tokens", "elapsed_sec")
ZERO_ERRORS = {"aggregation": {"error_samples": "zero"}}


def written_zero(template: str, qid: str) -> dict[str, Any]:
    """An error sample as the evaluation writes it under ``error_samples: zero``."""
    return err(template, qid, reference_steps=[[{}]], actual_steps=[], steps_score=0.0)


def test_macro_has_the_usage_keys_in_an_all_error_run() -> None:
    # The seed's summary of an all-error run: macro shows mean 0 for tokens and time, as the
    # per-template blocks show their zeros.
    aggregates = compute_aggregates([err("t1", "a"), err("t2", "b")])
    assert aggregates["macro"] == {key: {"mean": 0} for key in USAGE}
    for key in USAGE:
        assert aggregates["per_template"]["t1"][key]["mean"] == 0


def test_zero_mode_counts_the_zeros_written_on_error_samples_of_an_all_error_run() -> None:
    results = [written_zero("t1", "a"), written_zero("t1", "b"), written_zero("t2", "c")]
    aggregates = compute_aggregates(results, ZERO_ERRORS)
    zeros = {"sum": 0.0, "mean": 0.0, "median": 0.0, "min": 0.0, "max": 0.0}
    for block in (*aggregates["per_template"].values(), aggregates["micro"]):
        assert block["steps_score"] == {key: pytest.approx(value) for key, value in zeros.items()}
    assert aggregates["micro"]["coverage"]["steps_score"] == {
        "scored": 3,
        "failed": 0,
        "skipped": 0,
    }
    assert aggregates["macro"] == {
        "steps_score": {"mean": pytest.approx(0.0)},
        **{key: {"mean": 0} for key in USAGE},
    }


def test_zero_mode_compares_the_zeros_written_on_error_samples() -> None:
    results = [
        written_zero("t1", "a"),
        err("t1", "b", reference_steps=[[{}]]),  # an older result without the written 0
        err("t1", "c", steps_score=1.0),  # no reference steps: nothing to zero
        written_zero("t2", "d"),
    ]
    values = item_values(results, ZERO_ERRORS)
    assert [row.get("steps_score") for row in values.values] == pytest.approx([0.0, 0.0, None, 0.0])
    coverage = compute_aggregates(results, ZERO_ERRORS)["micro"]["coverage"]["steps_score"]
    assert coverage == {"scored": 3, "failed": 0, "skipped": 1}


def test_written_zeros_are_excluded_like_any_error_sample_by_default() -> None:
    results = [ok("t1", "a", steps_score=1.0, reference_steps=[[{}]]), written_zero("t1", "b")]
    aggregates = compute_aggregates(results)
    assert aggregates["micro"]["steps_score"]["mean"] == pytest.approx(1.0)
    assert aggregates["micro"]["coverage"]["steps_score"]["skipped"] == 1
    assert item_values(results).values[1] == {}


def test_missing_responses_are_counted() -> None:
    results = [ok("t1", "a"), err("t1", "b", missing_response=True), err("t1", "c")]
    micro = compute_aggregates(results)["micro"]
    assert micro["number_of_error_samples"] == 2
    assert micro["number_of_missing_samples"] == 1


def test_coverage_counts_scored_failed_skipped() -> None:
    results = [
        ok("t1", "a", steps_score=1.0),
        ok("t1", "b", steps_score_error="x"),
        ok("t1", "c"),
        err("t1", "d"),
    ]
    coverage = compute_aggregates(results)["micro"]["coverage"]["steps_score"]
    assert coverage == {"scored": 1, "failed": 1, "skipped": 2, "failed_reason": "x"}


def test_step_level_metrics_are_aggregated_from_steps() -> None:
    results = [
        ok(
            "t1",
            "a",
            actual_steps=[
                {
                    "name": "retrieval",
                    "status": "success",
                    "output": "[]",
                    "retrieval_context_recall": 1.0,
                },
                {
                    "name": "retrieval",
                    "status": "success",
                    "output": "[]",
                    "retrieval_context_recall": 0.5,
                },
            ],
        ),
        ok(
            "t1",
            "b",
            actual_steps=[
                {
                    "name": "retrieval",
                    "status": "success",
                    "output": "x",
                    "retrieval_context_recall_error": "unreadable",
                },
            ],
        ),
        ok("t1", "c"),
    ]
    micro = compute_aggregates(results)["micro"]
    assert micro["retrieval_context_recall"]["mean"] == pytest.approx(0.75)
    assert micro["retrieval_context_recall"]["sum"] == pytest.approx(1.5)
    assert micro["coverage"]["retrieval_context_recall"] == {
        "scored": 1,
        "failed": 1,
        "skipped": 1,
        "failed_reason": "unreadable",
    }


def test_step_counts() -> None:
    sparql_empty = json.dumps({"head": {"vars": ["a"]}, "results": {"bindings": []}})
    results = [
        ok(
            "t1",
            "a",
            actual_steps=[
                {"name": "autocomplete_search", "status": "success", "output": sparql_empty},
                {"name": "sparql_query", "status": "error", "error": "syntax"},
                {
                    "name": "sparql_query",
                    "status": "success",
                    "output": '{"results": '
                    '{"bindings": [{"a": {"type": "literal", "value": "x"}}]}}',
                },
            ],
        ),
        ok(
            "t1",
            "b",
            actual_steps=[
                {"name": "autocomplete_search", "status": "success", "output": "[]"},
                "not a step",
            ],
        ),
        err("t1", "c", actual_steps=[{"name": "sparql_query", "status": "error"}]),
    ]
    steps = compute_aggregates(results)["per_template"]["t1"]["steps"]
    assert steps == {
        "total": {"autocomplete_search": 2, "sparql_query": 2},
        "once_per_sample": {"autocomplete_search": 2, "sparql_query": 1},
        "empty_results": {"autocomplete_search": 2},
        "errors": {"sparql_query": 1},
    }


@pytest.mark.parametrize(
    ("output", "empty"),
    [
        (None, True),
        ("", True),
        ("  \n", True),
        ("[]", True),
        ("{}", True),
        ('{"head": {"vars": []}, "results": {"bindings": []}}', True),
        ('{"head": {}, "boolean": false}', False),
        ("[1]", False),
        ("some text", False),
        ("[broken", False),
        (" [ ] ", True),
        ('{"results": {"bindings": [ ]}, "head": {"vars": ["x"]}}', True),
        ('{"results": {"bindings": [{"x": {"type": "literal", "value": "1"}}]}}', False),
        ('{"results": {"bindings": null}}', False),
        ('{"results": []}', False),
        ('{"results": {"bindings": []}} and more', False),
        ('{"results": {"bindings": []}, "note": NaN}', True),  # not strict JSON, still read
        ("[NaN]", False),
        ("[" * 100_000 + "]" * 100_000, False),
        ('{"a": ' * 100_000 + "1" + "}" * 100_000, False),
        ([], True),
        ({"a": 1}, False),
    ],
)
def test_is_empty_output(output: Any, empty: bool) -> None:
    assert is_empty_output(output) is empty


def test_undeclared_numeric_keys_are_aggregated_not_dropped() -> None:
    results = [
        ok("t1", "a", my_custom_score=0.2),
        ok("t1", "b", my_custom_score=0.4, my_custom_score_error=None),
    ]
    micro = compute_aggregates(results)["micro"]
    assert micro["my_custom_score"]["mean"] == pytest.approx(0.3)
    assert "question_text" not in micro
    assert "my_custom_score_error" not in micro


class _Verdict(ItemMetric):
    name = "verdict"
    outputs: ClassVar[tuple[OutputKey, ...]] = (
        OutputKey("verdict_label", aggregation=Aggregation.LABEL),
        OutputKey("verdict_reason", aggregation=Aggregation.NONE),
    )
    error_keys: ClassVar[tuple[str, ...]] = ("verdict_error",)

    async def score(self, context: ItemContext) -> Outcome:
        return Skipped("only used through its declaration here")


@pytest.fixture
def label_metric() -> Iterator[None]:
    register_metric(_Verdict())
    yield
    unregister_metric("verdict")


@pytest.mark.usefixtures("label_metric")
def test_label_metrics_aggregate_as_counts() -> None:
    results = [
        ok("t1", "a", verdict_label="CORRECT", verdict_reason="fine"),
        ok("t1", "b", verdict_label="WRONG"),
        ok("t2", "c", verdict_label="CORRECT"),
        ok("t2", "d", verdict_error="judge failed"),
    ]
    aggregates = compute_aggregates(results)
    assert aggregates["micro"]["verdict_label"] == {"CORRECT": 2, "WRONG": 1}
    assert aggregates["per_template"]["t2"]["verdict_label"] == {"CORRECT": 1}
    assert aggregates["per_template"]["t2"]["coverage"]["verdict_label"] == {
        "scored": 1,
        "failed": 1,
        "skipped": 0,
        "failed_reason": "judge failed",
    }
    assert "verdict_reason" not in aggregates["micro"]
    assert "verdict_label" not in aggregates["macro"]


def test_booleans_are_not_numbers() -> None:
    micro = compute_aggregates([ok("t1", "a", flag=True)])["micro"]
    assert "flag" not in micro


# ---------------------------------------------------------------- reading saved results


def test_load_results_jsonl_json_yaml(tmp_path: Path) -> None:
    results = [ok("t1", "a", steps_score=1.0)]
    (tmp_path / "r.jsonl").write_text(json.dumps(results[0]) + "\n")
    (tmp_path / "r.json").write_text(json.dumps(results))
    (tmp_path / "r.yaml").write_text(
        "- template_id: t1\n  question_id: a\n"
        "  question_text: '?'\n  status: success\n"
        "  steps_score: 1.0\n"
    )
    for name in ("r.jsonl", "r.json", "r.yaml"):
        assert load_results(tmp_path / name) == results


def test_load_results_errors_are_located(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(ok("t1", "a")) + "\n{broken\n")
    with pytest.raises(InputError, match=r"r.jsonl: line 2: invalid JSON"):
        load_results(path)
    path.write_text(json.dumps({"question_id": "a", "status": "success"}) + "\n")
    with pytest.raises(InputError, match=r"r.jsonl: line 1: template_id: missing"):
        load_results(path)
    with pytest.raises(InputError, match="file not found"):
        load_results(tmp_path / "none.jsonl")


def test_macro_ignores_templates_without_data_for_a_key() -> None:
    results = [ok("t1", "a", input_tokens=100, elapsed_sec=10.0, steps_score=1.0), err("t2", "b")]
    aggregates = compute_aggregates(results)
    assert aggregates["per_template"]["t2"]["input_tokens"]["mean"] == 0  # shown as zeros ...
    assert aggregates["macro"]["input_tokens"] == {"mean": 100}  # ... but not averaged in
    assert aggregates["macro"]["elapsed_sec"] == pytest.approx({"mean": 10.0})
    assert aggregates["macro"]["steps_score"] == pytest.approx({"mean": 1.0})


# ---------------------------------------------------------------- folded one result at a time


def test_folded_sums_add_in_reference_order_with_error_zeros_in_place() -> None:
    """The aggregates are folded in as results come (results/fold.py): a float sum depends
    on the order of its terms, so the values are kept in order, and an error sample's zero
    under ``error_samples: zero`` goes where that sample was."""
    results = [
        ok("t", "q1", steps_score=1e16),
        err("t", "q2"),
        ok("t", "q3", steps_score=1.0),
        ok("t", "q4", steps_score=-1e16),
        err("t", "q5"),
        ok("t", "q6", steps_score=0.5),
    ]
    for result in results:  # what an error sample needs to count as 0 on steps_score
        result["reference_steps"] = [[{"name": "a"}]]
    config = {"aggregation": {"error_samples": "zero"}}
    stats = compute_aggregates(results, config)["micro"]["steps_score"]
    values = [1e16, 0.0, 1.0, -1e16, 0.0, 0.5]
    assert stats["sum"] == sum(values) == 0.5  # 1e16 + 1.0 is 1e16: the 1.0 is lost in order
    assert stats["median"] == 0.25
    assert (stats["min"], stats["max"]) == (-1e16, 1e16)
    coverage = compute_aggregates(results, config)["micro"]["coverage"]["steps_score"]
    assert (coverage["scored"], coverage["skipped"]) == (6, 0)
    excluded = compute_aggregates(results)["micro"]
    assert excluded["steps_score"]["sum"] == sum([1e16, 1.0, -1e16, 0.5]) == 0.5
    assert excluded["coverage"]["steps_score"]["skipped"] == 2


def test_folded_integer_values_stay_integers() -> None:
    """Floats are kept in an ``array('d')``; integers (token counts) are not made floats."""
    results = [ok("t", f"q{i}", input_tokens=tokens) for i, tokens in enumerate([3, 10**20, 4])]
    stats = compute_aggregates(results)["micro"]["input_tokens"]
    assert stats["sum"] == 10**20 + 7
    assert isinstance(stats["sum"], int)
    assert (stats["min"], stats["median"], stats["max"]) == (3, 4, 10**20)
