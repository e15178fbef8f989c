"""Each question's values (src/graphrag_eval/item_values.py): saved records are read by the
keys of their shape (:class:`~graphrag_eval.results.from_records.ScoreReader`), without their
scores being
built, and give exactly what the typed results give, whatever the values."""

from __future__ import annotations

import math
from typing import Any

import pytest

from graphrag_eval.results.from_records import (
    NOT_SKIPPED,
    ScoreReader,
    iter_scores,
    layout_for,
    read_records,
    records_layout,
)
from graphrag_eval.results.item_values import item_values

ZERO = {"aggregation": {"error_samples": "zero"}}


class Score(float):
    """A float of a subclass: a number, not a plain float."""


class Count(int):
    """An int of a subclass: a number, not a plain int."""


def _record(question_id: str, status: str = "success", **values: Any) -> dict[str, Any]:
    return {"template_id": "t", "question_id": question_id, "status": status, **values}


TRICKY = [
    _record("plain", answer_f1=0.5, steps_score=1, input_tokens=10, elapsed_sec=2.5),
    # The same keys, with values that are no numbers or are numbers of other types.
    _record("nan", answer_f1=math.nan, steps_score=True, input_tokens=False, elapsed_sec=math.inf),
    _record("text", answer_f1="0.5", steps_score=None, input_tokens=-math.inf, elapsed_sec=[1]),
    _record(
        "kinds", answer_f1=Score(0.25), steps_score=Count(1), input_tokens=10**20, elapsed_sec=-0.0
    ),
    _record("huge", answer_f1=1e308, steps_score=1e308, input_tokens=1e308, elapsed_sec=1e308),
    # The same set of keys in another order: the row follows the record's order.
    _record("order", elapsed_sec=3.0, input_tokens=7, steps_score=0.0, answer_f1=1.0),
    _record("error", "error", answer_f1=0.0, steps_score=0.0, input_tokens=5, error="timed out"),
    _record("error2", "error", error="timed out", reference_steps=[], reference_answer="a"),
    _record(
        "steps",
        answer_f1=0.75,
        actual_steps=[
            {"name": "s", "retrieval_context_recall": 0.5},
            {"name": "s", "retrieval_context_recall": 1},
            "not a step",
            {"name": "s", "retrieval_context_recall": True},
        ],
    ),
    _record("odd steps", answer_f1=0.75, actual_steps="not steps"),
    _record("skip", answer_f1=0.5, skipped={"answer_relevance": "needs a judge"}),
    _record("not a skip", my_score=1, skipped={"my_score": "has a value"}),
    _record("my", my_score=2, my_label="x"),
    # Integers too large for a float (JSON has them): no scores, and no OverflowError.
    _record(
        "too big",
        answer_f1=10**400,
        my_score=-(10**400),
        actual_steps=[{"name": "s", "retrieval_context_recall": 10**400}],
    ),
    {"status": "success", "answer_f1": 0.5},  # no question or template id
]


@pytest.mark.parametrize("config", [{}, ZERO])
def test_records_give_what_their_typed_results_give(config: dict[str, Any]) -> None:
    from_records = item_values(TRICKY, config)
    from_typed = item_values(read_records(TRICKY, layout_for(config)), config)
    assert from_records == from_typed
    for ours, theirs in zip(from_records.values, from_typed.values, strict=True):
        assert list(ours) == list(theirs)  # the same order of keys
        assert all(type(value) is float for value in ours.values())


def test_values_are_the_numbers_of_the_record_in_its_order() -> None:
    values = item_values(TRICKY)
    by_id = dict(zip((item.question_id for item in values.questions), values.values, strict=True))
    assert by_id["plain"] == {
        "answer_f1": pytest.approx(0.5),
        "steps_score": pytest.approx(1.0),
        "input_tokens": pytest.approx(10.0),
        "elapsed_sec": pytest.approx(2.5),
    }
    assert by_id["nan"] == {}  # NaN, infinity and booleans are no scores
    assert by_id["text"] == {}
    assert by_id["kinds"]["answer_f1"] == pytest.approx(0.25)
    assert by_id["kinds"]["steps_score"] == pytest.approx(1.0)
    assert by_id["kinds"]["input_tokens"] == pytest.approx(1e20)
    assert by_id["huge"] == {key: pytest.approx(1e308) for key in by_id["huge"]}
    assert len(by_id["huge"]) == 4  # finite each, though their sum is not
    assert list(by_id["order"]) == ["elapsed_sec", "input_tokens", "steps_score", "answer_f1"]
    assert by_id["error"] == {}
    assert by_id["steps"]["retrieval_context_recall"] == pytest.approx(0.75)
    assert by_id["my"] == {"my_score": pytest.approx(2.0)}
    assert by_id["too big"] == {}
    assert values.questions[-1].question_id == "None"
    assert values.skipped[10] == {"answer_relevance": "needs a judge"}
    assert values.skipped[11] == {}  # names a metric with a value: not a skip


