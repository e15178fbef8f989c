"""Typed failures (issue 23, point 6): a failure's kind is decided where it happens, written
under ``failure_kinds`` beside the error keys (which stay as they were), read back, and what
``--resume`` redoes is decided by it; a record saved before kinds were is read by its message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from graphrag_eval.errors import BudgetExhausted, CallFailed, MalformedReply
from graphrag_eval.metrics.base import Failed, FailureKind, Scored
from graphrag_eval.metrics.failure_kinds import kind_of
from graphrag_eval.results.from_records import layout_for, read_record
from graphrag_eval.results.model import FAILURE_KINDS_KEY, OutcomeKey, QuestionResult
from graphrag_eval.results.to_records import to_record

from builders import resume_saved, saved_record


def _result(**outcomes: Any) -> QuestionResult:
    fields = {"template_id": "t1", "question_id": "q", "status": "success"}
    return QuestionResult(
        fields, {OutcomeKey(name): outcome for name, outcome in outcomes.items()}, layout_for()
    )


def test_a_failure_keeps_its_error_keys_and_adds_its_kind() -> None:
    record = to_record(
        _result(answer_correctness=Failed("judge down", FailureKind.UNREACHABLE, "judge"))
    )

    assert record["answer_eval_error"] == "judge down"
    assert record[FAILURE_KINDS_KEY] == {"answer_correctness": "unreachable"}
    read = read_record(record, layout_for())
    assert read.outcomes[OutcomeKey("answer_correctness")] == Failed(
        "judge down", FailureKind.UNREACHABLE
    )
    assert FAILURE_KINDS_KEY not in read.fields  # read as the kinds, not kept as a field


def test_a_result_without_failures_has_no_kinds_key() -> None:
    record = to_record(_result(answer_correctness=Scored({"answer_correctness": 1.0})))

    assert FAILURE_KINDS_KEY not in record


def test_an_unknown_kind_reads_as_not_known() -> None:
    record = {
        "template_id": "t1",
        "question_id": "q",
        "status": "success",
        "answer_eval_error": "x",
        FAILURE_KINDS_KEY: {"answer_correctness": "gremlins"},
    }

    failed = read_record(record, layout_for()).outcomes[OutcomeKey("answer_correctness")]

    assert failed == Failed("x", None)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (BudgetExhausted("not computed: the cost limit of $1 was reached"), FailureKind.BUDGET),
        (MalformedReply("the judge's reply is not valid JSON"), FailureKind.REPLY),
        (CallFailed("generation call failed: connection failed (3 attempts)"), "unreachable"),
        (CallFailed("generation call failed: 500 (3 attempts)"), FailureKind.ENDPOINT),
        (CallFailed("the judge's reply is not a chat completion: 'x'"), FailureKind.REPLY),
    ],
)
def test_the_kind_of_a_failed_call(error: Exception, kind: FailureKind | str) -> None:
    assert isinstance(error, BudgetExhausted | MalformedReply | CallFailed)
    assert kind_of(error) == FailureKind(kind)


def test_a_partial_failure_has_the_kind_calling_again_may_mend_first() -> None:
    reply, budget = Failed("x", FailureKind.REPLY), Failed("y", FailureKind.BUDGET)

    assert Scored.kind_of(reply, budget) is FailureKind.BUDGET
    assert Scored.kind_of(1.0, reply) is FailureKind.REPLY
    assert Scored.kind_of(1.0, 2.0) is None


def test_resume_redoes_by_the_kind_and_reads_the_message_of_older_records(
    tmp_path: Path,
) -> None:
    kinds = FAILURE_KINDS_KEY
    records = [
        # The kind decides, whatever the message says.
        saved_record(
            "unreachable",
            answer_eval_error="no reply",
            **{kinds: {"answer_correctness": "unreachable"}},
        ),
        saved_record(
            "unusable_reply",
            answer_eval_error="generation call failed: 500 (3 attempts)",
            **{kinds: {"answer_correctness": "reply"}},
        ),
        saved_record(
            "budget_on_a_step",
            actual_steps=[{"retrieval_answer_recall_error": "stopped"}],
            **{kinds: {"retrieval_answer": "budget"}},
        ),
        # Saved before kinds were: its message is read.
        saved_record("older", answer_eval_error="generation call failed: 500 (3 attempts)"),
    ]

    resumed = resume_saved(tmp_path, records)

    assert sorted(resumed.kept) == ["unusable_reply"]
    assert resumed.redo_causes == {"unreachable": 1, "failed": 1, "budget": 1}
