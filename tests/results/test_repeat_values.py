"""The per-repeat values of judged keys under ``llm.repeats`` (docs/outputs.md, "Repeats"), as
compare reads them: saved records read back give each question's repeats by key
(``QuestionResult.repeat_values``) and ``ItemValues.repeats``, from the companions the
metrics declare, the same from records as from typed results."""

from __future__ import annotations

from typing import Any

from graphrag_eval.metrics.base import Aggregation, KeyKind, RepeatPart
from graphrag_eval.results.from_records import layout_for, read_records
from graphrag_eval.results.item_values import item_values

from builders import saved_record

JUDGED = {"metrics": ["answer_correctness", "answer_classification", "retrieval_answer"]}


def _with_repeats(question_id: str, f1: list[Any], labels: list[Any]) -> dict[str, Any]:
    numbers = [value for value in f1 if value is not None]
    mean = sum(numbers) / len(numbers)
    return saved_record(
        question_id,
        answer_f1=mean,
        answer_f1_repeats=f1,
        answer_f1_repeats_std=None,
        answer_classification=labels[0],
        answer_classification_repeats=labels,
    )


def test_judged_score_keys_declare_their_repeat_companions() -> None:
    layout = layout_for(JUDGED)
    outputs = layout.outputs()
    values, on_steps = outputs["answer_f1_repeats"]
    std, _ = outputs["answer_f1_repeats_std"]
    assert (values.repeats_of, values.repeat_part) == ("answer_f1", RepeatPart.VALUES)
    assert (std.repeats_of, std.repeat_part) == ("answer_f1", RepeatPart.STD)
    assert values.aggregation is Aggregation.NONE and values.kind is KeyKind.DETAIL
    assert values.error_keys == ("answer_eval_error",) and not on_steps
    # A label gets its labels per repeat, no spread; a reason or a cost gets no companion.
    assert outputs["answer_classification_repeats"][0].repeats_of == "answer_classification"
    assert "answer_classification_repeats_std" not in outputs
    assert "answer_correctness_reason_repeats" not in outputs
    assert "answer_correctness_cost_repeats" not in outputs
    assert outputs["retrieval_answer_f1_repeats"][1]  # on steps, as its key
    # Deterministic metrics have none.
    assert not any(name.startswith("steps_score_") for name in outputs)


def test_repeat_values_read_back_from_records() -> None:
    records = [
        _with_repeats("q1", [0.5, 0.75, 1.0], ["CORRECT", "WRONG", "CORRECT"]),
        _with_repeats("q2", [0.25, None, 0.75], ["WRONG", None, "WRONG"]),
        saved_record("q3", answer_f1=0.5),  # a run without repeats
    ]
    run = read_records(records, layout_for(JUDGED))
    q1, q2, q3 = run.results

    assert q1.repeat_values("answer_f1") == (0.5, 0.75, 1.0)
    assert q2.repeat_values("answer_f1") == (0.25, None, 0.75)
    assert q3.repeat_values("answer_f1") is None
    assert q1.repeat_values("answer_classification") is None  # labels: no numbers
    assert q1.repeat_values("steps_score") is None
    # The companions belong to the metric: read back into its outcome, written back alike.
    assert q1.values()["answer_f1_repeats"] == [0.5, 0.75, 1.0]
    assert "answer_f1_repeats" not in q1.fields

    from_records = item_values(records, JUDGED)
    from_typed = item_values(run, JUDGED)
    for values in (from_records, from_typed):
        assert values.repeats == [
            {"answer_f1": (0.5, 0.75, 1.0)},
            {"answer_f1": (0.25, None, 0.75)},
            {},
        ]
        assert values.repeat_array("answer_f1") == [(0.5, 0.75, 1.0), (0.25, None, 0.75), None]
        assert values.values[0]["answer_f1"] == 0.75  # the mean, as the aggregates take it


def test_repeats_of_a_metric_of_steps_are_each_repeats_mean_over_the_steps() -> None:
    steps = [
        {
            "name": "retrieval",
            "retrieval_answer_f1": 0.5,
            "retrieval_answer_f1_repeats": [0.4, 0.6],
        },
        {
            "name": "retrieval",
            "retrieval_answer_f1": 1.0,
            "retrieval_answer_f1_repeats": [1.0, None],
        },
    ]
    records = [saved_record("q1", actual_steps=steps)]
    run = read_records(records, layout_for(JUDGED))

    [result] = run.results
    assert result.repeat_values("retrieval_answer_f1", step=0) == (0.4, 0.6)
    assert result.repeat_values("retrieval_answer_f1", step=1) == (1.0, None)
    assert result.repeat_values("retrieval_answer_f1") == (0.7, 0.6)
    assert item_values(records, JUDGED).repeats == [{"retrieval_answer_f1": (0.7, 0.6)}]


def test_a_run_without_repeats_has_an_empty_row_per_result() -> None:
    records = [saved_record("q1", steps_score=1.0), saved_record("q2", answer_f1=0.5)]
    assert item_values(records, JUDGED).repeats == [{}, {}]
