"""Resuming a run (src/graphrag_eval/checkpoint.py): which items written by an interrupted
run are kept and which are evaluated again, read from their typed outcomes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from graphrag_eval.inputs import parse_reference
from graphrag_eval.metrics.registry import registered_metrics
from graphrag_eval.results.checkpoint import resume
from graphrag_eval.results.write_run import CHECKPOINT_JSON, RESULTS_JSONL, results_jsonl_text

from builders import dataset, question


def _resume(tmp_path: Path, records: list[dict[str, Any]]) -> Any:
    questions = parse_reference(dataset(*(question(r["question_id"]) for r in records)))
    (tmp_path / RESULTS_JSONL).write_text(results_jsonl_text(records), encoding="utf-8")
    (tmp_path / CHECKPOINT_JSON).write_text(json.dumps({"fingerprint": "fp"}), encoding="utf-8")
    return resume(tmp_path, RESULTS_JSONL, "fp", questions, registered_metrics())


def _record(question_id: str, **keys: Any) -> dict[str, Any]:
    return {"template_id": "t1", "question_id": question_id, "status": "success", **keys}


def test_items_whose_judge_gave_no_reply_are_evaluated_again(tmp_path: Path) -> None:
    records = [
        _record("kept", steps_score=1.0),
        _record("unjudged_failure", steps_score_error="internal error"),
        _record("judge_failed", answer_eval_error="generation call failed: 500 (3 attempts)"),
        _record(
            "judge_failed_on_a_step",
            actual_steps=[
                {"retrieval_answer_recall_error": "not computed: the cost limit of $1 was reached"}
            ],
        ),
        _record("malformed_reply", answer_eval_error="the judge's reply is not valid JSON"),
        _record("not_evaluated", status="error", evaluation_error=True),
    ]

    resumed = _resume(tmp_path, records)

    assert sorted(resumed.kept) == ["kept", "malformed_reply", "not_evaluated", "unjudged_failure"]
    assert resumed.redo == 2
    assert resumed.redo_causes == {"failed": 1, "budget": 1}
    assert resumed.kept["kept"] == records[0]
