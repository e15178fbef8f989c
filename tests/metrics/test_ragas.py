"""The RAGAS components (docs/metrics.md): faithfulness, context precision and context recall,
where their contexts come from, and malformed or out-of-range verdicts, against the scripted
judge. ``ragas_answer_relevance`` and ``ragas_score`` are in test_ragas_score.py."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pytest

from graphrag_eval.llm.prompts import prompt
from metrics.scripted_judge import (
    ScriptedJudge,
    answering,
    judge_config,
    run_scripted,
    schema_of,
    selecting,
    task,
)

from builders import contexts, dataset, question, response, sparql, step

QUESTION = "Which transformers are in substation Oslo?"
REFERENCE = "OSLO T1, OSLO T2"

RAGAS = (
    "ragas_faithfulness",
    "ragas_context_precision",
    "ragas_context_recall",
    "ragas_answer_relevance",
)
NEW_METRIC_PREFIXES = ("ragas_", "factual_accuracy", "answer_classification")
MALFORMED = "malformed judge reply (after one re-ask): "


def run_one(
    judge: ScriptedJudge,
    config: dict[str, Any],
    answer: str | None = "OSLO T1 and OSLO T2",
    *,
    reference_answer: str | None = REFERENCE,
    retrieved: Sequence[Any] | None = None,
    steps: Sequence[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The result of one question and its response, judged by ``judge``."""
    fields: dict[str, Any] = {}
    if answer is not None:
        fields["actual_answer"] = answer
    if retrieved is not None:
        fields["retrieved_contexts"] = list(retrieved)
    reference = dataset(question("q1", answer=reference_answer, text=QUESTION))
    [result] = run_scripted(judge, reference, [response("q1", steps, **fields)], config)
    return result


def new_metric_keys(result: dict[str, Any]) -> list[str]:
    return [key for key in result if key.startswith(NEW_METRIC_PREFIXES)]


# --------------------------------------------------------------------- ragas_faithfulness

OSLO_CONTEXTS = ["Transformer OSLO T1 is in substation Oslo.", "The weather is sunny."]


def test_faithfulness_is_the_share_of_claims_the_contexts_support() -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "ragas_faithfulness")

    result = run_one(judge, config, "OSLO T1 and OSLO T3", retrieved=OSLO_CONTEXTS)

    assert result["ragas_faithfulness"] == pytest.approx(50.0)
    assert result["ragas_faithfulness_reason"] == (
        "[supported] OSLO T1: in the contexts\n[not supported] OSLO T3: not in the contexts"
    )
    assert result["ragas_faithfulness_cost"] > 0
    assert "ragas_faithfulness_error" not in result
    assert [schema_of(body) for body in judge.chats()] == ["ClaimList", "ClaimVerdicts"]


def test_faithfulness_verification_prompt_numbers_contexts_and_claims() -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "ragas_faithfulness")

    run_one(judge, config, "OSLO T1 and OSLO T3", retrieved=OSLO_CONTEXTS)

    [claims] = judge.chats("ClaimList")
    assert task(claims) == prompt("ragas_claims").format(
        question=QUESTION, answer="OSLO T1 and OSLO T3"
    )
    [verdicts] = judge.chats("ClaimVerdicts")
    assert task(verdicts) == prompt("ragas_faithfulness").format(
        contexts=f"[1] {OSLO_CONTEXTS[0]}\n\n[2] {OSLO_CONTEXTS[1]}",
        claims="1. OSLO T1\n2. OSLO T3",
    )


def test_all_claims_supported_is_fully_faithful() -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "ragas_faithfulness")

    result = run_one(judge, config, "OSLO T1", retrieved=OSLO_CONTEXTS)

    assert result["ragas_faithfulness"] == pytest.approx(100.0)


def test_answer_without_claims_is_fully_faithful_after_one_call() -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "ragas_faithfulness")

    result = run_one(judge, config, "I don't know.", retrieved=OSLO_CONTEXTS)

    assert result["ragas_faithfulness"] == pytest.approx(100.0)
    assert result["ragas_faithfulness_reason"] == "the answer makes no claims"
    assert [schema_of(body) for body in judge.chats()] == ["ClaimList"]


