"""Resuming a run (src/graphrag_eval/checkpoint.py): which items written by an interrupted
run are kept and which are evaluated again, read from their typed outcomes."""

from __future__ import annotations

from pathlib import Path

from builders import resume_saved, saved_record


def test_items_whose_judge_gave_no_reply_are_evaluated_again(tmp_path: Path) -> None:
    records = [
        saved_record("kept", steps_score=1.0),
        saved_record("unjudged_failure", steps_score_error="internal error"),
        saved_record("judge_failed", answer_eval_error="generation call failed: 500 (3 attempts)"),
        saved_record(
            "judge_failed_on_a_step",
            actual_steps=[
                {"retrieval_answer_recall_error": "not computed: the cost limit of $1 was reached"}
            ],
        ),
        saved_record("malformed_reply", answer_eval_error="the judge's reply is not valid JSON"),
        saved_record("not_evaluated", status="error", evaluation_error=True),
    ]

    resumed = resume_saved(tmp_path, records)

    assert sorted(resumed.kept) == ["kept", "malformed_reply", "not_evaluated", "unjudged_failure"]
    assert resumed.redo == 2
    assert resumed.redo_causes == {"failed": 1, "budget": 1}
    assert resumed.kept["kept"] == records[0]
