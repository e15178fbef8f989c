"""Records read by their set of keys' plan
(:func:`~graphrag_eval.results.record_reading.read_typed`) read exactly as key by key
(``read_by_keys``): the same fields, outcomes and orders."""

from __future__ import annotations

from typing import Any

from graphrag_eval.results.from_records import iter_records, layout_for, records_layout
from graphrag_eval.results.record_reading import Owners, read_by_keys

RECORDS: list[dict[str, Any]] = [
    {"template_id": "t", "question_id": "a", "status": "success", "answer_f1": 0.5},
    # The same set of keys, other values (the plan is reused).
    {"template_id": "t", "question_id": "b", "status": "success", "answer_f1": "text"},
    # Keys of one metric apart, fields between them, an undeclared number.
    {
        "answer_recall": 0.5,
        "question_id": "c",
        "steps_score": 1,
        "answer_precision": 0.25,
        "my_score": 3,
        "note": [1, {"x": 2}],
    },
    # A failure (every error key, one message) and a partial one.
    {"question_id": "d", "answer_eval_error": "judge down", "answer_relevance_error": "x"},
    {"question_id": "e", "answer_recall": 0.5, "answer_eval_error": "one call failed"},
    # Keys read key by key: steps, skip reasons, failure kinds.
    {
        "question_id": "f",
        "answer_f1": 1.0,
        "actual_steps": [{"name": "s", "retrieval_context_recall": 0.5}, "not a step"],
    },
    {"question_id": "g", "skipped": {"answer_relevance": "no judge"}},
    {"question_id": "h", "answer_eval_error": "x", "failure_kinds": {"answer_correctness": "api"}},
    {"question_id": "i", "actual_steps": "not steps", "skipped": "not reasons"},
    {"status": "error", "error": "timed out", "steps_score": 0.0},
]


def test_records_read_by_plan_read_as_key_by_key() -> None:
    layout = records_layout(RECORDS, layout_for())
    owners = Owners(layout)
    planned = list(iter_records(RECORDS * 2, layout))  # the second time by the plans kept
    for record, result in zip(RECORDS * 2, planned, strict=True):
        by_key = read_by_keys(record, layout, owners)
        assert result == by_key, record
        assert list(result.fields) == list(by_key.fields)
        assert list(result.outcomes) == list(by_key.outcomes)
        for key, outcome in result.outcomes.items():
            assert type(outcome) is type(by_key.outcomes[key])
    assert planned[3].failed_metrics() == {"answer_correctness", "answer_relevance"}
    assert planned[4].outcomes[next(iter(planned[4].outcomes))].failures  # a partial failure


def test_many_sets_of_keys_read_past_the_plans_kept() -> None:
    records = [{"question_id": str(i), f"note_{i}": i, "answer_f1": 0.5} for i in range(1100)]
    layout = records_layout(records, layout_for())
    owners = Owners(layout)
    for record, result in zip(records, iter_records(records, layout), strict=True):
        assert result == read_by_keys(record, layout, owners)