def test_blank_claims_count_as_no_claims() -> None:
    judge = answering(ClaimList={"claims": ["  ", ""]})
    config = selecting(judge_config(), "ragas_faithfulness")

    result = run_one(judge, config, "OSLO T1", retrieved=OSLO_CONTEXTS)

    assert result["ragas_faithfulness"] == pytest.approx(100.0)
    assert judge.count() == 1


def test_faithfulness_with_empty_retrieved_contexts_is_zero_after_one_call() -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "ragas_faithfulness")

    result = run_one(judge, config, "OSLO T1 and OSLO T3", retrieved=[])

    assert result["ragas_faithfulness"] == pytest.approx(0.0)
    assert result["ragas_faithfulness_reason"] == (
        "[not supported] OSLO T1\n[not supported] OSLO T3\n(no contexts were retrieved)"
    )
    assert [schema_of(body) for body in judge.chats()] == ["ClaimList"]


def test_retrieval_step_that_returned_nothing_makes_faithfulness_zero() -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "ragas_faithfulness")

    result = run_one(judge, config, "OSLO T1", steps=[step("retrieval", "[]")])

    assert result["ragas_faithfulness"] == pytest.approx(0.0)
    assert judge.count() == 1


@pytest.mark.parametrize(
    "steps",
    [
        None,
        [step("sparql_query", sparql(["t"], [["OSLO T1"]]))],
    ],
    ids=["no-steps", "no-retrieval-step"],
)
def test_context_metrics_are_skipped_without_any_contexts(
    steps: list[dict[str, Any]] | None,
) -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), *RAGAS[:3])

    result = run_one(judge, config, "OSLO T1", steps=steps)

    assert new_metric_keys(result) == []
    assert judge.count() == 0


def test_failed_retrieval_scores_zero_on_the_context_metrics() -> None:
    judge = ScriptedJudge()
    failed = step("retrieval", contexts(("1", "OSLO T1")), status="error", error="timeout")
    config = selecting(judge_config(), *RAGAS[:3])

    result = run_one(judge, config, "OSLO T1", steps=[failed])

    assert [result[name] for name in RAGAS[:3]] == pytest.approx([0.0, 0.0, 0.0])
    assert sorted(schema_of(body) for body in judge.chats()) == ["ClaimList", "StatementList"]


def test_faithfulness_example_of_the_docs() -> None:
    claims = [
        "OSLO T1 is in Substation OSLO",
        "OSLO T2 is in Substation OSLO",
        "OSLO T3 is in Bergen",
    ]
    judge = answering(ClaimList={"claims": claims})
    config = selecting(judge_config(), "ragas_faithfulness")
    answer = "OSLO T1 and OSLO T2 are in Substation OSLO; OSLO T3 is in Bergen."
    retrieved = ["OSLO T1 is in Substation OSLO.", "OSLO T2 is in Substation OSLO too."]

    result = run_one(judge, config, answer, retrieved=retrieved)

    assert round(result["ragas_faithfulness"], 2) == pytest.approx(66.67)


# ---------------------------------------------------------------- ragas_context_precision


def test_context_precision_is_the_share_of_relevant_contexts() -> None:
    judge = ScriptedJudge()
    texts = ["Transformer OSLO T1 is in Oslo.", "The weather is sunny.", "OSLO T2 is new."]
    config = selecting(judge_config(), "ragas_context_precision")

    result = run_one(judge, config, retrieved=texts)

    assert result["ragas_context_precision"] == pytest.approx(200 / 3)
    assert result["ragas_context_precision_reason"] == (
        "[1] relevant (90): states the answer\n"
        "[2] not relevant (10): does not state the answer\n"
        "[3] relevant (90): states the answer"
    )
    assert result["ragas_context_precision_cost"] > 0
    [body] = judge.chats()
    assert task(body) == prompt("ragas_context_precision").format(
        question=QUESTION,
        reference_answer=REFERENCE,
        contexts="\n\n".join(f"[{rank}] {text}" for rank, text in enumerate(texts, start=1)),
    )


