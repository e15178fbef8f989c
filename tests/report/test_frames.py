"""Results, aggregates and comparisons as pandas DataFrames (the report extra)."""

from __future__ import annotations

import math

import pytest

import graphrag_eval

pd = pytest.importorskip("pandas")

RESULTS = [
    {
        "template_id": "t1",
        "question_id": "q1",
        "question_text": "Which?",
        "status": "success",
        "steps_score": 1.0,
        "answer_classification": "CORRECT",
        "actual_steps": [
            {"name": "retrieval", "retrieval_context_f1": 0.5},
            {"name": "retrieval", "retrieval_context_f1": 1.0},
        ],
    },
    {
        "template_id": "t1",
        "question_id": "q2",
        "question_text": "What?",
        "status": "success",
        "steps_score": 0.0,
        "answer_eval_error": "the judge failed",
    },
    {
        "template_id": "t2",
        "question_id": "q3",
        "question_text": "Who?",
        "status": "error",
        "error": "timeout",
    },
]


def test_results_frame_has_one_row_per_question_with_every_score() -> None:
    frame = graphrag_eval.results_frame(RESULTS)
    assert list(frame["question_id"]) == ["q1", "q2", "q3"]
    assert list(frame.columns[:5]) == [
        "template_id",
        "question_id",
        "status",
        "question_text",
        "error",
    ]
    assert frame.loc[0, "steps_score"] == pytest.approx(1.0)
    assert frame.loc[1, "steps_score"] == pytest.approx(0.0)
    assert math.isnan(frame.loc[2, "steps_score"])  # an error sample is not scored
    # A key written on steps is the mean over the item's steps.
    assert frame.loc[0, "retrieval_context_f1"] == pytest.approx(0.75)
    assert frame.loc[0, "answer_classification"] == "CORRECT"
    assert frame.loc[1, "answer_eval_error"] == "the judge failed"
    assert frame.loc[2, "error"] == "timeout"


def test_results_frame_counts_error_samples_as_zero_when_configured() -> None:
    results = [dict(result, reference_steps=[[]]) for result in RESULTS]
    frame = graphrag_eval.results_frame(results, {"aggregation": {"error_samples": "zero"}})
    assert frame.loc[2, "steps_score"] == pytest.approx(0.0)


def test_aggregates_frame_matches_the_aggregates() -> None:
    aggregates = graphrag_eval.compute_aggregates(RESULTS)
    frame = graphrag_eval.aggregates_frame(aggregates)
    overall = frame[(frame.scope == "all") & (frame.metric == "steps_score")].iloc[0]
    assert overall["mean"] == aggregates["micro"]["steps_score"]["mean"] == 0.5
    assert overall["macro_mean"] == aggregates["macro"]["steps_score"]["mean"]
    assert overall["scored"] == 2
    per_template = frame[frame.scope == "template"].pivot(
        index="template_id", columns="metric", values="mean"
    )
    assert per_template.loc["t1", "steps_score"] == pytest.approx(0.5)
    assert per_template.loc["t1", "retrieval_context_f1"] == pytest.approx(0.75)
    # t2 has only an error sample: no numeric statistics for it.
    assert "t2" not in set(frame[frame.metric == "steps_score"].template_id.dropna())


def test_comparison_frame_has_a_row_per_scope_and_metric() -> None:
    better = [dict(result, steps_score=1.0) for result in RESULTS]
    comparison = graphrag_eval.compare_results(RESULTS, better)
    frame = graphrag_eval.comparison_frame(comparison)
    row = frame[(frame.scope == "all") & (frame.metric == "steps_score")].iloc[0]
    assert row["mean_a"] == pytest.approx(0.5)
    assert row["mean_b"] == pytest.approx(1.0)
    assert row["difference"] == pytest.approx(0.5)
    assert row["pairs"] == 2
    assert "better_items" not in frame.columns
    templates = frame[frame.scope == "template"]
    assert set(templates.template_id) == {"t1"}
