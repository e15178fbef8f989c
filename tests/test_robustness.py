"""Odd and extreme inputs: one item or step may fail, the run never does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_eval import compute_aggregates, run_evaluation
from graphrag_eval.cli import main
from graphrag_eval.evaluation.runner import evaluate, prepare_reference

from builders import contexts, dataset, question, ref_step, response, sparql, sparql_ref, step

GOOD_SPARQL = sparql(["a"], [["x"]])


def _deep_json(depth: int) -> str:
    return '{"a": ' * depth + "{}" + "}" * depth


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def test_an_item_that_cannot_be_copied_fails_alone(caplog: pytest.LogCaptureFixture) -> None:
    reference = dataset(
        question("q1", [[sparql_ref(GOOD_SPARQL)]]), question("q2", [[sparql_ref(GOOD_SPARQL)]])
    )
    responses = {
        "q1": response("q1", [step("sparql_query", GOOD_SPARQL, "s", args=_nested(5000))]),
        "q2": response("q2", [step("sparql_query", GOOD_SPARQL, "s")]),
    }
    bad, good = run_evaluation(reference, responses)
    assert bad["status"] == "error"
    assert bad["evaluation_error"] is True
    assert bad["error"].startswith("graphrag-eval could not evaluate this item: RecursionError")
    assert good["steps_score"] == pytest.approx(1.0)
    assert "could not evaluate question 'q1'" in caplog.text
    assert compute_aggregates([bad, good])["micro"]["number_of_error_samples"] == 1


def test_deeply_nested_outputs_score_zero_with_a_reason() -> None:
    deep = _deep_json(5000)
    reference = dataset(
        question(
            "q1",
            [
                [
                    ref_step("lookup", '{"a": 1}', output_media_type="application/json"),
                    sparql_ref(GOOD_SPARQL),
                ]
            ],
        )
    )
    [result] = run_evaluation(
        reference,
        {
            "q1": response(
                "q1",
                [
                    step("lookup", deep, "l"),
                    step("sparql_query", GOOD_SPARQL, "s"),
                ],
            )
        },
    )
    assert result["steps_score"] == pytest.approx(0.5)  # the SPARQL step still counts
    assert "RecursionError" in result["actual_steps"][0]["output_error"]
    compute_aggregates([result])  # reading the deep output for empty_results must not fail


def test_deeply_nested_reference_output_is_a_reference_problem() -> None:
    deep = f"[{_deep_json(5000)}]"
    run = _evaluate(dataset(question("q1", [[ref_step("retrieval", deep)]])), {})
    assert any(n.kind == "reference_data" for n in run.diagnostics.notices)


def _evaluate(reference: Any, responses: Any) -> Any:
    import asyncio

    return asyncio.run(evaluate(reference, responses))


POINTS = {"external_id": "ts", "aggregates": ["avg"], "granularity": "1h", "limit": 5}


@pytest.mark.parametrize(
    "actual_args",
    [{"start": 1e30}, {"start": 99999999999999999999}, {"start": "99999999999999d-ago"}],
)
def test_out_of_range_actual_times_do_not_cost_the_item(actual_args: dict[str, Any]) -> None:
    reference = dataset(
        question(
            "q1",
            [
                [
                    ref_step("retrieve_data_points", args={**POINTS, "start": "1d-ago"}),
                    sparql_ref(GOOD_SPARQL),
                ]
            ],
        )
    )
    [result] = run_evaluation(
        reference,
        {
            "q1": response(
                "q1",
                [
                    step(
                        "retrieve_data_points",
                        "[]",
                        "p",
                        args={**POINTS, **actual_args},
                        execution_timestamp="2026-01-01T00:00:00Z",
                    ),
                    step("sparql_query", GOOD_SPARQL, "s"),
                ],
            )
        },
    )
    assert result["steps_score"] == pytest.approx(0.5)
    assert "steps_score_error" not in result


@pytest.mark.parametrize("start", [99999999999999999999, 1.0e300, "99999999999999d-ago"])
def test_out_of_range_reference_times_are_reference_problems(start: Any) -> None:
    reference_step = ref_step("retrieve_data_points", args={**POINTS, "start": start})
    run = _evaluate(dataset(question("q1", [[reference_step]])), {})
    [notice] = [n for n in run.diagnostics.notices if n.kind == "reference_data"]
    assert notice.message.startswith("args.start: ")
    assert notice.field == "reference_steps[0][0]"


def test_huge_execution_timestamp_scores_zero() -> None:
    reference = dataset(
        question("q1", [[ref_step("retrieve_data_points", args={**POINTS, "start": "1d-ago"})]])
    )
    [result] = run_evaluation(
        reference,
        {
            "q1": response(
                "q1",
                [
                    step(
                        "retrieve_data_points",
                        "[]",
                        "p",
                        args={**POINTS, "start": "2026-01-01T00:00:00Z"},
                        execution_timestamp=1e30,
                    ),
                ],
            )
        },
    )
    assert result["steps_score"] == pytest.approx(0.0)


def test_lone_surrogate_survives_every_output_file(tmp_path: Path) -> None:
    reference = tmp_path / "ref.json"
    reference.write_text(json.dumps(dataset(question("q1", [[sparql_ref(GOOD_SPARQL)]]))))
    responses = tmp_path / "r.jsonl"
    # a truncated emoji: valid JSON, not encodable as UTF-8
    line = json.dumps(
        response("q1", [step("sparql_query", GOOD_SPARQL, "s")], actual_answer="cut \ud83d")
    )
    responses.write_text(line + "\n")
    out = tmp_path / "out"
    assert main(["evaluate", str(reference), str(responses), "-o", str(out), "--yaml", "-q"]) == 0
    [result] = [json.loads(text) for text in (out / "results.jsonl").read_text().splitlines()]
    assert result["actual_answer"] == "cut \ud83d"
    assert yaml.safe_load((out / "results.yaml").read_text())[0]["actual_answer"] == "cut \ud83d"
    assert (out / "aggregates.yaml").exists()


def test_byte_order_marks_are_accepted(tmp_path: Path) -> None:
    reference = tmp_path / "ref.json"
    reference.write_bytes(b"\xef\xbb\xbf" + json.dumps(dataset(question("q1"))).encode())
    responses = tmp_path / "r.jsonl"
    responses.write_bytes(b"\xef\xbb\xbf" + json.dumps(response("q1")).encode() + b"\n")
    results = run_evaluation(prepare_reference(reference), responses)
    assert results[0]["status"] == "success"


def test_output_given_as_a_decoded_value_is_compared() -> None:
    reference = dataset(
        question(
            "q1",
            [
                [
                    ref_step("retrieval", contexts(("d1", "a"))),
                    ref_step("lookup", {"a": [1, 2]}, output_media_type="application/json"),
                ]
            ],
        )
    )
    [result] = run_evaluation(
        reference,
        {
            "q1": response(
                "q1",
                [
                    step("retrieval", [{"id": "d1", "text": "a"}], "r"),
                    step("lookup", {"a": [1, 2]}, "l"),
                ],
            )
        },
    )
    assert result["steps_score"] == pytest.approx(1.0)


def test_args_that_are_not_a_mapping() -> None:
    reference = dataset(question("q1", [[ref_step("retrieve_time_series", args={"mrid": "m"})]]))
    [result] = run_evaluation(
        reference,
        {
            "q1": response(
                "q1",
                [
                    step("retrieve_time_series", "[]", "t", args="mrid=m"),
                ],
            )
        },
    )
    assert result["steps_score"] == pytest.approx(0.0)
