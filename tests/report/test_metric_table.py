"""The report's "Metrics over all questions" table counts failed and skipped questions as the
coverage table below it does, on a run made by the command line with a judge that fails on
one question, a response without an answer and an error response."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_eval.cli import main

from judge_server import MALFORMED_REPLY, JudgeServer, default_judge

BROKEN = "Q2 unreadable"  # the answer the judge cannot reply about


def failing_judge(body: dict[str, Any]) -> str:
    """The default judge, except that it never gives a usable reply about q2's answer."""
    if any(BROKEN in str(message.get("content")) for message in body.get("messages", ())):
        return MALFORMED_REPLY
    return default_judge(body)


def rows(page: str, start: str, end: str) -> dict[str, list[str]]:
    """The rows of the first table after ``start`` (before ``end``): first cell -> the
    others, as text."""
    section = page[page.index(start) : page.index(end, page.index(start))]
    table = section[section.index("<table") : section.index("</table>")]
    found = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S):
        texts = [
            " ".join(re.sub(r"<[^>]+>", "", cell).split())
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        if texts:
            found[texts[0]] = texts[1:]
    return found


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Five questions: two answered and judged, one the judge fails on, one without an
    answer (answer_correctness skipped) and one error response."""
    reference = [
        {
            "template_id": "t",
            "questions": [
                {"id": f"q{n}", "question_text": f"Q{n}?", "reference_answer": f"Q{n} one, two"}
                for n in range(1, 6)
            ],
        }
    ]
    responses = [
        {"question_id": "q1", "actual_answer": "Q1 one, two"},
        {"question_id": "q2", "actual_answer": BROKEN},
        {"question_id": "q3", "actual_answer": "Q3 one"},
        {"question_id": "q4", "actual_steps": []},
        {"question_id": "q5", "status": "error", "error": "the agent crashed"},
    ]
    (tmp_path / "reference.yaml").write_text(yaml.safe_dump(reference), encoding="utf-8")
    (tmp_path / "responses.jsonl").write_text(
        "".join(json.dumps(item) + "\n" for item in responses), encoding="utf-8"
    )
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GRAPHRAG_EVAL_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    with JudgeServer(responder=failing_judge) as server:
        config = {
            "metrics": ["answer_correctness"],
            "llm": {
                "generation": {
                    "provider": "openai-compatible",
                    "base_url": server.url,
                    "model": "gpt-4o-mini",
                },
                "cache": {"path": str(tmp_path / "cache.sqlite3")},
            },
        }
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        code = main(
            [
                "evaluate",
                str(tmp_path / "reference.yaml"),
                str(tmp_path / "responses.jsonl"),
                "-c",
                str(tmp_path / "config.yaml"),
                "-o",
                str(tmp_path / "out"),
                "-q",
            ]
        )
    assert code == 0  # one failed value of four attempted: not an incomplete run
    return tmp_path / "out"


def test_failed_and_skipped_are_the_coverage_counts(run: Path) -> None:
    page = (run / "report.html").read_text(encoding="utf-8")
    metrics = rows(page, 'id="metrics"', 'id="charts"')
    coverage = rows(page, "<h3>Coverage</h3>", 'id="charts"')
    # columns: mean, median, min, max, macro mean, scored / total, failed, skipped
    f1 = metrics["answer_f1"]
    assert f1[5] == "2 / 5"
    assert f1[6] == "1"  # q2: the judge failed
    # q4 (no answer) and q5 (an error response): the commonest reason of the two comes first
    assert re.fullmatch(r"2 \((needs .*|error or missing response)\)", f1[7])
    assert coverage["answer_f1"] == ["2", "1", "2"]
    for name, (scored, failed, skipped) in coverage.items():
        row = metrics[name]
        assert row[5] == f"{scored} / 5", name
        assert row[6] == failed, name
        assert row[7].split(" ")[0] == skipped, name
    # Tokens and seconds: 0 failed is written, not left blank.
    assert metrics["elapsed_sec"][6] == "0"
    # The per-template table (no macro mean) counts the same.
    template = rows(page, "<summary>t ", "</details>")
    assert template["answer_f1"][4:6] == ["2 / 5", "1"]
    assert template["answer_f1"][6] == f1[7]


def test_skips_without_a_recorded_reason_are_not_given_a_minority_reason(
    tmp_path: Path,
) -> None:
    """Retrieval metrics (on steps) record no reason on a question without a retrieval step:
    three questions skipped that way and one error response show "no step it applies to",
    not "error or missing response" for all four."""
    output = json.dumps([{"id": "doc:1", "text": "Transformer T1 is in Oslo."}])
    step = {"name": "retrieval", "args": {"query": "T1", "k": 1}, "output": output}
    reference = [
        {
            "template_id": "t",
            "questions": [
                {"id": f"q{n}", "question_text": f"Q{n}?", "reference_steps": [[step]]}
                for n in range(1, 6)
            ],
        }
    ]
    responses = [
        {"question_id": "q1", "actual_steps": [{**step, "status": "success"}]},
        *({"question_id": f"q{n}", "actual_steps": []} for n in (2, 3, 4)),
        {"question_id": "q5", "status": "error", "error": "the agent crashed"},
    ]
    (tmp_path / "reference.yaml").write_text(yaml.safe_dump(reference), encoding="utf-8")
    (tmp_path / "responses.jsonl").write_text(
        "".join(json.dumps(item) + "\n" for item in responses), encoding="utf-8"
    )
    out = tmp_path / "out"
    arguments = [str(tmp_path / "reference.yaml"), str(tmp_path / "responses.jsonl")]
    assert main(["evaluate", *arguments, "-o", str(out), "-q"]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    metrics = rows(page, 'id="metrics"', 'id="charts"')
    assert metrics["retrieval_context_recall"][5:] == ["1 / 5", "0", "4 (no step it applies to)"]
    assert metrics["steps_score"][7] == "1 (error or missing response)"
    template = rows(page, "<summary>t ", "</details>")
    assert template["retrieval_context_recall"][6] == "4 (no step it applies to)"