def test_zero_for_error_samples_read_from_records() -> None:
    """An error sample counts as 0 where it has what the metric needs."""
    values = item_values(TRICKY, ZERO)
    assert values.values[6] == {}
    assert values.values[7] == {"answer_f1": pytest.approx(0.0), "steps_score": pytest.approx(0.0)}
    assert item_values(TRICKY).values[7] == {}


def test_many_shapes_are_read_past_the_shapes_kept() -> None:
    """Records whose sets of keys all differ (more than the reader remembers) read as the
    typed results do, the scored keys of each one counted."""
    records = [
        _record(f"q{index}", **{f"note_{index}": "x", "answer_f1": index / 2000})
        for index in range(1500)
    ]
    records.append(_record("last", steps_score=1.0))
    from_records = item_values(records)
    assert from_records == item_values(read_records(records, layout_for()))
    assert "steps_score" in from_records.keys
    assert from_records.values[1499]["answer_f1"] == pytest.approx(1499 / 2000)


def test_score_reader_shapes_and_iter_scores() -> None:
    layout = records_layout(TRICKY, layout_for())
    reader = ScoreReader(layout, {"answer_f1", "elapsed_sec"})
    plain, order = reader.shape(TRICKY[0]), reader.shape(TRICKY[5])
    assert plain.scored == ("answer_f1", "steps_score", "input_tokens", "elapsed_sec")
    assert plain.numbers == ("answer_f1", "elapsed_sec")
    assert order.numbers == ("elapsed_sec", "answer_f1")
    assert reader.shape(TRICKY[1]) is plain  # worked out once per set of keys
    assert not plain.has_steps and not plain.skippable
    assert reader.shape(TRICKY[8]).has_steps and reader.shape(TRICKY[10]).skippable
    assert reader.skipped(TRICKY[0]) is NOT_SKIPPED
    typed = read_records(TRICKY, layout_for())
    for light, result in zip(iter_scores(TRICKY, layout), typed.results, strict=True):
        assert light.values == result.values()  # the same objects: NaN included
        assert list(light.values) == list(result.values())
        assert light.skipped == result.skipped()
        assert light.step_scores == [step for step in result.step_scores() if step]


FAILING = [
    _record("failed", answer_eval_error="judge down", answer_relevance=0.5),
    _record("partial", answer_recall=0.5, answer_eval_error="one call failed", steps_score=1.0),
    _record(
        "step failed",
        answer_f1=0.5,
        actual_steps=[
            {"name": "s", "retrieval_context_recall_error": "x"},
            {"name": "s", "retrieval_context_recall": 0.5},
        ],
    ),
    _record("skip and fail", answer_relevance_error="no judge", skipped={"answer_f1": "no ref"}),
    _record("plain", answer_f1=0.5, answer_relevance=1.0),
    _record("plain again", answer_f1=0.25, answer_relevance=0.0),
]


@pytest.mark.parametrize("config", [{}, ZERO])
def test_failures_and_skips_of_typed_results_are_those_of_records(config: dict[str, Any]) -> None:
    """The typed results' pass (its common outcomes taken by a quicker path) counts the same
    failures, in the same order, and the same skips as the records' pass."""
    from_records = item_values(FAILING, config)
    from_typed = item_values(read_records(FAILING, layout_for(config)), config)
    assert from_records == from_typed
    assert list(from_records.failed) == list(from_typed.failed)
    assert from_typed.failed["answer_relevance"] == 1
    assert from_typed.failed["answer_f1"] == 2  # failed on two questions, one of them in part
    assert from_typed.failed["retrieval_context_precision"] == 1  # on a step
    assert from_typed.skipped[3] == {"answer_f1": "no ref"}
    assert from_typed.skipped[4] == {}
    for ours, theirs in zip(from_records.values, from_typed.values, strict=True):
        assert list(ours) == list(theirs)
