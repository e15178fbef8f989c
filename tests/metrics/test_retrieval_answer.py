"""Retrieval answer (docs/metrics.md): recall and precision of the retrieved contexts against the
reference answer, malformed verdicts, and the steps it skips, against the scripted judge."""

from __future__ import annotations

import json
from typing import Any

import pytest

from metrics.scripted_judge import (
    ScriptedJudge,
    judge_config,
    llm_keys,
    only,
    replying,
    run_scripted,
    task,
)

from builders import contexts, dataset, question, response, step

QUESTION = "Which transformers are in substation Oslo?"
RECALL = "can be attributed to the contexts"
PRECISION = "was useful in arriving at the reference answer"


def retrieval_item(
    texts: list[str], reference_answer: str | None = "OSLO T1, OSLO T2"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    output = contexts(*((str(rank), text) for rank, text in enumerate(texts, start=1)))
    return (
        dataset(question("q1", answer=reference_answer, text=QUESTION)),
        [response("q1", [step("retrieval", output, step_id="r1", args={"query": "oslo"})])],
    )


def test_retrieval_answer_recall_precision_and_f1() -> None:
    judge = ScriptedJudge()
    reference, responses = retrieval_item(["Transformer OSLO T1 is in Substation Oslo.", "Sunny."])

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "retrieval_answer"))

    [scored] = result["actual_steps"]
    assert scored["retrieval_answer_recall"] == pytest.approx(0.5)  # OSLO T1 of OSLO T1, OSLO T2
    assert scored["retrieval_answer_recall_reason"] == "1 of 2 statements are in the contexts"
    assert scored["retrieval_answer_precision"] == pytest.approx(
        1.0
    )  # the useful context ranks first
    assert scored["retrieval_answer_precision_reason"] == (
        "[1] useful: states a reference claim\n[2] not useful: states no reference claim"
    )
    assert scored["retrieval_answer_f1"] == pytest.approx(2 / 3)
    assert scored["retrieval_answer_f1_cost"] == pytest.approx(
        scored["retrieval_answer_recall_cost"] + scored["retrieval_answer_precision_cost"]
    )
    assert scored["retrieval_answer_recall_cost"] > 0
    assert scored["retrieval_answer_precision_cost"] > 0


def test_retrieval_answer_precision_is_average_precision_over_ranks() -> None:
    judge = ScriptedJudge()
    reference, responses = retrieval_item(
        ["Sunny.", "Transformer OSLO T1.", "Rain.", "Transformer OSLO T2."]
    )

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "retrieval_answer"))

    [scored] = result["actual_steps"]
    assert scored["retrieval_answer_precision"] == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert scored["retrieval_answer_recall"] == pytest.approx(1.0)


def test_retrieval_answer_with_no_useful_context_scores_zero() -> None:
    judge = ScriptedJudge()
    reference, responses = retrieval_item(["Sunny.", "Rain."])

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "retrieval_answer"))

    [scored] = result["actual_steps"]
    assert scored["retrieval_answer_recall"] == pytest.approx(0.0)
    assert scored["retrieval_answer_precision"] == pytest.approx(0.0)
    assert scored["retrieval_answer_f1"] == pytest.approx(0.0)


def test_retrieval_answer_prompts_number_the_contexts_in_rank_order() -> None:
    judge = ScriptedJudge()
    reference, responses = retrieval_item(["  First text. ", "Second text."])

    run_scripted(judge, reference, responses, only(judge_config(), "retrieval_answer"))

    for marker in (RECALL, PRECISION):
        [body] = judge.chats(containing=marker)
        assert "Contexts:\n[1] First text.\n\n[2] Second text.\n" in task(body)
        assert "Reference answer: OSLO T1, OSLO T2" in task(body)


def test_failed_precision_call_keeps_recall_and_drops_f1() -> None:
    judge = ScriptedJudge(responder=replying(PRECISION, "Both contexts look fine to me."))
    reference, responses = retrieval_item(["Transformer OSLO T1 is in Substation Oslo.", "Sunny."])

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "retrieval_answer"))

    [scored] = result["actual_steps"]
    assert scored["retrieval_answer_recall"] == pytest.approx(0.5)
    assert scored["retrieval_answer_precision_error"] == (
        "malformed judge reply (after one re-ask): the reply is not a JSON object"
    )
    assert "retrieval_answer_recall_error" not in scored
    assert result["failure_kinds"] == {"retrieval_answer": "reply"}  # asking again repeats it
    for absent in (
        "retrieval_answer_precision",
        "retrieval_answer_precision_cost",
        "retrieval_answer_f1",
        "retrieval_answer_f1_cost",
    ):
        assert absent not in scored
    assert len(judge.chats(containing=PRECISION)) == 2


