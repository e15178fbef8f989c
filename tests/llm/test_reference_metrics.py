"""The metrics of the metrics reference (docs/metrics.md) against the judge server: the four RAGAS
components and ``ragas_score``; malformed and out-of-range judge replies; the reference's worked
examples; ``metrics:`` selection; and the label aggregates (answer classes, grades). The unit
tests of factual accuracy and answer classification are in tests/metrics/, on the scripted
judge."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from graphrag_eval import ConfigError, compute_aggregates, load_config, run_evaluation
from graphrag_eval.llm.prompts import prompt
from graphrag_eval.metrics.base import metrics_for, registered_metrics
from graphrag_eval.metrics.ragas import ragas_score

from builders import contexts, dataset, question, response, sparql, sparql_ref, step
from judge_server import Faults, JudgeServer, embed_text

Config = dict[str, Any]
Body = dict[str, Any]
StartJudge = Callable[..., JudgeServer]
MakeConfig = Callable[..., Config]

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


# ------------------------------------------------------------------------------ helpers


def task(body: Body) -> str:
    """The first user message of a chat request (the prompt, without any re-ask)."""
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def schema_of(body: Body) -> str | None:
    """The structured-output schema a chat request asks for."""
    return ((body.get("response_format") or {}).get("json_schema") or {}).get("name")


def chats(server: JudgeServer, schema: str | None = None) -> list[Body]:
    """The chat request bodies, optionally only those asking for ``schema``."""
    return [
        r.body
        for r in server.requests
        if r.path.endswith("chat/completions") and (schema is None or schema_of(r.body) == schema)
    ]


Reply = str | dict[str, Any] | Callable[[Body], str | dict[str, Any] | None]


def answering(**replies: Reply) -> Callable[[Body], str | None]:
    """A responder that answers requests for the schemas named (``ClaimVerdicts=...``) with
    the given reply (text, a JSON-able dict, or a function of the request body); the rule
    judge answers everything else."""

    def respond(body: Body) -> str | None:
        reply = replies.get(schema_of(body) or "")
        if callable(reply):
            reply = reply(body)
        if reply is None or isinstance(reply, str):
            return reply
        return json.dumps(reply)

    return respond


def selecting(config: Config, *metrics: str, **sections: Any) -> Config:
    """``config`` running only ``metrics`` (with ``sections`` added to it)."""
    return {**config, "metrics": list(metrics), **sections}


def item(
    answer: str | None = "OSLO T1 and OSLO T2",
    *,
    reference_answer: str | None = REFERENCE,
    retrieved: Sequence[Any] | None = None,
    steps: Sequence[dict[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One question and its response."""
    fields: dict[str, Any] = {}
    if answer is not None:
        fields["actual_answer"] = answer
    if retrieved is not None:
        fields["retrieved_contexts"] = list(retrieved)
    return (
        dataset(question("q1", answer=reference_answer, text=QUESTION)),
        [response("q1", steps, **fields)],
    )


def run_one(
    config: Config,
    answer: str | None = "OSLO T1 and OSLO T2",
    **options: Any,
) -> dict[str, Any]:
    reference, responses = item(answer, **options)
    [result] = run_evaluation(reference, responses, config)
    return result


def factual_reply(
    correctness: float, completeness: float, consistency: float, **extra: Any
) -> dict[str, Any]:
    return {
        "correctness": {"score": correctness, "reasoning": "facts"},
        "completeness": {"score": completeness, "reasoning": "coverage"},
        "consistency": {"score": consistency, "reasoning": "coherence"},
        "overall_reasoning": "Mostly right.",
        "confidence": 80,
        **extra,
    }


def new_metric_keys(result: dict[str, Any]) -> list[str]:
    return [key for key in result if key.startswith(NEW_METRIC_PREFIXES)]


def expected_relevance(question_text: str, answer: str, count: int = 3) -> float:
    """answer_relevance as the rule judge and its bag-of-words embeddings give it: ``count``
    generated questions ("What is <answer>?", ...), each compared with the question."""
    stems = ("What is", "Which are", "Tell me", "Name", "List")
    asked = embed_text(question_text)
    generated = [f"{stems[i % len(stems)]} {answer}?" for i in range(count)]
    similarities = [
        max(0.0, sum(a * b for a, b in zip(asked, embed_text(text), strict=True)))
        for text in generated
    ]
    return sum(similarities) / len(similarities)


# --------------------------------------------------------------------- ragas_faithfulness

OSLO_CONTEXTS = ["Transformer OSLO T1 is in substation Oslo.", "The weather is sunny."]


