"""Typed results and the output edge (src/graphrag_eval/results.py): every record a run
writes reads back into a typed result that writes the same record again, key order
included; skipped metrics keep their reason in the results and in the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval import load_reference, load_responses, run_evaluation
from graphrag_eval.metrics.base import Failed, Outcome, Scored, Skipped
from graphrag_eval.metrics.registry import IDENTITY_KEYS
from graphrag_eval.report.html import render_report
from graphrag_eval.results.aggregates import Coverage
from graphrag_eval.results.aggregation import aggregate, compute_aggregates
from graphrag_eval.results.from_records import (
    iter_scores,
    layout_for,
    read_record,
    read_records,
    records_layout,
)
from graphrag_eval.results.item_values import item_values
from graphrag_eval.results.model import OutcomeKey, QuestionResult, RunResult
from graphrag_eval.results.read_run import load_run
from graphrag_eval.results.to_records import to_records

from builders import contexts, dataset, question, ref_step, response, sparql, sparql_ref, step

EXAMPLES = Path(__file__).parents[2] / "examples"

NO_USAGE = "the response reports no usage"

MIXED_REFERENCE = dataset(
    question("q1", [[sparql_ref(sparql(["a"], [["x"]]))]], answer="x"),
    question("q2", [[sparql_ref(sparql(["a"], [["y"]]))]]),
    question("q3", [[ref_step("retrieval", contexts(("c1", "alpha")))]], answer="alpha"),
    question("q4", [[sparql_ref(sparql(["a"], [["x"]]))]]),
    question("q5", answer="five"),
    question("q6", [[sparql_ref(sparql(["a"], [["x"]]))]]),
)
MIXED_RESPONSES = [
    response(
        "q1",
        [step("sparql_query", sparql(["b"], [["x"]]), "s1")],
        actual_answer="x",
        input_tokens=10,
        output_tokens=2,
        total_tokens=12,
        elapsed_sec=1.5,
    ),
    response("q2", [step("sparql_query", sparql(["b"], [["z"]]), "s2"), "not a step"]),
    response(
        "q3",
        [
            step("retrieval", contexts(("c1", "alpha"), ("c2", "beta")), "r1"),
            step("retrieval", "not contexts", "r2"),
        ],
        actual_answer="alpha",
    ),
    response("q4", error="the agent timed out"),
    response("q5", actual_answer="five", input_tokens="many"),
]


def mixed(config: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return run_evaluation(MIXED_REFERENCE, MIXED_RESPONSES, config)


def example(config: Path | None = None) -> list[dict[str, Any]]:
    reference = load_reference(EXAMPLES / "reference.yaml")
    responses = load_responses(EXAMPLES / "responses.jsonl")
    return run_evaluation(reference, responses, config)


RUNS = {
    "example": lambda: example(),
    "example-config": lambda: example(EXAMPLES / "config.yaml"),
    "mixed": lambda: mixed(),
    "mixed-all-groups-zero": lambda: mixed(
        {"steps": {"score_mode": "all_groups"}, "aggregation": {"error_samples": "zero"}}
    ),
    "mixed-retrieval-context": lambda: mixed({"retrieval_context": {"enabled": True}}),
}


def assert_round_trip(records: list[dict[str, Any]], config: Any = None) -> None:
    """write -> read -> write gives the same records, as JSON text (key order included)."""
    typed = read_records(records, layout_for(config))
    again = to_records(typed)
    assert json.dumps(again) == json.dumps(records)
    assert to_records(read_records(again, layout_for(config))) == again


@pytest.mark.parametrize("name", list(RUNS))
def test_every_result_of_a_run_reads_back_and_writes_the_same(name: str) -> None:
    assert_round_trip(RUNS[name]())


def test_a_saved_run_reads_back_the_same(tmp_path: Path) -> None:
    records = mixed({"aggregation": {"error_samples": "zero"}})
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))

    run = load_run(path)

    assert to_records(run.results) == records
    assert run.aggregates.to_dict() == compute_aggregates(records)


def test_records_with_keys_no_metric_declares_read_back_the_same() -> None:
    records = [
        {
            "template_id": "t",
            "question_id": "a",
            "status": "success",
            "my_score": 3,
            "note": "kept as it is",
            "other_error": "no metric of this name",
            "skipped": {"answer_correctness": "needs actual_answer"},
            "actual_steps": [{"name": "x", "retrieval_context_recall": 0.5}, 7],
        },
        {
            "template_id": "t",
            "question_id": "b",
            "status": "success",
            "my_score_error": "the custom judge failed",
            "answer_eval_error": "judge down",
            "skipped": {},
        },
        {"template_id": "t", "question_id": "c", "status": "success", "skipped": "odd"},
    ]
    typed = read_records(records)
    assert to_records(typed) == records
    aggregates = compute_aggregates(records)
    assert aggregates["micro"]["coverage"]["my_score"] == {
        "scored": 1,
        "failed": 1,
        "skipped": 1,
        "failed_reason": "the custom judge failed",
    }


ODD_RECORDS = [
    {
        "template_id": "t",
        "question_id": "a",
        "status": "success",
        "my_score": 3,
        "answer_f1": None,
        "steps_score": 0.5,
        "answer_eval_error": "one half failed",
        "actual_steps": [
            {"name": "x", "retrieval_context_recall": 0.5, "retrieval_context_recall_error": "e"},
            7,
            {"name": "y", "retrieval_context_precision_error": "judge down"},
            {"name": "z", "retrieval_context_recall": 1.0, "status": "success"},
        ],
    },
    {
        "template_id": "u",
        "question_id": "b",
        "status": "error",
        "steps_score": 0.0,
        "answer_f1": "not a number",
        "reference_steps": [[{"name": "x"}]],
        "actual_steps": [],
    },
    {"template_id": "u", "question_id": "c", "status": "success", "actual_steps": "odd"},
    {
        "template_id": "u",
        "question_id": "d",
        "status": "success",
        "skipped": {"answer_correctness": "needs actual_answer", "my_score": "no judge"},
    },
    # A skip naming a metric that has a value is not read as a skip, nor are odd values.
    {
        "template_id": "u",
        "question_id": "e",
        "status": "success",
        "my_score": 1,
        "skipped": {"my_score": "x"},
    },
    {"template_id": "u", "question_id": "f", "status": "success", "skipped": {"answer_f1": 3}},
    {"template_id": "u", "question_id": "g", "status": "success", "skipped": {}},
]


@pytest.mark.parametrize("name", [*RUNS, "odd"])
def test_scores_read_without_outcomes_are_the_typed_results_values(name: str) -> None:
    """The light reader compare uses gives what the typed result gives, record by record,
    and so the same item values."""
    records = ODD_RECORDS if name == "odd" else RUNS[name]()
    layout = records_layout(records, layout_for())
    typed = read_records(records, layout_for())
    scores = list(iter_scores(records, layout))
    assert len(scores) == len(typed.results)
    for light, result in zip(scores, typed.results, strict=True):
        assert (light.question_id, light.template_id, light.status) == (
            result.question_id,
            result.template_id,
            result.status,
        )
        assert light.values == result.values()
        assert light.skipped == result.skipped()
        assert [step for step in result.step_scores() if step] == light.step_scores
    for zero in ({}, {"aggregation": {"error_samples": "zero"}}):
        from_records = item_values(records, zero)
        from_typed = item_values(read_records(records, layout_for(zero)), zero)
        assert from_records == from_typed
        assert len(from_records.values) == len(records)


def test_item_values_count_error_samples_as_zero_only_where_they_would_have_scored() -> None:
    values = item_values(ODD_RECORDS, {"aggregation": {"error_samples": "zero"}})
    assert values.values[1] == {"steps_score": 0.0}
    assert values.values[0]["my_score"] == pytest.approx(3.0)
    assert values.values[0]["retrieval_context_recall"] == pytest.approx(0.75)
    assert [question.question_id for question in values.questions][:3] == ["a", "b", "c"]
    assert values.skipped[3] == {
        "answer_correctness": "needs actual_answer",
        "my_score": "no judge",
    }
    assert values.skipped[4:] == [{}, {}, {}]
    assert "answer_f1" in values.keys  # present with no number: listed, never scored
    assert all("answer_f1" not in row for row in values.values)
    assert item_values(ODD_RECORDS).values[1] == {}


def test_outcomes_are_read_as_scored_skipped_or_failed() -> None:
    result = read_record(
        {
            "template_id": "t",
            "question_id": "a",
            "status": "success",
            "answer_eval_error": "judge down",
            "retrieval_answer_recall": 1.0,
            "retrieval_answer_precision_error": "bad reply",
            "actual_steps": [{"name": "retrieval", "retrieval_context_recall": 0.5}],
            "skipped": {"usage": NO_USAGE},
        }
    )

    assert result.outcomes[OutcomeKey("answer_correctness")] == Failed("judge down", None)
    assert result.outcomes[OutcomeKey("retrieval_answer")] == Scored(
        {"retrieval_answer_recall": 1.0}, {"retrieval_answer_precision_error": "bad reply"}
    )
    assert result.outcomes[OutcomeKey("retrieval_context", 0)] == Scored(
        {"retrieval_context_recall": 0.5}, {}
    )
    assert result.outcomes[OutcomeKey("usage")] == Skipped(NO_USAGE)
    assert result.actual_steps == [{"name": "retrieval"}]
    assert result.skipped() == {"usage": NO_USAGE}


def test_a_skip_reason_reaches_the_results_and_the_report(tmp_path: Path) -> None:
    records = mixed()
    by_id = {record["question_id"]: record for record in records}
    assert by_id["q2"]["skipped"]["usage"] == NO_USAGE
    assert "usage" not in by_id["q1"].get("skipped", {})
    assert "skipped" not in by_id["q4"]  # an error sample is never scored, nor skipped
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))

    page = render_report(load_run(path), worst=10)

    assert f"<tr><td>usage</td><td>{NO_USAGE}</td></tr>" in page  # in the drill-down
    # The table counts as the coverage does (the error sample q4 too), with the commonest
    # reason given.
    skipped_usage = sum(1 for record in records if "usage" in record.get("skipped", {}))
    coverage = load_run(path).aggregates.micro.coverage["input_tokens"].skipped
    assert coverage > skipped_usage
    assert f'{coverage} <span class="muted">({NO_USAGE})</span>' in page  # the table


def test_failed_metrics_name_wholly_and_partly_failed_metrics() -> None:
    layout = layout_for()
    result = read_record(
        {
            "template_id": "t",
            "question_id": "a",
            "status": "success",
            "answer_eval_error": "judge down",
            "retrieval_answer_recall": 1.0,
            "retrieval_answer_precision_error": "bad reply",
            "steps_score": 1.0,
            "mine": 2,
        },
        layout,
    )

    assert result.failed_metrics() == {"answer_correctness", "retrieval_answer"}
    assert "mine" in result.layout.metrics
    assert "mine" not in layout.metrics  # the caller's layout is left as it was


def test_typed_aggregates_give_the_aggregate_dictionaries() -> None:
    records = mixed({"aggregation": {"error_samples": "zero"}})
    config = {"aggregation": {"error_samples": "zero"}}

    typed = aggregate(read_records(records, layout_for(config)), config)

    assert typed.to_dict() == compute_aggregates(records, config)
    assert typed.micro.coverage["steps_score"] == Coverage(scored=5, failed=0, skipped=1)
    steps_score = typed.micro.statistics("steps_score")
    assert steps_score is not None
    assert steps_score.mean == pytest.approx(2 / 5)


def test_a_run_wide_skip_stays_typed_and_is_not_written_per_question() -> None:
    outcomes: dict[OutcomeKey, Outcome] = {
        OutcomeKey("answer_correctness"): Skipped("no judge", run_wide=True),
        OutcomeKey("usage"): Skipped(NO_USAGE),
    }
    result = QuestionResult({"question_id": "q1", "status": "success"}, outcomes)

    assert result.skipped() == {"answer_correctness": "no judge", "usage": NO_USAGE}
    assert to_records(RunResult([result], result.layout))[0]["skipped"] == {"usage": NO_USAGE}


def test_no_custom_output_may_be_named_skipped() -> None:
    assert "skipped" in IDENTITY_KEYS