def test_precision_over_the_contexts_judged_when_one_never_gets_a_verdict() -> None:
    contexts = ["Sunny.", "Transformer OSLO T1.", "Rain."]
    reference, responses = retrieval_item(contexts)

    def answered(body: dict[str, Any]) -> str | None:
        text = task(body)
        if PRECISION not in text:
            return None
        # The first call: contexts 3 and 1, out of order; the follow-up lists only context
        # 2: a verdict for it and one for a context not asked.
        first = "[1] Sunny." in text
        verdicts = [(3, False), (1, False)] if first else [(2, True), (4, True)]
        return json.dumps(
            {"verdicts": [{"context": n, "useful": u, "reason": f"r{n}"} for n, u in verdicts]}
        )

    judge = ScriptedJudge(responder=answered)
    [result] = run_scripted(judge, reference, responses, only(judge_config(), "retrieval_answer"))

    [scored] = result["actual_steps"]
    assert scored["retrieval_answer_precision"] == pytest.approx(0.5)  # useful at rank 2
    assert scored["retrieval_answer_precision_reason"].splitlines() == [
        "[1] not useful: r1",
        "[2] useful: r2",
        "[3] not useful: r3",
    ]
    follow_up = judge.chats(containing=PRECISION)[1]
    assert "Contexts:\n[2] Transformer OSLO T1.\n\n" in task(follow_up)
    assert "Sunny." not in task(follow_up)


def test_precision_when_a_context_stays_without_a_verdict_says_so() -> None:
    reply = json.dumps({"verdicts": [{"context": 1, "useful": True, "reason": "yes"}]})
    judge = ScriptedJudge(responder=replying(PRECISION, reply))
    reference, responses = retrieval_item(["Transformer OSLO T1.", "Sunny."])

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "retrieval_answer"))

    [scored] = result["actual_steps"]
    assert "retrieval_answer_precision_error" not in scored
    assert scored["retrieval_answer_precision"] == pytest.approx(1.0)
    assert scored["retrieval_answer_precision_reason"].splitlines() == [
        "[1] useful: yes",
        "1 of 2 contexts judged",
    ]


def test_recall_reply_without_statements_is_malformed() -> None:
    judge = ScriptedJudge(responder=replying(RECALL, '{"statements": [], "reason": "none"}'))
    reference, responses = retrieval_item(["Transformer OSLO T1."])

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "retrieval_answer"))

    [scored] = result["actual_steps"]
    assert scored["retrieval_answer_recall_error"] == (
        "malformed judge reply (after one re-ask): the reference answer has at least one "
        "statement; none was listed"
    )
    assert scored["retrieval_answer_precision"] == pytest.approx(1.0)


def test_retrieval_answer_is_absent_without_a_reference_answer() -> None:
    judge = ScriptedJudge()
    reference, responses = retrieval_item(["Transformer OSLO T1."], reference_answer=None)

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "retrieval_answer"))

    assert llm_keys(result) == []
    assert judge.count() == 0


def test_retrieval_answer_skips_contexts_without_texts() -> None:
    judge = ScriptedJudge()
    reference = dataset(question("q1", answer="OSLO T1", text=QUESTION))
    responses = [response("q1", [step("retrieval", contexts(("1", None), ("2", None)))])]

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "retrieval_answer"))

    assert llm_keys(result) == []
    assert judge.count() == 0


def test_retrieval_answer_skips_failed_retrieval_steps() -> None:
    judge = ScriptedJudge()
    reference = dataset(question("q1", answer="OSLO T1", text=QUESTION))
    failed = step("retrieval", contexts(("1", "OSLO T1")), status="error", error="timeout")
    responses = [response("q1", [failed])]

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "retrieval_answer"))

    assert llm_keys(result) == []
    assert judge.count() == 0


def test_unreadable_retrieval_output_is_an_error_of_both_calls() -> None:
    judge = ScriptedJudge()
    reference = dataset(question("q1", answer="OSLO T1", text=QUESTION))
    responses = [response("q1", [step("retrieval", "no contexts here")])]

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "retrieval_answer"))

    [scored] = result["actual_steps"]
    message = "the step's output is not a list of contexts: not a JSON list of contexts"
    assert scored["retrieval_answer_recall_error"] == message
    assert scored["retrieval_answer_precision_error"] == message
    assert judge.count() == 0
