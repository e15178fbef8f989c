"""Typed failures (issue 23, point 6): a failure's kind is decided where it happens, written
under ``failure_kinds`` beside the error keys (which stay as they were), read back, and what
``--resume`` redoes is decided by it; a record saved before kinds were is read by its message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval.errors import BudgetExhausted, CallFailed, MalformedReply
from graphrag_eval.inputs import parse_reference
from graphrag_eval.metrics.base import Failed, FailureKind, Scored
from graphrag_eval.metrics.failure_kinds import kind_of
from graphrag_eval.metrics.registry import registered_metrics
from graphrag_eval.results.checkpoint import resume
from graphrag_eval.results.from_records import layout_for, read_record
from graphrag_eval.results.model import FAILURE_KINDS_KEY, OutcomeKey, QuestionResult
from graphrag_eval.results.to_records import to_record
from graphrag_eval.results.write_run import CHECKPOINT_JSON, RESULTS_JSONL, results_jsonl_text

from builders import dataset, question


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


def _resume(tmp_path: Path, records: list[dict[str, Any]]) -> Any:
    questions = parse_reference(dataset(*(question(r["question_id"]) for r in records)))
    (tmp_path / RESULTS_JSONL).write_text(results_jsonl_text(records), encoding="utf-8")
    (tmp_path / CHECKPOINT_JSON).write_text(json.dumps({"fingerprint": "fp"}), encoding="utf-8")
    return resume(tmp_path, RESULTS_JSONL, "fp", questions, registered_metrics())


def _record(question_id: str, **keys: Any) -> dict[str, Any]:
    return {"template_id": "t1", "question_id": question_id, "status": "success", **keys}


def test_resume_redoes_by_the_kind_and_reads_the_message_of_older_records(
    tmp_path: Path,
) -> None:
    kinds = FAILURE_KINDS_KEY
    records = [
        # The kind decides, whatever the message says.
        _record(
            "unreachable",
            answer_eval_error="no reply",
            **{kinds: {"answer_correctness": "unreachable"}},
        ),
        _record(
            "unusable_reply",
            answer_eval_error="generation call failed: 500 (3 attempts)",
            **{kinds: {"answer_correctness": "reply"}},
        ),
        _record(
            "budget_on_a_step",
            actual_steps=[{"retrieval_answer_recall_error": "stopped"}],
            **{kinds: {"retrieval_answer": "budget"}},
        ),
        # Saved before kinds were: its message is read.
        _record("older", answer_eval_error="generation call failed: 500 (3 attempts)"),
    ]

    resumed = _resume(tmp_path, records)

    assert sorted(resumed.kept) == ["unusable_reply"]
    assert resumed.redo_causes == {"unreachable": 1, "failed": 1, "budget": 1}
