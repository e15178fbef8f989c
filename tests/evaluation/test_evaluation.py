"""End-to-end evaluation through the public API: results, robustness, event loops."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from graphrag_eval import (
    EvaluationConfig,
    arun_evaluation,
    compare_results,
    compute_aggregates,
    load_reference,
    load_responses,
    run_evaluation,
)
from graphrag_eval.evaluation.runner import evaluate, prepare_reference, run_sync
from graphrag_eval.metrics.base import ItemContext, ItemMetric, Outcome, OutputKey, Scored
from graphrag_eval.metrics.registry import register_metric, unregister_metric
from graphrag_eval.results.aggregation import aggregate
from graphrag_eval.results.model import OutcomeKey, QuestionResult
from graphrag_eval.results.to_records import to_records

from builders import contexts, dataset, question, ref_step, response, sparql, sparql_ref, step

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
OSLO = "c10bbc8dce98a4b8832d125134a16153"


def _by_id(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {result["question_id"]: result for result in results}


# ---------------------------------------------------------------- the seed's example


@pytest.fixture(scope="module")
def example_results() -> list[dict[str, Any]]:
    reference = load_reference(EXAMPLES / "reference.yaml")
    responses = load_responses(EXAMPLES / "responses.jsonl")
    return run_evaluation(reference, responses)


def test_seed_example_question_scores_as_documented(
    example_results: list[dict[str, Any]],
) -> None:
    # The seed README's "Evaluation Results" example: both reference steps of the last
    # group match (retrieval recall@2 = 1 and the SPARQL results), so steps_score is 1.
    result = _by_id(example_results)[OSLO]
    assert result["status"] == "success"
    assert result["steps_score"] == 1
    [[retrieval, query]] = result["reference_steps"]
    assert retrieval["matches"] == "call_3"
    assert query["matches"] == "call_3b3zHJnBXwYYSg04BiFGAAgO"
    assert (result["input_tokens"], result["output_tokens"], result["total_tokens"]) == (
        221339,
        212,
        221551,
    )
    assert result["elapsed_sec"] == pytest.approx(6.601679801940918)
    assert result["template_id"] == "list_all_transformers_within_Substation_SUBSTATION"


def test_example_covers_renamed_columns_no_match_error_and_iri_discovery(
    example_results: list[dict[str, Any]],
) -> None:
    results = _by_id(example_results)
    assert [r["question_id"] for r in example_results] == [
        OSLO,
        "8bbea9a10876a04ad77a82fd2aedee40",
        "d566b1e9da418ac83e520a66cc7af4d7",
        "03d4283773b4387114342518176b128b",
        "f91fc938d606e5f6089912bebfaf114b",
    ]
    # renamed and reordered columns plus an extra one, after a failed first query
    assert results["8bbea9a10876a04ad77a82fd2aedee40"]["steps_score"] == 1
    assert results["8bbea9a10876a04ad77a82fd2aedee40"]["reference_steps"][0][0]["matches"] == (
        "call_a2"
    )
    # one row of eight missing
    assert results["d566b1e9da418ac83e520a66cc7af4d7"]["steps_score"] == 0
    assert "matches" not in results["d566b1e9da418ac83e520a66cc7af4d7"]["reference_steps"][0][0]
    # an error response is counted, not scored
    error = results["03d4283773b4387114342518176b128b"]
    assert error["status"] == "error"
    assert "steps_score" not in error
    # the seed's STAVANGER response: 14 rows with duplicates match 9 distinct reference rows
    assert results["f91fc938d606e5f6089912bebfaf114b"]["steps_score"] == 1


def test_example_in_all_groups_mode_also_matches_the_iri_discovery() -> None:
    results = _by_id(
        run_evaluation(
            load_reference(EXAMPLES / "reference.yaml"),
            load_responses(EXAMPLES / "responses.jsonl"),
            {"steps": {"score_mode": "all_groups"}},
        )
    )
    result = results["f91fc938d606e5f6089912bebfaf114b"]
    assert result["steps_score"] == 1
    assert result["reference_steps"][0][0]["matches"] == "call_7amIsfEGelOnVZ1DWtgtc0hc"


def test_example_retrieval_context_metrics(example_results: list[dict[str, Any]]) -> None:
    retrieval = _by_id(example_results)[OSLO]["actual_steps"][0]
    assert retrieval["retrieval_context_recall"] == pytest.approx(1.0)
    assert retrieval["retrieval_context_precision"] == pytest.approx(1.0)
    assert retrieval["retrieval_context_f1"] == pytest.approx(1.0)
    assert retrieval["retrieval_context_ids_average_precision"] == pytest.approx(1.0)


def test_example_aggregates_are_deterministic(example_results: list[dict[str, Any]]) -> None:
    aggregates = compute_aggregates(example_results)
    micro = aggregates["micro"]
    assert micro["number_of_success_samples"] == 4
    assert micro["number_of_error_samples"] == 1
    assert micro["steps_score"] == pytest.approx(
        {"sum": 3.0, "mean": 0.75, "median": 1.0, "min": 0.0, "max": 1.0}
    )
    # template means 1.0, 0.0 (one success, one error) and 1.0
    assert aggregates["macro"]["steps_score"] == {"mean": pytest.approx(2 / 3)}


# ---------------------------------------------------------------- API behaviour


SIMPLE_REFERENCE = dataset(
    question("q1", [[sparql_ref(sparql(["a"], [["x"]]))]], answer="x"),
    question("q2", [[sparql_ref(sparql(["a"], [["y"]]))]]),
)
SIMPLE_RESPONSES = {
    "q1": response("q1", [step("sparql_query", sparql(["b"], [["x"]]), "s1")]),
    "q2": response("q2", [step("sparql_query", sparql(["b"], [["z"]]), "s2")]),
}


def test_config_as_dict_object_or_path_gives_the_same_results(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("steps:\n  score_mode: all_groups\n")
    by_dict = run_evaluation(
        SIMPLE_REFERENCE, SIMPLE_RESPONSES, {"steps": {"score_mode": "all_groups"}}
    )
    by_path = run_evaluation(SIMPLE_REFERENCE, SIMPLE_RESPONSES, path)
    by_object = run_evaluation(
        SIMPLE_REFERENCE,
        SIMPLE_RESPONSES,
        EvaluationConfig.model_validate({"steps": {"score_mode": "all_groups"}}),
    )
    assert by_dict == by_path == by_object


def test_paths_are_accepted_for_reference_and_responses(tmp_path: Path) -> None:
    (tmp_path / "ref.json").write_text(json.dumps(SIMPLE_REFERENCE))
    (tmp_path / "resp.json").write_text(json.dumps(SIMPLE_RESPONSES))
    assert run_evaluation(tmp_path / "ref.json", str(tmp_path / "resp.json")) == run_evaluation(
        SIMPLE_REFERENCE, SIMPLE_RESPONSES
    )


def test_list_of_responses_is_accepted() -> None:
    assert run_evaluation(SIMPLE_REFERENCE, list(SIMPLE_RESPONSES.values())) == run_evaluation(
        SIMPLE_REFERENCE, SIMPLE_RESPONSES
    )


def test_run_evaluation_inside_a_running_event_loop() -> None:
    async def notebook_cell() -> list[dict[str, Any]]:
        return run_evaluation(SIMPLE_REFERENCE, SIMPLE_RESPONSES)

    results = asyncio.run(notebook_cell())
    assert [r["steps_score"] for r in results] == pytest.approx([1.0, 0.0])


def test_arun_evaluation() -> None:
    results = asyncio.run(arun_evaluation(SIMPLE_REFERENCE, SIMPLE_RESPONSES))
    assert results == run_evaluation(SIMPLE_REFERENCE, SIMPLE_RESPONSES)


def test_inputs_are_never_mutated() -> None:
    reference = copy.deepcopy(SIMPLE_REFERENCE)
    responses = copy.deepcopy(SIMPLE_RESPONSES)
    results = run_evaluation(reference, responses)
    assert reference == SIMPLE_REFERENCE
    assert responses == SIMPLE_RESPONSES
    # results do not share mutable objects with the inputs either
    results[0]["reference_steps"][0][0]["args"] = {"changed": True}
    results[0]["actual_steps"][0]["output"] = "changed"
    assert reference == SIMPLE_REFERENCE
    assert responses == SIMPLE_RESPONSES


def test_result_keys_follow_the_seed() -> None:
    [result, _] = run_evaluation(
        SIMPLE_REFERENCE,
        {
            "q1": response(
                "q1",
                [step("sparql_query", sparql(["b"], [["x"]]), "s1")],
                actual_answer="x",
                input_tokens=10,
                output_tokens=2,
                total_tokens=12,
                elapsed_sec=1.5,
            )
        },
    )
    assert list(result) == [
        "template_id",
        "question_id",
        "question_text",
        "reference_answer",
        "reference_steps",
        "status",
        "actual_answer",
        "actual_steps",
        "steps_score",
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "elapsed_sec",
    ]


# ---------------------------------------------------------------- robustness


def test_missing_response_is_an_error_item_and_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    results = run_evaluation(SIMPLE_REFERENCE, {"q1": SIMPLE_RESPONSES["q1"]})
    missing = results[1]
    assert missing["status"] == "error"
    assert missing["missing_response"] is True
    assert missing["error"] == "no response for this question"
    assert results[0]["steps_score"] == pytest.approx(1.0)
    assert "question 'q2': no response for this question" in caplog.text


ZERO_ERRORS = {"aggregation": {"error_samples": "zero"}}
USAGE = ("input_tokens", "output_tokens", "total_tokens", "elapsed_sec")


def test_error_samples_zero_writes_the_steps_zero_on_error_results() -> None:
    reference = dataset(
        *SIMPLE_REFERENCE[0]["questions"], question("q3", answer="x")
    )  # q3 has no reference steps
    responses = {"q1": response("q1", error="timeout"), "q3": response("q3", error="timeout")}
    q1, q2, q3 = run_evaluation(reference, responses, ZERO_ERRORS)
    for result in (q1, q2):  # an error response, and a missing one
        assert result["status"] == "error"
        assert result["actual_steps"] == []
        assert result["steps_score"] == pytest.approx(0.0)
    assert q3["actual_steps"] == []
    assert "steps_score" not in q3


def test_error_results_carry_no_step_keys_by_default() -> None:
    results = run_evaluation(SIMPLE_REFERENCE, {"q1": response("q1", error="timeout")})
    for result in results:
        assert "actual_steps" not in result
        assert "steps_score" not in result


def test_all_error_run_in_zero_mode_agrees_in_results_aggregates_and_compare() -> None:
    # The seed's fixture of an all-error run: every result has steps_score 0.0, and the
    # summary shows those zeros per template, in micro and in macro.
    errors = {qid: response(qid, error="Some error") for qid in ("q1", "q2")}
    failed = run_evaluation(SIMPLE_REFERENCE, errors, ZERO_ERRORS)
    assert [result["steps_score"] for result in failed] == pytest.approx([0.0, 0.0])
    aggregates = compute_aggregates(failed, ZERO_ERRORS)
    for block in (aggregates["per_template"]["t1"], aggregates["micro"]):
        assert block["number_of_success_samples"] == 0
        assert block["steps_score"]["sum"] == pytest.approx(0.0)
        assert block["steps_score"]["max"] == pytest.approx(0.0)
    assert aggregates["macro"] == {
        "steps_score": {"mean": pytest.approx(0.0)},
        **{key: {"mean": 0} for key in USAGE},
    }
    passed = run_evaluation(SIMPLE_REFERENCE, SIMPLE_RESPONSES, ZERO_ERRORS)
    change = compare_results(passed, failed, config_a=ZERO_ERRORS, config_b=ZERO_ERRORS).overall[
        "steps_score"
    ]
    assert change.pairs == 2
    assert change.mean_b == pytest.approx(0.0)
    assert change.scored_only_in_a == 0


def test_unknown_response_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    results = run_evaluation(SIMPLE_REFERENCE, {**SIMPLE_RESPONSES, "q9": response("q9")})
    assert len(results) == 2
    assert "question 'q9': response for a question not in the reference" in caplog.text


def test_malformed_step_is_flagged_and_the_rest_scored() -> None:
    results = run_evaluation(
        SIMPLE_REFERENCE,
        {
            "q1": response(
                "q1",
                [
                    {"name": "sparql_query", "output": sparql(["b"], [["x"]])},  # no status
                    step("sparql_query", sparql(["b"], [["x"]]), "s1"),
                ],
            ),
            "q2": SIMPLE_RESPONSES["q2"],
        },
    )
    bad, good = results[0]["actual_steps"]
    assert bad["input_error"] == "actual_steps[0].status: missing"
    assert "input_error" not in good
    assert results[0]["steps_score"] == pytest.approx(1.0)
    assert results[0]["reference_steps"][0][0]["matches"] == "s1"


def test_malformed_response_field_is_reported_on_the_item() -> None:
    results = run_evaluation(
        SIMPLE_REFERENCE,
        {
            "q1": {**SIMPLE_RESPONSES["q1"], "input_tokens": "lots"},
            "q2": SIMPLE_RESPONSES["q2"],
        },
    )
    assert results[0]["steps_score"] == pytest.approx(1.0)
    assert "input_tokens" not in results[0]
    assert results[0]["input_errors"][0].startswith("<responses>: question 'q1': input_tokens:")


def test_broken_reference_step_is_flagged_and_unmatched() -> None:
    reference = dataset(question("q1", [[sparql_ref("{oops")]]))
    [result] = run_evaluation(reference, {"q1": SIMPLE_RESPONSES["q1"]})
    assert result["steps_score"] == pytest.approx(0.0)
    assert "not SPARQL results JSON" in result["reference_steps"][0][0]["input_error"]


def test_steps_without_ids_are_referred_to_by_position() -> None:
    [result, _] = run_evaluation(
        SIMPLE_REFERENCE,
        {
            "q1": response("q1", [step("sparql_query", sparql(["b"], [["x"]]))]),
        },
    )
    assert result["reference_steps"][0][0]["matches"] == "actual_steps[0]"


def test_no_reference_steps_means_no_steps_score() -> None:
    [result] = run_evaluation(
        dataset(question("q1", answer="x")), {"q1": response("q1", actual_answer="x")}
    )
    assert "steps_score" not in result
    assert result["status"] == "success"


def test_reference_steps_without_actual_steps_score_zero() -> None:
    [result, _] = run_evaluation(SIMPLE_REFERENCE, {"q1": response("q1", actual_answer="x")})
    assert result["steps_score"] == pytest.approx(0.0)


class _Exploding(ItemMetric):
    name = "exploding"
    outputs: ClassVar[tuple[OutputKey, ...]] = (OutputKey("exploding_score"),)
    error_keys: ClassVar[tuple[str, ...]] = ("exploding_error",)

    async def score(self, context: ItemContext) -> Outcome:
        if context.question.id == "q2":
            raise RuntimeError("bug for q2 only")
        from graphrag_eval.metrics.base import Scored

        return Scored({"exploding_score": 0.5})


@pytest.fixture
def exploding_metric() -> Iterator[None]:
    register_metric(_Exploding())
    yield
    unregister_metric("exploding")


@pytest.mark.usefixtures("exploding_metric")
def test_a_metric_bug_costs_one_value_not_the_run(caplog: pytest.LogCaptureFixture) -> None:
    q1, q2 = run_evaluation(SIMPLE_REFERENCE, SIMPLE_RESPONSES)
    assert q1["exploding_score"] == pytest.approx(0.5)
    assert q2["exploding_error"] == "internal error in exploding: RuntimeError('bug for q2 only')"
    assert q2["steps_score"] == pytest.approx(0.0)  # the other metrics of the item are unaffected
    assert "metric exploding failed on question 'q2'" in caplog.text
    # and the new metric is aggregated without any change to the aggregator
    aggregates = compute_aggregates([q1, q2])
    assert aggregates["micro"]["exploding_score"]["mean"] == pytest.approx(0.5)
    assert aggregates["micro"]["coverage"]["exploding_score"] == {
        "scored": 1,
        "failed": 1,
        "skipped": 0,
        "failed_reason": q2["exploding_error"],
    }


# ---------------------------------------------------------------- retrieval context metrics


def test_unmatched_retrieval_step_still_gets_context_metrics() -> None:
    # recall@k is 0 (different ids), so the step does not match; the context metrics must
    # still show the failure instead of being absent.
    reference = dataset(question("q1", [[ref_step("retrieval", contexts(("d1", "alpha")))]]))
    [result] = run_evaluation(
        reference,
        {
            "q1": response(
                "q1",
                [
                    step("retrieval", contexts(("d7", "omega")), "r"),
                ],
            )
        },
    )
    retrieval = result["actual_steps"][0]
    assert "matches" not in result["reference_steps"][0][0]
    assert retrieval["retrieval_context_recall"] == pytest.approx(0.0)
    assert retrieval["retrieval_context_precision"] == pytest.approx(0.0)
    assert retrieval["retrieval_context_f1"] == pytest.approx(0.0)
    assert retrieval["retrieval_context_ids_average_precision"] == pytest.approx(0.0)


def test_unreadable_retrieval_output_gets_the_error_keys() -> None:
    reference = dataset(question("q1", [[ref_step("retrieval", contexts(("d1", "alpha")))]]))
    [result] = run_evaluation(
        reference,
        {
            "q1": response(
                "q1",
                [
                    step("retrieval", "Error: index offline", "r"),
                ],
            )
        },
    )
    retrieval = result["actual_steps"][0]
    assert retrieval["retrieval_context_recall_error"].startswith(
        "the retrieval output cannot be read"
    )
    assert (
        retrieval["retrieval_context_precision_error"]
        == retrieval["retrieval_context_recall_error"]
    )
    assert "retrieval_context_recall" not in retrieval


def test_retrieval_context_metrics_can_be_disabled() -> None:
    reference = dataset(question("q1", [[ref_step("retrieval", contexts(("d1", "alpha")))]]))
    responses = {"q1": response("q1", [step("retrieval", contexts(("d1", "alpha")), "r")])}
    [result] = run_evaluation(reference, responses, {"retrieval_context": {"enabled": False}})
    assert not any(key.startswith("retrieval_context") for key in result["actual_steps"][0])
    assert result["steps_score"] == pytest.approx(1.0)


def test_no_reference_retrieval_step_means_no_context_metrics() -> None:
    [result, _] = run_evaluation(
        SIMPLE_REFERENCE,
        {
            "q1": response(
                "q1",
                [
                    step("retrieval", contexts(("d1", "alpha")), "r"),
                    step("sparql_query", sparql(["b"], [["x"]]), "s1"),
                ],
            )
        },
    )
    assert not any(key.startswith("retrieval_context") for key in result["actual_steps"][0])


def test_prepared_reference_can_be_evaluated_again() -> None:
    # Parsed reference outputs are released after each item; a second run over the same
    # prepared questions must parse them again and score the same.
    questions = prepare_reference(SIMPLE_REFERENCE)
    first = asyncio.run(evaluate(questions, SIMPLE_RESPONSES))
    second = asyncio.run(evaluate(questions, SIMPLE_RESPONSES))
    assert [r["steps_score"] for r in first.results] == pytest.approx([1.0, 0.0])
    assert first.results == second.results


def test_one_actual_step_against_several_reference_steps() -> None:
    reference = dataset(
        question("q1", [[sparql_ref(sparql(["a"], [["x"]])), sparql_ref(sparql(["b"], [["x"]]))]])
    )
    [result] = run_evaluation(
        reference, {"q1": response("q1", [step("sparql_query", sparql(["c"], [["x"]]), "s")])}
    )
    assert result["steps_score"] == pytest.approx(0.5)  # the one step matches one of the two
    # ... the later reference step, as in the seed's later versions
    [[first, second]] = result["reference_steps"]
    assert second["matches"] == "s"
    assert "matches" not in first


def test_results_do_not_depend_on_keeping_parsed_references(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Datasets too large to keep their parsed reference outputs are parsed again per item.
    from graphrag_eval.evaluation import runner as evaluation

    reference = load_reference(EXAMPLES / "reference.yaml")
    responses = load_responses(EXAMPLES / "responses.jsonl")
    kept = run_evaluation(reference, responses)
    monkeypatch.setattr(evaluation, "PREPARED_OUTPUTS_BUDGET_BYTES", 0)
    assert run_evaluation(reference, responses) == kept


def test_unreadable_output_is_flagged_on_the_step_and_counted() -> None:
    run = asyncio.run(
        evaluate(
            SIMPLE_REFERENCE,
            {
                "q1": response(
                    "q1",
                    [
                        step("sparql_query", "Error: query timed out", "s0"),
                        step("sparql_query", sparql(["b"], [["x"]]), "s1"),
                    ],
                ),
                "q2": response("q2", [step("sparql_query", "<urn:a> <urn:b> <urn:c> .", "s2")]),
            },
        )
    )
    q1, q2 = run.results
    timed_out, good = q1["actual_steps"]
    assert timed_out["output_error"].startswith("output is not SPARQL results JSON")
    assert "output_error" not in good
    assert q1["steps_score"] == pytest.approx(1.0)
    assert q2["actual_steps"][0]["output_error"].startswith("output is not SPARQL results JSON")
    unreadable = [n for n in run.diagnostics.notices if n.kind == "unreadable_output"]
    assert [(n.item, n.field) for n in unreadable] == [
        ("question 'q1'", "actual_steps[0]"),
        ("question 'q2'", "actual_steps[0]"),
    ]


def test_a_matched_step_gets_no_output_error() -> None:
    # the same autocomplete output is unreadable as SPARQL JSON for one reference step but
    # matches the iri_discovery step: no error on it
    reference = dataset(question("q1", [[ref_step("iri_discovery", "urn:a")]]))
    [result] = run_evaluation(
        reference, {"q1": response("q1", [step("sparql_query", "text mentioning <urn:a>", "s")])}
    )
    assert result["steps_score"] == pytest.approx(1.0)
    assert "output_error" not in result["actual_steps"][0]


def test_fractional_context_metrics_and_pairing_with_the_matched_reference_step() -> None:
    first = ref_step("retrieval", contexts(("d1", "a"), ("d2", "b")))
    second = ref_step("retrieval", contexts(("d3", "c"), ("d4", "d")))
    reference = dataset(question("q1", [[first, second]]))
    [result] = run_evaluation(
        reference,
        {
            "q1": response(
                "q1",
                [
                    # matches the second reference step (recall@2 = 1/2): compared with its contexts
                    step("retrieval", contexts(("x", "z"), ("d4", "d")), "r1", args={"k": 2}),
                    # matches the first one fully
                    step("retrieval", contexts(("d1", "a"), ("d2", "b")), "r2"),
                ],
            )
        },
    )
    r1, r2 = result["actual_steps"]
    assert result["reference_steps"][0][1]["matches"] == "r1"
    assert r1["retrieval_context_recall"] == pytest.approx(0.5)
    assert r1["retrieval_context_precision"] == pytest.approx(0.25)  # d4 at rank 2, of 2
    assert r1["retrieval_context_f1"] == pytest.approx(1 / 3)
    assert r1["retrieval_context_ids_average_precision"] == pytest.approx(0.25)
    assert r2["retrieval_context_recall"] == pytest.approx(1.0)
    assert result["steps_score"] == pytest.approx(0.75)


def test_on_item_receives_every_result_as_it_finishes() -> None:
    seen: list[dict[str, Any]] = []
    run = asyncio.run(
        evaluate(SIMPLE_REFERENCE, {"q1": SIMPLE_RESPONSES["q1"]}, on_item=seen.append)
    )
    assert sorted(r["question_id"] for r in seen) == ["q1", "q2"]
    assert {r["question_id"]: r for r in seen} == {r["question_id"]: r for r in run.results}


# ---------------------------------------------------------------- typed results to the edge


def test_a_run_holds_typed_results_and_flattens_them_once() -> None:
    run = asyncio.run(evaluate(SIMPLE_REFERENCE, SIMPLE_RESPONSES))

    assert all(isinstance(item, QuestionResult) for item in run.items)
    assert run.results == to_records(run.run_result)
    assert run.results is run.results  # made once, at the edge


def test_an_error_sample_in_zero_mode_carries_a_typed_steps_score() -> None:
    responses = {"q1": response("q1", error="timeout")}
    run = asyncio.run(evaluate(SIMPLE_REFERENCE, responses, ZERO_ERRORS))

    for item in run.items:  # an error response, and a missing one
        assert item.is_error
        assert item.fields["actual_steps"] == []
        assert item.outcomes[OutcomeKey("steps_score")] == Scored({"steps_score": 0.0})


def test_the_typed_aggregates_of_a_run_equal_those_of_its_records() -> None:
    for config in (None, ZERO_ERRORS):
        responses = {"q1": SIMPLE_RESPONSES["q1"], "q2": response("q2", error="timeout")}
        run = asyncio.run(evaluate(SIMPLE_REFERENCE, responses, config))

        typed = aggregate(run.run_result, config).to_dict()

        assert typed == compute_aggregates(run.results, config)


def test_results_kept_from_an_earlier_run_are_returned_as_they_were_written() -> None:
    first = asyncio.run(evaluate(SIMPLE_REFERENCE, SIMPLE_RESPONSES, ZERO_ERRORS))
    kept = {record["question_id"]: {**record, "my_score": 2} for record in first.results}

    again = asyncio.run(evaluate(SIMPLE_REFERENCE, SIMPLE_RESPONSES, ZERO_ERRORS, done=kept))

    assert again.results == list(kept.values())
    typed = aggregate(again.run_result, ZERO_ERRORS).to_dict()
    assert typed == compute_aggregates(again.results, ZERO_ERRORS)
    assert typed["micro"]["my_score"]["sum"] == pytest.approx(4)


class _Unprintable:
    """A result whose repr counts its calls: formatting a run's result costs as much as
    the run is large."""

    def __init__(self) -> None:
        self.reprs = 0

    def __repr__(self) -> str:
        self.reprs += 1
        return "<result>"


@pytest.mark.parametrize("in_a_loop", [False, True])
def test_running_to_completion_never_formats_the_result(in_a_loop: bool) -> None:
    result = _Unprintable()

    async def make() -> _Unprintable:
        await asyncio.sleep(0)
        return result

    got: list[_Unprintable] = []
    if in_a_loop:  # a notebook's cell: run on a loop of its own, in a thread

        async def cell() -> None:
            got.append(run_sync(make))

        asyncio.run(cell())
    else:
        got.append(run_sync(make))

    assert got == [result]
    assert result.reprs == 0