@pytest.mark.parametrize(
    "texts",
    [["OSLO T1 is here.", "Sunny."], ["Sunny.", "OSLO T1 is here."]],
    ids=["relevant-first", "relevant-last"],
)
def test_context_precision_does_not_depend_on_rank(texts: list[str]) -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "ragas_context_precision")

    result = run_one(judge, config, retrieved=texts)

    assert result["ragas_context_precision"] == pytest.approx(50.0)


def test_context_precision_example_of_the_reference() -> None:
    """16 contexts for the Erica vagans question, of which 2 and 7 name the Cornish heath."""
    judge = ScriptedJudge()
    texts = [f"Passage {rank} about Cornwall and its coast." for rank in range(1, 17)]
    texts[1] = "The erica vagans, the lovely Cornish heath, grows nowhere else."
    texts[6] = "Again the erica vagans, the lovely Cornish heath."
    config = selecting(judge_config(), "ragas_context_precision")

    result = run_one(
        judge, config, "Cornish heath", reference_answer="Cornish heath", retrieved=texts
    )

    assert result["ragas_context_precision"] == pytest.approx(12.5)
    reasons = result["ragas_context_precision_reason"].splitlines()
    assert [line.split("]")[0] for line in reasons if "] relevant" in line] == ["[2", "[7"]


def test_context_precision_of_empty_contexts_is_zero_without_a_call() -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "ragas_context_precision")

    result = run_one(judge, config, retrieved=[])

    assert result["ragas_context_precision"] == pytest.approx(0.0)
    assert result["ragas_context_precision_reason"] == "no contexts were retrieved"
    assert result["ragas_context_precision_cost"] == pytest.approx(0.0)
    assert judge.count() == 0


def test_context_precision_without_a_reference_answer_says_so_in_the_prompt() -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "ragas_context_precision")

    result = run_one(judge, config, retrieved=["OSLO T1 is here."], reference_answer=None)

    assert "ragas_context_precision" in result
    assert "Reference answer: (not given)" in task(judge.chats()[0])


# ------------------------------------------------------------------- ragas_context_recall


def test_context_recall_is_the_share_of_attributed_statements() -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "ragas_context_recall")

    result = run_one(judge, config, retrieved=OSLO_CONTEXTS)

    assert result["ragas_context_recall"] == pytest.approx(50.0)
    assert result["ragas_context_recall_reason"] == (
        "[attributed] OSLO T1: in the contexts\n[not attributed] OSLO T2: not in the contexts"
    )
    assert result["ragas_context_recall_cost"] > 0
    [statements] = judge.chats("StatementList")
    assert task(statements) == prompt("ragas_statements").format(
        question=QUESTION, reference_answer=REFERENCE
    )
    [attribution] = judge.chats("StatementVerdicts")
    assert task(attribution) == prompt("ragas_attribution").format(
        contexts=f"[1] {OSLO_CONTEXTS[0]}\n\n[2] {OSLO_CONTEXTS[1]}",
        statements="1. OSLO T1\n2. OSLO T2",
    )


def test_reference_without_statements_has_full_recall_after_one_call() -> None:
    judge = answering(StatementList={"statements": []})
    config = selecting(judge_config(), "ragas_context_recall")

    result = run_one(judge, config, retrieved=OSLO_CONTEXTS)

    assert result["ragas_context_recall"] == pytest.approx(100.0)
    assert result["ragas_context_recall_reason"] == "the reference answer has no statements"
    assert judge.count() == 1


def test_context_recall_with_empty_contexts_is_zero_after_the_statements_call() -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "ragas_context_recall")

    result = run_one(judge, config, retrieved=[])

    assert result["ragas_context_recall"] == pytest.approx(0.0)
    assert result["ragas_context_recall_reason"].endswith("(no contexts were retrieved)")
    assert [schema_of(body) for body in judge.chats()] == ["StatementList"]


def test_context_recall_is_skipped_without_a_reference_answer() -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "ragas_context_recall")

    result = run_one(judge, config, retrieved=OSLO_CONTEXTS, reference_answer=None)

    assert new_metric_keys(result) == []
    assert judge.count() == 0


