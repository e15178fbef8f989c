"""The report's step view says where executed outputs came from (docs/knowledge-graph.md,
"Execution-based scoring"): the store, the rows and the time, or the execution's error."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from graphrag_eval.cli import main
from graphrag_eval.report.step_views import execution_line, mismatch_views

pytest.importorskip("pyoxigraph")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "knowledge-graph"


def test_the_question_page_names_the_store_the_outputs_were_executed_against(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = [
        "evaluate",
        str(EXAMPLE / "reference.yaml"),
        str(EXAMPLE / "responses.jsonl"),
        "--data",
        str(EXAMPLE / "graph.ttl"),
        "-o",
        str(out),
        "-q",
    ]
    assert main(args) == 0
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    wrong = next(record for record in records if record["steps_score"] == 0)
    source = wrong["actual_steps"][0]["execution"]["source"]
    [view] = [view for view in mismatch_views(wrong) if view.executions]
    assert view.executions[-1].startswith(f"actual output executed against {source}: ")
    assert main(["report", str(out), "--question", wrong["question_id"]]) == 0
    capsys.readouterr()
    page = html.unescape((out / f"question-{wrong['question_id']}.html").read_text())
    assert f"actual output executed against {source}: " in page


def test_an_execution_line_gives_rows_time_truncation_or_the_error() -> None:
    rows = {"execution": {"source": "s", "elapsed_s": 0.0123, "rows": 3, "truncated": True}}
    assert execution_line("actual", rows) == (
        "actual output executed against s: 3 rows in 0.0123 s, truncated at the row limit"
    )
    failed = {"execution": {"source": "s", "error": "<b>no</b>", "error_kind": "timeout"}}
    assert execution_line("reference", failed) == (
        "reference output executed against s: failed (timeout): <b>no</b>"
    )
    assert execution_line("actual", {"execution": "not a record"}) is None
    assert execution_line("actual", None) is None
