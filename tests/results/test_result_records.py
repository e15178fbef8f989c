"""Results of runs with the LLM judge (the HTTP test server, through the real client) read
back into typed results and write the same records: judged scores with reasons and costs,
failed and partly failed metrics, custom evaluations and skipped metrics."""

from __future__ import annotations

import copy
import datetime
import json
from collections.abc import Callable
from typing import Any

import pytest

from graphrag_eval import compute_aggregates, run_evaluation
from graphrag_eval.metrics.base import Failed, Scored
from graphrag_eval.results.from_records import layout_for, read_records
from graphrag_eval.results.model import OutcomeKey
from graphrag_eval.results.to_records import copy_tree, to_records

from builders import contexts, dataset, question, response, step
from judge_server import JudgeServer

QUESTION = "Which transformers are in substation OSLO?"
REVIEW = {
    "name": "review",
    "inputs": ["reference_answer", "actual_answer"],
    "instructions": "Review the answer.",
    "outputs": {"review_score": "1-5", "review_comment": "one sentence"},
}


def task(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def responder(body: dict[str, Any]) -> str | None:
    """Nonsense for the question about "Broken" (its judged metrics fail), a review for the
    custom evaluation, the rule judge for the rest."""
    text = task(body)
    if "Broken" in text:
        return "nonsense"
    if "separated by tab characters" in text:
        return '4\t"fine"'
    return None


REFERENCE = dataset(
    question("q1", answer="OSLO T1", text=QUESTION),
    question("q2", answer="Broken", text=QUESTION),
    question("q3", text=QUESTION),
    question("q4", answer="OSLO T1", text=QUESTION),
)
RESPONSES = [
    response(
        "q1",
        [step("retrieval", contexts(("c1", "OSLO T1")), "r1")],
        actual_answer="OSLO T1",
    ),
    response("q2", actual_answer="OSLO T1"),
    response("q3", actual_answer="OSLO T1"),
    response("q4", error="the agent failed"),
]


@pytest.mark.parametrize(
    "sections",
    [
        {},
        {"retrieval_answer": {"enabled": True}, "aggregation": {"error_samples": "zero"}},
    ],
    ids=["answer-metrics", "retrieval-zero"],
)
def test_judged_results_read_back_and_write_the_same(
    judge: Callable[..., JudgeServer],
    make_config: Callable[..., dict[str, Any]],
    sections: dict[str, Any],
) -> None:
    server = judge(responder=responder)
    config = {**make_config(server), **sections, "custom_evaluations": [REVIEW]}

    records = run_evaluation(REFERENCE, RESPONSES, config)
    typed = read_records(records, layout_for(config))

    assert json.dumps(to_records(typed)) == json.dumps(records)
    q1, q2, q3, _ = typed.results
    assert isinstance(q1.outcomes[OutcomeKey("review")], Scored)
    assert q1.values()["review_comment"] == "fine"
    assert isinstance(q2.outcomes[OutcomeKey("answer_correctness")], Failed)
    assert "answer_correctness" in q3.skipped()
    assert compute_aggregates(to_records(typed), config) == compute_aggregates(records, config)


def test_copy_tree_copies_a_decoded_document_as_deepcopy_does() -> None:
    original = {
        "name": "sparql_query",
        "args": {"query": "SELECT *", "limit": 5, "ratio": 0.5, "flag": True, "none": None},
        "rows": [[1, "a"], {"nested": [{"deep": "x"}]}],
        "when": datetime.date(2026, 11, 26),
        "tags": {"a", "b"},
    }
    copied = copy_tree(original)
    assert copied == copy.deepcopy(original)
    copied["args"]["limit"] = 6
    copied["rows"][1]["nested"][0]["deep"] = "y"
    copied["tags"].add("c")
    assert original["args"]["limit"] == 5
    assert original["rows"][1]["nested"][0]["deep"] == "x"
    assert original["tags"] == {"a", "b"}
