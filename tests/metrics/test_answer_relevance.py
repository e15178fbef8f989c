"""Answer relevance (docs/metrics.md): the mean similarity of the questions the judge writes for
an answer, non-committal answers, the local embedding model, and malformed replies, against the
scripted judge."""

from __future__ import annotations

import json
from typing import Any

import pytest

from metrics.scripted_judge import (
    ScriptedJudge,
    judge_config,
    only,
    replying,
    run_scripted,
    task,
)

from builders import dataset, question, response
from judge_server import embed_text

Config = dict[str, Any]

QUESTION = "Which transformers are in substation Oslo?"
# The marker of the answer relevance prompt, for responders that answer it only.
RELEVANCE = "different questions that the answer below would be a good response to"


def answer_item(
    reference_answer: str | None, actual_answer: str | None, text: str = QUESTION
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    fields = {} if actual_answer is None else {"actual_answer": actual_answer}
    return (
        dataset(question("q1", answer=reference_answer, text=text)),
        [response("q1", **fields)],
    )


def without_embedding(config: Config) -> Config:
    """``config`` with a judge but no embedding endpoint (no ``llm.embedding``)."""
    llm = {key: value for key, value in config["llm"].items() if key != "embedding"}
    return {**config, "llm": llm}


# -------------------------------------------------------------------- answer relevance


def _expected_relevance(question_text: str, answer: str) -> float:
    """What the rule judge and its bag-of-words embeddings give: three generated questions
    ("What is <answer>?", ...), each compared with the question."""
    asked = embed_text(question_text)
    generated = [f"{stem} {answer}?" for stem in ("What is", "Which are", "Tell me")]
    similarities = [
        max(0.0, sum(a * b for a, b in zip(asked, embed_text(text), strict=True)))
        for text in generated
    ]
    return sum(similarities) / len(similarities)


def test_answer_relevance_is_the_mean_similarity_of_generated_questions() -> None:
    judge = ScriptedJudge()
    answer = "Which transformers are in substation Oslo"
    reference, responses = answer_item(None, answer)

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "answer_relevance"))

    assert result["answer_relevance"] == pytest.approx(_expected_relevance(QUESTION, answer))
    assert result["answer_relevance"] > 0.8
    assert result["answer_relevance_reason"] == "\n".join(
        f"{stem} {answer}?" for stem in ("What is", "Which are", "Tell me")
    )
    assert result["answer_relevance_cost"] > 0


def test_unrelated_answer_has_low_relevance() -> None:
    judge = ScriptedJudge()
    answer = "Bananas ripen quickly"
    reference, responses = answer_item(None, answer)

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "answer_relevance"))

    # Only the generated questions' stems ("Which are ...") share words with the question.
    assert result["answer_relevance"] == pytest.approx(_expected_relevance(QUESTION, answer))
    assert result["answer_relevance"] < 0.4


def test_noncommittal_answer_has_zero_relevance_without_embeddings() -> None:
    judge = ScriptedJudge()
    reference, responses = answer_item(None, "I don't know")

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "answer_relevance"))

    assert result["answer_relevance"] == pytest.approx(0.0)
    assert result["answer_relevance_reason"].endswith("(the answer is non-committal)")
    assert judge.count("embeddings") == 0


def test_answer_relevance_embeds_locally_without_an_embedding_endpoint() -> None:
    """With no llm.embedding, the bundled local model (the embeddings extra, installed with
    the dev extra) embeds the questions: the judge is asked, the endpoint never embeds."""
    judge = ScriptedJudge()
    reference, responses = answer_item(None, "OSLO T1")

    [result] = run_scripted(judge, reference, responses, without_embedding(judge_config()))

    assert 0.0 <= result["answer_relevance"] <= 1.0
    assert "answer_relevance_error" not in result
    assert judge.count("chat/completions") >= 1
    assert judge.count("embeddings") == 0


def test_answer_relevance_asks_for_the_configured_number_of_questions() -> None:
    judge = ScriptedJudge()
    reference, responses = answer_item(None, "OSLO T1")
    config = {**only(judge_config(), "answer_relevance"), "answer_relevance": {"questions": 5}}

    [result] = run_scripted(judge, reference, responses, config)

    assert "Write 5 different questions" in task(judge.chats()[0])
    assert len(result["answer_relevance_reason"].splitlines()) == 5
    # One request, sent twice: a second reply confirms the vectors' dimension.
    first, embeddings = [body for path, body in judge.requests if path.endswith("embeddings")]
    assert first == embeddings
    assert len(embeddings["input"]) == 6  # the question and the five generated ones


def test_fewer_generated_questions_than_asked_are_used_as_they_are() -> None:
    reply = json.dumps({"questions": ["Which transformers?", "  "], "noncommittal": False})
    judge = ScriptedJudge(responder=replying(RELEVANCE, reply))
    reference, responses = answer_item(None, "OSLO T1")

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "answer_relevance"))

    assert "answer_relevance_error" not in result
    asked, generated = embed_text(QUESTION), embed_text("Which transformers?")
    expected = max(0.0, sum(a * b for a, b in zip(asked, generated, strict=True)))
    assert result["answer_relevance"] == pytest.approx(expected)
    assert result["answer_relevance_reason"] == ("Which transformers?\n(1 of 3 questions written)")
    assert len(judge.chats()) == 1  # used, not re-asked


def test_more_generated_questions_than_asked_are_cut_to_the_number_asked() -> None:
    questions = [f"Which transformers are in substation {n}?" for n in range(5)]
    reply = json.dumps({"questions": questions, "noncommittal": False})
    judge = ScriptedJudge(responder=replying(RELEVANCE, reply))
    reference, responses = answer_item(None, "OSLO T1")

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "answer_relevance"))

    assert result["answer_relevance_reason"].splitlines() == questions[:3]
    # One request, sent twice: a second reply confirms the vectors' dimension.
    first, embeddings = [body for path, body in judge.requests if path.endswith("embeddings")]
    assert first == embeddings
    assert len(embeddings["input"]) == 4  # the question and the first three


def test_a_reply_without_any_question_fails_after_one_reask() -> None:
    reply = json.dumps({"questions": ["  "], "noncommittal": False})
    judge = ScriptedJudge(responder=replying(RELEVANCE, reply))
    reference, responses = answer_item(None, "OSLO T1")

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "answer_relevance"))

    assert result["answer_relevance_error"] == (
        "malformed judge reply (after one re-ask): expected 3 questions, got none"
    )
    assert "answer_relevance" not in result
    assert len(judge.chats()) == 2