def test_faithfulness_is_the_share_of_claims_the_contexts_support(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = selecting(make_config(server), "ragas_faithfulness")

    result = run_one(config, "OSLO T1 and OSLO T3", retrieved=OSLO_CONTEXTS)

    assert result["ragas_faithfulness"] == pytest.approx(50.0)
    assert result["ragas_faithfulness_reason"] == (
        "[supported] OSLO T1: in the contexts\n[not supported] OSLO T3: not in the contexts"
    )
    assert result["ragas_faithfulness_cost"] > 0
    assert "ragas_faithfulness_error" not in result
    assert [schema_of(body) for body in chats(server)] == ["ClaimList", "ClaimVerdicts"]


def test_faithfulness_verification_prompt_numbers_contexts_and_claims(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = selecting(make_config(server), "ragas_faithfulness")

    run_one(config, "OSLO T1 and OSLO T3", retrieved=OSLO_CONTEXTS)

    [claims] = chats(server, "ClaimList")
    assert task(claims) == prompt("ragas_claims").format(
        question=QUESTION, answer="OSLO T1 and OSLO T3"
    )
    [verdicts] = chats(server, "ClaimVerdicts")
    assert task(verdicts) == prompt("ragas_faithfulness").format(
        contexts=f"[1] {OSLO_CONTEXTS[0]}\n\n[2] {OSLO_CONTEXTS[1]}",
        claims="1. OSLO T1\n2. OSLO T3",
    )


def test_all_claims_supported_is_fully_faithful(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = selecting(make_config(server), "ragas_faithfulness")

    result = run_one(config, "OSLO T1", retrieved=OSLO_CONTEXTS)

    assert result["ragas_faithfulness"] == pytest.approx(100.0)


def test_answer_without_claims_is_fully_faithful_after_one_call(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = selecting(make_config(server), "ragas_faithfulness")

    result = run_one(config, "I don't know.", retrieved=OSLO_CONTEXTS)

    assert result["ragas_faithfulness"] == pytest.approx(100.0)
    assert result["ragas_faithfulness_reason"] == "the answer makes no claims"
    assert [schema_of(body) for body in chats(server)] == ["ClaimList"]


def test_blank_claims_count_as_no_claims(judge: StartJudge, make_config: MakeConfig) -> None:
    server = judge(responder=answering(ClaimList={"claims": ["  ", ""]}))
    config = selecting(make_config(server), "ragas_faithfulness")

    result = run_one(config, "OSLO T1", retrieved=OSLO_CONTEXTS)

    assert result["ragas_faithfulness"] == pytest.approx(100.0)
    assert server.count() == 1


def test_faithfulness_with_empty_retrieved_contexts_is_zero_after_one_call(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = selecting(make_config(server), "ragas_faithfulness")

    result = run_one(config, "OSLO T1 and OSLO T3", retrieved=[])

    assert result["ragas_faithfulness"] == pytest.approx(0.0)
    assert result["ragas_faithfulness_reason"] == (
        "[not supported] OSLO T1\n[not supported] OSLO T3\n(no contexts were retrieved)"
    )
    assert [schema_of(body) for body in chats(server)] == ["ClaimList"]


def test_retrieval_step_that_returned_nothing_makes_faithfulness_zero(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = selecting(make_config(server), "ragas_faithfulness")

    result = run_one(config, "OSLO T1", steps=[step("retrieval", "[]")])

    assert result["ragas_faithfulness"] == pytest.approx(0.0)
    assert server.count() == 1


@pytest.mark.parametrize(
    "steps",
    [
        None,
        [step("sparql_query", sparql(["t"], [["OSLO T1"]]))],
    ],
    ids=["no-steps", "no-retrieval-step"],
)
def test_context_metrics_are_skipped_without_any_contexts(
    server: JudgeServer, make_config: MakeConfig, steps: list[dict[str, Any]] | None
) -> None:
    config = selecting(make_config(server), *RAGAS[:3])

    result = run_one(config, "OSLO T1", steps=steps)

    assert new_metric_keys(result) == []
    assert server.count() == 0


def test_failed_retrieval_scores_zero_on_the_context_metrics(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    failed = step("retrieval", contexts(("1", "OSLO T1")), status="error", error="timeout")
    config = selecting(make_config(server), *RAGAS[:3])

    result = run_one(config, "OSLO T1", steps=[failed])

    assert [result[name] for name in RAGAS[:3]] == pytest.approx([0.0, 0.0, 0.0])
    assert sorted(schema_of(body) for body in chats(server)) == ["ClaimList", "StatementList"]


def test_faithfulness_example_of_the_docs(judge: StartJudge, make_config: MakeConfig) -> None:
    claims = [
        "OSLO T1 is in Substation OSLO",
        "OSLO T2 is in Substation OSLO",
        "OSLO T3 is in Bergen",
    ]
    server = judge(responder=answering(ClaimList={"claims": claims}))
    config = selecting(make_config(server), "ragas_faithfulness")
    answer = "OSLO T1 and OSLO T2 are in Substation OSLO; OSLO T3 is in Bergen."
    retrieved = ["OSLO T1 is in Substation OSLO.", "OSLO T2 is in Substation OSLO too."]

    result = run_one(config, answer, retrieved=retrieved)

    assert round(result["ragas_faithfulness"], 2) == pytest.approx(66.67)


# ---------------------------------------------------------------- ragas_context_precision


def test_context_precision_is_the_share_of_relevant_contexts(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    texts = ["Transformer OSLO T1 is in Oslo.", "The weather is sunny.", "OSLO T2 is new."]
    config = selecting(make_config(server), "ragas_context_precision")

    result = run_one(config, retrieved=texts)

    assert result["ragas_context_precision"] == pytest.approx(200 / 3)
    assert result["ragas_context_precision_reason"] == (
        "[1] relevant (90): states the answer\n"
        "[2] not relevant (10): does not state the answer\n"
        "[3] relevant (90): states the answer"
    )
    assert result["ragas_context_precision_cost"] > 0
    [body] = chats(server)
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
def test_context_precision_does_not_depend_on_rank(
    server: JudgeServer, make_config: MakeConfig, texts: list[str]
) -> None:
    config = selecting(make_config(server), "ragas_context_precision")

    result = run_one(config, retrieved=texts)

    assert result["ragas_context_precision"] == pytest.approx(50.0)


def test_context_precision_example_of_the_reference(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    """16 contexts for the Erica vagans question, of which 2 and 7 name the Cornish heath."""
    texts = [f"Passage {rank} about Cornwall and its coast." for rank in range(1, 17)]
    texts[1] = "The erica vagans, the lovely Cornish heath, grows nowhere else."
    texts[6] = "Again the erica vagans, the lovely Cornish heath."
    config = selecting(make_config(server), "ragas_context_precision")

    result = run_one(config, "Cornish heath", reference_answer="Cornish heath", retrieved=texts)

    assert result["ragas_context_precision"] == pytest.approx(12.5)
    reasons = result["ragas_context_precision_reason"].splitlines()
    assert [line.split("]")[0] for line in reasons if "] relevant" in line] == ["[2", "[7"]


def test_context_precision_of_empty_contexts_is_zero_without_a_call(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = selecting(make_config(server), "ragas_context_precision")

    result = run_one(config, retrieved=[])

    assert result["ragas_context_precision"] == pytest.approx(0.0)
    assert result["ragas_context_precision_reason"] == "no contexts were retrieved"
    assert result["ragas_context_precision_cost"] == pytest.approx(0.0)
    assert server.count() == 0


def test_context_precision_without_a_reference_answer_says_so_in_the_prompt(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = selecting(make_config(server), "ragas_context_precision")

    result = run_one(config, retrieved=["OSLO T1 is here."], reference_answer=None)

    assert "ragas_context_precision" in result
    assert "Reference answer: (not given)" in task(chats(server)[0])


# ------------------------------------------------------------------- ragas_context_recall


def test_context_recall_is_the_share_of_attributed_statements(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = selecting(make_config(server), "ragas_context_recall")

    result = run_one(config, retrieved=OSLO_CONTEXTS)

    assert result["ragas_context_recall"] == pytest.approx(50.0)
    assert result["ragas_context_recall_reason"] == (
        "[attributed] OSLO T1: in the contexts\n[not attributed] OSLO T2: not in the contexts"
    )
    assert result["ragas_context_recall_cost"] > 0
    [statements] = chats(server, "StatementList")
    assert task(statements) == prompt("ragas_statements").format(
        question=QUESTION, reference_answer=REFERENCE
    )
    [attribution] = chats(server, "StatementVerdicts")
    assert task(attribution) == prompt("ragas_attribution").format(
        contexts=f"[1] {OSLO_CONTEXTS[0]}\n\n[2] {OSLO_CONTEXTS[1]}",
        statements="1. OSLO T1\n2. OSLO T2",
    )


def test_reference_statements_are_shared_by_systems_through_the_cache(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = selecting(make_config(server), "ragas_context_recall")
    first = run_one(config, retrieved=["OSLO T1 and OSLO T2 are in Oslo."])
    assert server.count() == 2
    server.reset()

    second = run_one(config, retrieved=["Only OSLO T2 is there."])

    assert [schema_of(body) for body in chats(server)] == ["StatementVerdicts"]
    assert server.count() == 1
    assert (first["ragas_context_recall"], second["ragas_context_recall"]) == pytest.approx(
        (100.0, 50.0)
    )


def test_reference_without_statements_has_full_recall_after_one_call(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(responder=answering(StatementList={"statements": []}))
    config = selecting(make_config(server), "ragas_context_recall")

    result = run_one(config, retrieved=OSLO_CONTEXTS)

    assert result["ragas_context_recall"] == pytest.approx(100.0)
    assert result["ragas_context_recall_reason"] == "the reference answer has no statements"
    assert server.count() == 1


def test_context_recall_with_empty_contexts_is_zero_after_the_statements_call(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = selecting(make_config(server), "ragas_context_recall")

    result = run_one(config, retrieved=[])

    assert result["ragas_context_recall"] == pytest.approx(0.0)
    assert result["ragas_context_recall_reason"].endswith("(no contexts were retrieved)")
    assert [schema_of(body) for body in chats(server)] == ["StatementList"]


def test_context_recall_is_skipped_without_a_reference_answer(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = selecting(make_config(server), "ragas_context_recall")

    result = run_one(config, retrieved=OSLO_CONTEXTS, reference_answer=None)

    assert new_metric_keys(result) == []
    assert server.count() == 0


# ----------------------------------------------------------------- ragas_answer_relevance


def test_ragas_answer_relevance_is_answer_relevance_times_100(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    answer = "Which transformers are in substation Oslo"
    config = selecting(make_config(server), "ragas_answer_relevance")

    result = run_one(config, answer)

    assert result["ragas_answer_relevance"] == pytest.approx(
        100 * expected_relevance(QUESTION, answer)
    )
    assert result["ragas_answer_relevance"] > 80
    assert result["ragas_answer_relevance_reason"] == "\n".join(
        f"{stem} {answer}?" for stem in ("What is", "Which are", "Tell me")
    )
    assert result["ragas_answer_relevance_cost"] > 0
    assert "answer_relevance" not in result


def test_answer_relevance_and_ragas_answer_relevance_share_one_judge_call(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    """They ask the same question at the same moment: one judge call and one embeddings
    request serve both (the second waits for the first and reads the cache)."""
    config = selecting(make_config(server), "answer_relevance", "ragas_answer_relevance")

    result = run_one(config, "OSLO T1 and OSLO T2")

    assert server.count("chat/completions") == 1
    assert server.count("embeddings") == 1
    assert result["ragas_answer_relevance"] == pytest.approx(100 * result["answer_relevance"])
    assert result["ragas_answer_relevance_reason"] == result["answer_relevance_reason"]


def test_ragas_answer_relevance_asks_for_its_own_number_of_questions(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = selecting(
        make_config(server),
        "answer_relevance",
        "ragas_answer_relevance",
        ragas={"questions": 5},
    )

    result = run_one(config, "OSLO T1")

    asked = sorted(task(body).split(" different")[0] for body in chats(server))
    assert asked == ["Write 3", "Write 5"]
    assert len(result["ragas_answer_relevance_reason"].splitlines()) == 5
    assert len(result["answer_relevance_reason"].splitlines()) == 3


def test_noncommittal_answer_has_zero_ragas_answer_relevance(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = selecting(make_config(server), "ragas_answer_relevance")

    result = run_one(config, "I'm not sure.")

    assert result["ragas_answer_relevance"] == pytest.approx(0.0)
    assert server.count("embeddings") == 0


# ------------------------------------------------------------------- where contexts come from


def test_contexts_come_from_successful_retrieval_steps_in_order(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    steps = [
        step("retrieval", contexts(("a", "First OSLO T1."), (None, "Second.")), step_id="r1"),
        step("retrieval", contexts(("x", "Not this one.")), status="error", error="timeout"),
        step("sparql_query", sparql(["t"], [["OSLO T9"]])),
        step("retrieval", contexts(("c", "Third OSLO T2.")), step_id="r2"),
    ]
    config = selecting(make_config(server), "ragas_faithfulness")

    result = run_one(config, "OSLO T1 and OSLO T2", steps=steps)

    assert result["ragas_faithfulness"] == pytest.approx(100.0)
    [body] = chats(server, "ClaimVerdicts")
    assert "Contexts:\n[1] First OSLO T1.\n\n[2] Second.\n\n[3] Third OSLO T2.\n\n" in task(body)


def test_retrieved_contexts_take_precedence_over_retrieval_steps(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    steps = [step("retrieval", contexts(("a", "OSLO T1 and OSLO T2 are here.")))]
    config = selecting(make_config(server), "ragas_context_precision")

    result = run_one(config, retrieved=["Sunny.", "Rain."], steps=steps)

    assert result["ragas_context_precision"] == pytest.approx(0.0)
    assert "Contexts:\n[1] Sunny.\n\n[2] Rain.\n\n" in task(chats(server)[0])


def test_retrieved_contexts_may_be_objects_with_text(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    retrieved = [{"id": "d1", "text": "OSLO T1 is here."}, {"id": "d2"}, "  ", "OSLO T2 too."]
    config = selecting(make_config(server), "ragas_context_precision")

    result = run_one(config, retrieved=retrieved)

    assert result["ragas_context_precision"] == pytest.approx(100.0)
    assert "Contexts:\n[1] OSLO T1 is here.\n\n[2] OSLO T2 too.\n\n" in task(chats(server)[0])


# ------------------------------------------------------------- malformed and out-of-range


def relevances(*verdicts: tuple[int, bool, float]) -> dict[str, Any]:
    return {
        "contexts": [
            {"context": number, "relevant": relevant, "score": score, "reason": "r"}
            for number, relevant, score in verdicts
        ]
    }


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (
            relevances((1, True, 90), (2, False, -5)),
            "context 2: score must be from 0 to 100, got -5",
        ),
        (
            relevances((2, True, 90), (1, False, 10)),
            "verdicts must be for contexts 1 to 2 in order, got [2, 1]",
        ),
        (
            relevances((1, True, 90), (3, False, 10)),
            "verdicts must be for contexts 1 to 2 in order, got [1, 3]",
        ),
        (relevances((1, True, 90)), "expected 2 verdicts (one per context), got 1"),
        (
            relevances((1, True, 90), (2, False, 10), (3, False, 10)),
            "expected 2 verdicts (one per context), got 3",
        ),
    ],
    ids=["negative-score", "swapped", "skipped-number", "too-few", "too-many"],
)
def test_bad_context_precision_verdicts_are_an_error(
    judge: StartJudge, make_config: MakeConfig, reply: dict[str, Any], problem: str
) -> None:
    server = judge(responder=answering(ContextRelevances=reply))
    config = selecting(make_config(server), "ragas_context_precision", "ragas_context_recall")

    result = run_one(config, retrieved=OSLO_CONTEXTS)

    assert result["ragas_context_precision_error"] == MALFORMED + problem
    assert "ragas_context_precision" not in result
    assert len(chats(server, "ContextRelevances")) == 2
    assert result["ragas_context_recall"] == pytest.approx(50.0)  # the other metric is still scored


def test_faithfulness_verdict_count_mismatch_is_an_error_and_others_still_score(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    reply = {"verdicts": [{"claim": 1, "supported": True, "reason": "yes"}]}
    server = judge(responder=answering(ClaimVerdicts=reply))
    config = selecting(make_config(server), "ragas_score")

    result = run_one(config, "OSLO T1 and OSLO T3", retrieved=OSLO_CONTEXTS)

    assert result["ragas_faithfulness_error"] == MALFORMED + (
        "expected 2 verdicts (one per claim), got 1"
    )
    assert "ragas_faithfulness" not in result
    assert len(chats(server, "ClaimVerdicts")) == 2
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


def test_attribution_verdicts_out_of_order_are_an_error(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    reply = {
        "verdicts": [
            {"statement": 2, "attributed": True, "reason": "r"},
            {"statement": 1, "attributed": True, "reason": "r"},
        ]
    }
    server = judge(responder=answering(StatementVerdicts=reply))
    config = selecting(make_config(server), "ragas_context_recall")

    result = run_one(config, retrieved=OSLO_CONTEXTS)

    assert result["ragas_context_recall_error"] == MALFORMED + (
        "verdicts must be for statements 1 to 2 in order, got [2, 1]"
    )


def test_claim_extraction_that_is_not_json_is_an_error(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(responder=answering(ClaimList="OSLO T1 is a claim, I think."))
    config = selecting(make_config(server), "ragas_faithfulness")

    result = run_one(config, retrieved=OSLO_CONTEXTS)

    assert result["ragas_faithfulness_error"] == MALFORMED + "the reply is not a JSON object"
    assert len(chats(server)) == 2  # no verification call after a failed extraction


def test_classification_outside_the_two_classes_is_an_error(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    reply = {"classification": "MAYBE", "reason": "hard to say"}
    server = judge(responder=answering(Classification=reply))
    config = selecting(make_config(server), "answer_classification", "factual_accuracy")

    result = run_one(config)

    assert result["answer_classification_error"] == MALFORMED + (
        "classification: Input should be 'CORRECT' or 'WRONG'"
    )
    assert "answer_classification" not in result
    assert len(chats(server, "Classification")) == 2
    assert result["factual_accuracy_grade"] == "A"  # the other metric is still scored


def test_a_bad_reply_for_one_item_leaves_the_others_scored(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    def classify(body: Body) -> str | None:
        return '{"classification": "MAYBE", "reason": "?"}' if "OSLO T9" in task(body) else None

    server = judge(responder=answering(Classification=classify))
    reference = dataset(
        question("q1", answer=REFERENCE, text=QUESTION),
        question("q2", answer=REFERENCE, text=QUESTION),
    )
    responses = [
        response("q1", actual_answer="OSLO T1 and OSLO T2"),
        response("q2", actual_answer="OSLO T9"),
    ]
    config = selecting(make_config(server), "answer_classification")

    first, second = run_evaluation(reference, responses, config)

    assert first["answer_classification"] == "CORRECT"
    assert "answer_classification_error" in second
    assert (first["status"], second["status"]) == ("success", "success")


def test_every_reply_malformed_makes_every_judged_metric_an_error(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(faults=Faults(malformed=1.0))
    config = selecting(make_config(server), "factual_accuracy", "answer_classification", *RAGAS)

    result = run_one(config, retrieved=OSLO_CONTEXTS)

    for name in ("factual_accuracy", "answer_classification", *RAGAS):
        assert result[f"{name}_error"] == MALFORMED + "the reply is not a JSON object"
    assert sorted(new_metric_keys(result)) == sorted(
        f"{name}_error" for name in ("factual_accuracy", "answer_classification", *RAGAS)
    )
    assert "ragas_score" not in result
    assert result["status"] == "success"


# ------------------------------------------------------------ ragas_score, worked examples

DEFAULT_WEIGHTS = load_config({}).ragas.weights.model_dump()


def test_default_ragas_weights_are_the_references() -> None:
    assert DEFAULT_WEIGHTS == {
        "faithfulness": 0.30,
        "context_precision": 0.20,
        "context_recall": 0.20,
        "answer_relevance": 0.30,
    }


@pytest.mark.parametrize(
    ("components", "expected"),
    [
        ((100.0, None, 100.0, 83.27), 93.73),
        ((100.0, math.nan, 100.0, 83.27), 93.73),
        ((0.0, 0.0, 0.0, 83.27), 24.98),
        ((None, None, None, 82.29), 82.29),
    ],
    ids=["local_search", "local_search-nan", "basic_search", "llm_with_context"],
)
def test_ragas_score_worked_examples(components: tuple[float | None, ...], expected: float) -> None:
    named = dict(zip(DEFAULT_WEIGHTS, components, strict=True))

    assert round(ragas_score(named, DEFAULT_WEIGHTS), 2) == expected


def test_ragas_score_is_not_rounded() -> None:
    components = {
        "faithfulness": 100.0,
        "context_precision": None,
        "context_recall": 100.0,
        "answer_relevance": 83.27,
    }

    assert ragas_score(components, DEFAULT_WEIGHTS) == pytest.approx(93.72625, abs=1e-9)


def test_ragas_score_weights_are_configurable() -> None:
    components = {
        "faithfulness": 90.0,
        "context_precision": 10.0,
        "context_recall": 50.0,
        "answer_relevance": 70.0,
    }
    weights = {**DEFAULT_WEIGHTS, "faithfulness": 1.0, "context_precision": 0.0}

    assert ragas_score(components, weights) == pytest.approx((90 + 0.2 * 50 + 0.3 * 70) / 1.5)


def test_ragas_score_without_any_component_is_an_error() -> None:
    with pytest.raises(ValueError, match="no RAGAS component has a value"):
        ragas_score(dict.fromkeys(DEFAULT_WEIGHTS), DEFAULT_WEIGHTS)


@pytest.mark.parametrize(
    ("section", "weights"),
    [
        ("ragas", dict.fromkeys(DEFAULT_WEIGHTS, 0)),
        ("ragas", {"faithfulness": -0.1}),
        ("factual_accuracy", {"correctness": 0, "completeness": 0, "consistency": 0}),
        ("factual_accuracy", {"completeness": -1}),
    ],
    ids=["ragas-all-zero", "ragas-negative", "factual-all-zero", "factual-negative"],
)
def test_unusable_weights_are_a_config_error(section: str, weights: dict[str, float]) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config({section: {"weights": weights}})

    assert caught.value.field.startswith(f"{section}.weights")


def test_ragas_score_of_a_run_without_contexts_is_the_answer_relevance(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    """The reference's llm_with_context row: no retrieval at all."""
    config = selecting(make_config(server), "ragas_score")

    result = run_one(config, "OSLO T1")

    assert not {"ragas_faithfulness", "ragas_context_precision", "ragas_context_recall"} & set(
        result
    )
    assert result["ragas_score"] == pytest.approx(result["ragas_answer_relevance"])


def test_ragas_score_of_a_run_that_retrieved_nothing(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    """The reference's basic_search row: retrieval returned nothing, so three zeros."""
    config = selecting(make_config(server), "ragas_score")

    result = run_one(config, "OSLO T1", retrieved=[])

    assert [result[name] for name in RAGAS[:3]] == pytest.approx([0.0, 0.0, 0.0])
    assert result["ragas_score"] == pytest.approx(0.3 * result["ragas_answer_relevance"])


def test_ragas_score_of_a_full_run_is_the_weighted_mean(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = selecting(make_config(server), "ragas_score")

    result = run_one(config, "OSLO T1 and OSLO T3", retrieved=OSLO_CONTEXTS)

    assert [result[name] for name in RAGAS[:3]] == pytest.approx([50.0, 50.0, 50.0])
    assert result["ragas_score"] == pytest.approx(
        0.3 * 50 + 0.2 * 50 + 0.2 * 50 + 0.3 * result["ragas_answer_relevance"]
    )


def test_ragas_score_weights_from_the_config(server: JudgeServer, make_config: MakeConfig) -> None:
    weights = {**dict.fromkeys(DEFAULT_WEIGHTS, 0), "faithfulness": 1}
    config = selecting(make_config(server), "ragas_score", ragas={"weights": weights})

    result = run_one(config, "OSLO T1 and OSLO T3", retrieved=["OSLO T1 is in Oslo."])

    assert result["ragas_faithfulness"] == pytest.approx(50.0)
    assert result["ragas_score"] == pytest.approx(50.0)


def test_ragas_score_of_a_response_without_an_answer_uses_the_context_metrics(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    """A retrieval-only system: precision and recall need no answer; faithfulness and answer
    relevance do."""
    config = selecting(make_config(server), "ragas_score")

    result = run_one(config, None, retrieved=OSLO_CONTEXTS)

    assert "ragas_faithfulness" not in result
    assert "ragas_answer_relevance" not in result
    assert (result["ragas_context_precision"], result["ragas_context_recall"]) == pytest.approx(
        (50.0, 50.0)
    )
    assert result["ragas_score"] == pytest.approx(50.0)


def test_ragas_score_is_absent_when_no_component_was_computed(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(faults=Faults(malformed=1.0))
    config = selecting(make_config(server), "ragas_score")

    result = run_one(config, retrieved=OSLO_CONTEXTS)

    assert "ragas_score" not in result
    assert "ragas_score_error" not in result


# -------------------------------------------------------------------------- selection

SEED_DEFAULTS = ["answer_correctness", "answer_relevance", "retrieval_answer", "retrieval_context"]


def names(config: Config) -> list[str]:
    return [metric.name for metric in metrics_for(load_config(config))]


def test_without_a_metrics_list_only_the_seed_readme_metrics_run() -> None:
    assert names({}) == [*SEED_DEFAULTS[:2], "steps_score", *SEED_DEFAULTS[2:], "usage"]


def test_without_a_metrics_list_a_run_computes_none_of_the_new_metrics(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    retrieval = step("retrieval", contexts(("1", "OSLO T1 is in Oslo.")), step_id="r1")

    result = run_one(make_config(server), "OSLO T1", steps=[retrieval])

    assert new_metric_keys(result) == []
    assert "answer_f1" in result
    assert "answer_relevance" in result
    assert "retrieval_answer_recall" in result["actual_steps"][0]
    asked = {schema_of(body) for body in chats(server)}
    assert not asked & {"ClaimList", "FactualAccuracyReply", "Classification", "StatementList"}


def test_selecting_one_metric_runs_only_it_and_the_bookkeeping(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    reference = dataset(
        question("q1", [[sparql_ref(sparql(["a"], [["x"]]))]], answer=REFERENCE, text=QUESTION)
    )
    responses = [
        response(
            "q1",
            [
                step("retrieval", contexts(("1", "OSLO T1 is in Oslo.")), step_id="r1"),
                step("sparql_query", sparql(["b"], [["x"]]), step_id="s1"),
            ],
            actual_answer="OSLO T1 and OSLO T2",
            input_tokens=10,
        )
    ]
    config = selecting(make_config(server), "factual_accuracy")

    [result] = run_evaluation(reference, responses, config)

    assert names(config) == ["factual_accuracy", "steps_score", "usage"]
    assert result["factual_accuracy_grade"] == "A"
    assert result["steps_score"] == 1
    assert result["input_tokens"] == 10
    assert not [key for key in result if key.startswith(("answer_", "ragas_"))]
    assert not [key for key in result["actual_steps"][0] if key.startswith("retrieval_")]
    assert [schema_of(body) for body in chats(server)] == ["FactualAccuracyReply"]


def test_selecting_ragas_score_runs_its_four_components(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = selecting(make_config(server), "ragas_score")

    result = run_one(config, retrieved=OSLO_CONTEXTS)

    assert names(config) == ["steps_score", *RAGAS, "usage", "ragas_score"]
    for name in (*RAGAS, "ragas_score"):
        assert isinstance(result[name], float)
    assert not [key for key in result if key.startswith(("answer_", "factual_"))]


def test_metrics_all_selects_every_metric_and_custom_evaluations() -> None:
    review = {
        "name": "review",
        "inputs": ["actual_answer"],
        "instructions": "Review.",
        "outputs": {"review_score": "1-5"},
    }

    selected = names({"metrics": "all", "custom_evaluations": [review]})

    assert sorted(selected) == sorted([m.name for m in registered_metrics()] + ["review"])
    assert selected[-1] == "ragas_score"  # computed from the others, so last


def test_metrics_all_skips_a_disabled_seed_metric() -> None:
    assert "answer_relevance" not in names(
        {"metrics": "all", "answer_relevance": {"enabled": False}}
    )


def test_unknown_metric_name_is_a_config_error_with_a_suggestion() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config({"metrics": ["ragas_score", "factual_acuracy"]})

    assert str(caught.value) == (
        "<config>: metrics[1]: unknown metric 'factual_acuracy' (did you mean 'factual_accuracy'?)"
    )


def test_metric_listed_twice_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="a metric is listed more than once"):
        load_config({"metrics": ["factual_accuracy", "factual_accuracy"]})


@pytest.mark.parametrize(
    ("metrics", "named"),
    [
        (["factual_accuracy"], "factual_accuracy"),
        (["answer_classification"], "answer_classification"),
        (["ragas_context_precision"], "ragas_context_precision"),
        (["ragas_score"], "ragas_faithfulness"),
    ],
)
def test_selected_metric_without_a_judge_is_a_config_error(metrics: list[str], named: str) -> None:
    reference, responses = item(retrieved=OSLO_CONTEXTS)

    with pytest.raises(ConfigError) as caught:
        run_evaluation(reference, responses, {"metrics": metrics})

    assert str(caught.value) == f"metrics: metric '{named}' needs an LLM judge (llm.generation)"


def test_selected_metric_without_a_judge_is_an_error_with_a_given_engine_too(
    server: JudgeServer,
    make_config: MakeConfig,
    run_with_engine: Callable[..., Any],
) -> None:
    config = selecting(make_config(server, generation=None), "factual_accuracy")
    reference, responses = item()

    with pytest.raises(ConfigError, match="metric 'factual_accuracy' needs an LLM judge"):
        run_with_engine(reference, responses, config)
    assert server.count() == 0


def test_metrics_all_without_a_judge_is_an_error_while_defaults_are_skipped() -> None:
    reference, responses = item(retrieved=OSLO_CONTEXTS)

    [result] = run_evaluation(reference, responses, {})
    with pytest.raises(ConfigError, match="needs an LLM judge"):
        run_evaluation(reference, responses, {"metrics": "all"})

    assert result["status"] == "success"


@pytest.mark.parametrize("name", ["answer_correctness", "answer_relevance", "retrieval_answer"])
def test_listing_a_disabled_metric_is_a_config_error(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config({"metrics": [name], name: {"enabled": False}})

    assert str(caught.value) == f"<config>: metrics lists '{name}' but {name}.enabled is false"


REVIEW = {
    "name": "review",
    "inputs": ["question", "actual_answer"],
    "instructions": "Review the answer.",
    "outputs": {"review_score": "1-5"},
}
TONE = {**REVIEW, "name": "tone", "outputs": {"tone_score": "1-5"}}


@pytest.mark.parametrize(
    "name", ["factual_accuracy", "ragas_score", "answer_classification", "semantic_similarity"]
)
def test_custom_evaluation_may_not_take_a_metrics_name(name: str) -> None:
    evaluation = {**REVIEW, "name": name, "outputs": {"my_output": "x"}}

    with pytest.raises(ConfigError) as caught:
        load_config({"custom_evaluations": [evaluation]})

    assert str(caught.value) == (
        f"<config>: custom_evaluations[0]: the name '{name}' is already a metric's"
    )


def test_custom_evaluation_is_selected_by_name(judge: StartJudge, make_config: MakeConfig) -> None:
    server = judge(responder=lambda body: "4" if "tab characters" in task(body) else None)
    config = selecting(make_config(server), "review", custom_evaluations=[REVIEW, TONE])

    result = run_one(config)

    assert result["review_score"] == 4
    assert not [key for key in result if key.startswith("tone")]
    assert server.count() == 1


def test_misspelt_custom_evaluation_name_gets_a_suggestion() -> None:
    with pytest.raises(ConfigError, match=r"unknown metric 'reveiw' \(did you mean 'review'\?\)"):
        load_config({"metrics": ["reveiw"], "custom_evaluations": [REVIEW]})


# ------------------------------------------------------------------------------ aggregates


def test_answer_class_counts_per_template_and_overall_with_zeros(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    reference = [
        *dataset(
            question("q1", answer=REFERENCE, text=QUESTION),
            question("q2", answer=REFERENCE, text=QUESTION),
            template_id="t1",
        ),
        *dataset(
            question("q3", answer=REFERENCE, text=QUESTION),
            question("q4", answer=REFERENCE, text=QUESTION),
            question("q5", answer=REFERENCE, text=QUESTION),
            template_id="t2",
        ),
    ]
    responses = [
        response("q1", actual_answer="OSLO T1 and OSLO T2"),
        response("q2", actual_answer="OSLO T1"),
        response("q3", actual_answer="I don't know."),
        response("q4", actual_answer="N/A"),
        response("q5", status="error", error="the agent crashed"),
    ]
    config = selecting(make_config(server), "answer_classification")

    aggregates = compute_aggregates(run_evaluation(reference, responses, config), config)

    def counts(group: dict[str, Any]) -> tuple[int, int, int]:
        return (
            group["correct_answers_count"],
            group["wrong_answers_count"],
            group["dont_know_answers_count"],
        )

    assert counts(aggregates["per_template"]["t1"]) == (1, 1, 0)
    assert counts(aggregates["per_template"]["t2"]) == (0, 0, 2)
    assert counts(aggregates["micro"]) == (1, 1, 2)
    assert aggregates["micro"]["answer_classification"] == {
        "CORRECT": 1,
        "WRONG": 1,
        "DON'T KNOW": 2,
    }
    assert list(aggregates["per_template"]["t2"]["answer_classification"]) == [
        "CORRECT",
        "WRONG",
        "DON'T KNOW",
    ]


def test_grade_distribution_lists_a_to_e_in_order_with_zeros(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    def scores(body: Body) -> dict[str, Any]:
        score = int(task(body).split("Candidate: score ")[1].split()[0])
        return factual_reply(score, score, score)

    server = judge(responder=answering(FactualAccuracyReply=scores))
    reference = [
        *dataset(
            *(question(f"q{i}", answer=REFERENCE, text=QUESTION) for i in (1, 2, 3)),
            template_id="t1",
        ),
        *dataset(question("q4", answer=REFERENCE, text=QUESTION), template_id="t2"),
    ]
    given = {"q1": 85, "q2": 90, "q3": 10, "q4": 45}
    responses = [response(qid, actual_answer=f"score {s}") for qid, s in given.items()]
    config = selecting(make_config(server), "factual_accuracy")

    aggregates = compute_aggregates(run_evaluation(reference, responses, config), config)

    micro = aggregates["micro"]["factual_accuracy_grade"]
    assert list(micro.items()) == [("A", 2), ("B", 0), ("C", 1), ("D", 0), ("E", 1)]
    t2 = aggregates["per_template"]["t2"]["factual_accuracy_grade"]
    assert list(t2.items()) == [("A", 0), ("B", 0), ("C", 1), ("D", 0), ("E", 0)]
    assert aggregates["micro"]["factual_accuracy_percentage"]["mean"] == pytest.approx(57.5)


def test_error_samples_count_as_zero_for_the_new_metrics_when_asked(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    reference = dataset(
        question("q1", answer=REFERENCE, text=QUESTION),
        question("q2", answer=REFERENCE, text=QUESTION),
    )
    responses = [
        response("q1", actual_answer="OSLO T1 and OSLO T2", retrieved_contexts=OSLO_CONTEXTS),
        response("q2", status="error", error="the agent crashed"),
    ]
    config = selecting(
        make_config(server),
        "factual_accuracy",
        "ragas_score",
        aggregation={"error_samples": "zero"},
    )
    results = run_evaluation(reference, responses, config)

    micro = compute_aggregates(results, config)["micro"]

    for key in ("factual_accuracy_percentage", "ragas_faithfulness", "ragas_score"):
        assert micro[key]["mean"] == pytest.approx(results[0][key] / 2)
        assert micro["coverage"][key]["scored"] == 2