def test_a_blank_answer_is_fully_faithful_and_a_blank_reference_is_not_sent() -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "ragas_faithfulness", "ragas_context_recall")

    blank_answer = run_one(judge, config, "  ", retrieved=OSLO_CONTEXTS)
    blank_reference = run_one(judge, config, retrieved=OSLO_CONTEXTS, reference_answer=" \n")

    assert blank_answer["ragas_faithfulness"] == 100.0
    assert blank_answer["ragas_faithfulness_reason"] == "the answer is blank: it makes no claims"
    assert blank_answer["ragas_faithfulness_cost"] == 0.0
    assert blank_reference["ragas_context_recall_error"] == (
        "reference_answer is blank; not sent to the judge"
    )
    assert "ragas_context_recall" not in blank_reference
    # Each text is sent only in the run where it is not blank.
    assert sorted(schema_of(body) for body in judge.chats()) == [
        "ClaimList",
        "ClaimVerdicts",
        "StatementList",
        "StatementVerdicts",
    ]


# ------------------------------------------------------------------- where contexts come from


def test_contexts_come_from_successful_retrieval_steps_in_order() -> None:
    judge = ScriptedJudge()
    steps = [
        step("retrieval", contexts(("a", "First OSLO T1."), (None, "Second.")), step_id="r1"),
        step("retrieval", contexts(("x", "Not this one.")), status="error", error="timeout"),
        step("sparql_query", sparql(["t"], [["OSLO T9"]])),
        step("retrieval", contexts(("c", "Third OSLO T2.")), step_id="r2"),
    ]
    config = selecting(judge_config(), "ragas_faithfulness")

    result = run_one(judge, config, "OSLO T1 and OSLO T2", steps=steps)

    assert result["ragas_faithfulness"] == pytest.approx(100.0)
    [body] = judge.chats("ClaimVerdicts")
    assert "Contexts:\n[1] First OSLO T1.\n\n[2] Second.\n\n[3] Third OSLO T2.\n\n" in task(body)


def test_retrieved_contexts_take_precedence_over_retrieval_steps() -> None:
    judge = ScriptedJudge()
    steps = [step("retrieval", contexts(("a", "OSLO T1 and OSLO T2 are here.")))]
    config = selecting(judge_config(), "ragas_context_precision")

    result = run_one(judge, config, retrieved=["Sunny.", "Rain."], steps=steps)

    assert result["ragas_context_precision"] == pytest.approx(0.0)
    assert "Contexts:\n[1] Sunny.\n\n[2] Rain.\n\n" in task(judge.chats()[0])


def test_retrieved_contexts_may_be_objects_with_text() -> None:
    judge = ScriptedJudge()
    retrieved = [{"id": "d1", "text": "OSLO T1 is here."}, {"id": "d2"}, "  ", "OSLO T2 too."]
    config = selecting(judge_config(), "ragas_context_precision")

    result = run_one(judge, config, retrieved=retrieved)

    assert result["ragas_context_precision"] == pytest.approx(100.0)
    assert "Contexts:\n[1] OSLO T1 is here.\n\n[2] OSLO T2 too.\n\n" in task(judge.chats()[0])


# ------------------------------------------------------------- malformed and out-of-range


def relevances(*verdicts: tuple[int, bool, float]) -> dict[str, Any]:
    return {
        "contexts": [
            {"context": number, "relevant": relevant, "score": score, "reason": "r"}
            for number, relevant, score in verdicts
        ]
    }


@pytest.mark.parametrize(
    ("reply", "score", "chats"),
    [
        # Context 2's entry is unusable: asked again alone, the same reply has nothing for
        # it (after its re-ask), so the score is over context 1.
        (relevances((1, True, 90), (2, False, -5)), 100.0, 3),
        (relevances((2, True, 90), (1, False, 10)), 50.0, 1),  # out of order: matched
        (relevances((1, True, 90), (3, False, 10)), 100.0, 3),  # 3 was not asked
        (relevances((1, True, 90)), 100.0, 3),
        (relevances((1, True, 90), (2, False, 10), (3, False, 10)), 50.0, 1),
        (relevances((1, False, 10), (2, False, 10), (1, True, 90)), 0.0, 1),  # first wins
    ],
    ids=["negative-score", "swapped", "unasked-number", "too-few", "too-many", "duplicate"],
)
def test_context_precision_verdicts_are_matched_by_the_context_they_name(
    reply: dict[str, Any], score: float, chats: int
) -> None:
    judge = answering(ContextRelevances=reply)
    config = selecting(judge_config(), "ragas_context_precision", "ragas_context_recall")

    result = run_one(judge, config, retrieved=OSLO_CONTEXTS)

    assert "ragas_context_precision_error" not in result
    assert result["ragas_context_precision"] == pytest.approx(score)
    judged_all = chats == 1
    assert result["ragas_context_precision_reason"].endswith("1 of 2 contexts judged") is (
        not judged_all
    )
    assert len(judge.chats("ContextRelevances")) == chats
    assert result["ragas_context_recall"] == pytest.approx(50.0)  # the other metric is still scored


def test_the_follow_up_lists_only_the_items_without_a_verdict() -> None:
    def first_claim_only(body: dict[str, Any]) -> dict[str, Any]:
        numbers = [int(n) for n in re.findall(r"^(\d+)\. ", task(body), re.M)]
        return {"verdicts": [{"claim": numbers[0], "supported": True, "reason": "yes"}]}

    judge = answering(ClaimVerdicts=first_claim_only)
    config = selecting(judge_config(), "ragas_faithfulness")

    result = run_one(judge, config, "OSLO T1, OSLO T2 and OSLO T3", retrieved=OSLO_CONTEXTS)

    first, again = judge.chats("ClaimVerdicts")
    assert "1. OSLO T1\n2. OSLO T2\n3. OSLO T3" in task(first)
    assert "Claims:\n2. OSLO T2\n3. OSLO T3\n\n" in task(again)
    assert result["ragas_faithfulness"] == pytest.approx(100.0)
    assert result["ragas_faithfulness_reason"].splitlines() == [
        "[supported] OSLO T1: yes",
        "[supported] OSLO T2: yes",
        "[not judged] OSLO T3",
        "2 of 3 claims judged",
    ]
    assert len(judge.chats()) == 3  # the claims, the verdicts, one follow-up


def test_faithfulness_without_any_usable_verdict_is_an_error_and_others_still_score() -> None:
    reply = {"verdicts": [{"claim": 7, "supported": True, "reason": "yes"}]}
    judge = answering(ClaimVerdicts=reply)
    config = selecting(judge_config(), "ragas_score")

    result = run_one(judge, config, "OSLO T1 and OSLO T3", retrieved=OSLO_CONTEXTS)

    assert result["ragas_faithfulness_error"] == MALFORMED + (
        "no usable verdict for the claims asked (1, 2), each naming its claim in 'claim'"
    )
    assert "ragas_faithfulness" not in result
    assert len(judge.chats("ClaimVerdicts")) == 2  # the call and its re-ask; no follow-up
    for name in RAGAS[1:]:
        assert isinstance(result[name], float)
    # ragas_score is renormalised over the three components that were computed.
    assert result["ragas_score"] == pytest.approx(
        (
            0.2 * result["ragas_context_precision"]
            + 0.2 * result["ragas_context_recall"]
            + 0.3 * result["ragas_answer_relevance"]
        )
        / 0.7
    )


def test_attribution_verdicts_out_of_order_are_used() -> None:
    reply = {
        "verdicts": [
            {"statement": 2, "attributed": False, "reason": "r2"},
            {"statement": 1, "attributed": True, "reason": "r1"},
        ]
    }
    judge = answering(StatementVerdicts=reply)
    config = selecting(judge_config(), "ragas_context_recall")

    result = run_one(judge, config, retrieved=OSLO_CONTEXTS)

    assert result["ragas_context_recall"] == pytest.approx(50.0)
    assert result["ragas_context_recall_reason"].splitlines() == [
        "[attributed] OSLO T1: r1",
        "[not attributed] OSLO T2: r2",
    ]


def test_claim_extraction_that_is_not_json_is_an_error() -> None:
    judge = answering(ClaimList="OSLO T1 is a claim, I think.")
    config = selecting(judge_config(), "ragas_faithfulness")

    result = run_one(judge, config, retrieved=OSLO_CONTEXTS)

    assert result["ragas_faithfulness_error"] == MALFORMED + "the reply is not a JSON object"
    assert len(judge.chats()) == 2  # no verification call after a failed extraction
