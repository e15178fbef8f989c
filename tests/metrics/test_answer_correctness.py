"""Answer correctness (docs/metrics.md): claim counts from the judge, their parser, blank and
missing answers, and the configurable prompt, against the scripted judge."""

from __future__ import annotations

from typing import Any
from unittest.mock import ANY

import pytest

from graphrag_eval import ConfigError, compute_aggregates, load_config
from graphrag_eval.llm.engine import ReplyError
from graphrag_eval.llm.prompts import prompt
from graphrag_eval.metrics.answer_correctness import (
    AnswerCorrectnessConfig,
    ClaimCounts,
    parse_claim_counts,
)
from metrics.scripted_judge import (
    ScriptedJudge,
    judge_config,
    llm_keys,
    only,
    replying,
    run_scripted,
    task,
)

from builders import dataset, question, response

QUESTION = "Which transformers are in substation Oslo?"
CORRECTNESS = "Candidate answer:"


def answer_item(
    reference_answer: str | None, actual_answer: str | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    fields = {} if actual_answer is None else {"actual_answer": actual_answer}
    return (
        dataset(question("q1", answer=reference_answer, text=QUESTION)),
        [response("q1", **fields)],
    )


def test_answer_correctness_from_the_judges_claim_counts() -> None:
    judge = ScriptedJudge()
    reference, responses = answer_item("OSLO T1, OSLO T2, OSLO T3", "OSLO T1 and OSLO T2")

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "answer_correctness"))

    assert result["answer_reference_claims_count"] == 3
    assert result["answer_actual_claims_count"] == 2
    assert result["answer_matching_claims_count"] == 2
    assert result["answer_correctness_reason"] == (
        "The candidate states 2 of the 3 reference claims"
    )
    assert result["answer_recall"] == pytest.approx(2 / 3)
    assert result["answer_precision"] == pytest.approx(1.0)
    assert result["answer_f1"] == pytest.approx(0.8)
    assert result["answer_correctness_cost"] > 0
    assert "answer_eval_error" not in result


def test_answer_with_no_matching_claim_scores_zero() -> None:
    judge = ScriptedJudge()
    reference, responses = answer_item("Paris", "London")

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "answer_correctness"))

    assert (result["answer_recall"], result["answer_precision"], result["answer_f1"]) == (0, 0, 0)


def test_answer_correctness_prompt_shows_question_and_both_answers() -> None:
    judge = ScriptedJudge()
    reference, responses = answer_item("OSLO T1", "OSLO T1")

    run_scripted(judge, reference, responses, only(judge_config(), "answer_correctness"))

    [body] = judge.chats()
    assert body["messages"][0] == {"role": "system", "content": prompt("system")}
    assert task(body) == prompt("answer_correctness").format(
        question=QUESTION, reference_answer="OSLO T1", actual_answer="OSLO T1"
    )
    assert "response_format" not in body


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("0\t2\t0\tx", "claim counts must be at least 1, got 0 and 2"),
        ("2\t0\t0\tx", "claim counts must be at least 1, got 2 and 0"),
        (
            "2\t2\t3\tx",
            "matching claims (3) must be between 0 and the smaller of the reference (2) and "
            "actual (2) counts",
        ),
        (
            "3\t1\t2\tx",
            "matching claims (2) must be between 0 and the smaller of the reference (3) and "
            "actual (1) counts",
        ),
        (
            "2\t2\t-1\tx",
            "matching claims (-1) must be between 0 and the smaller of the reference (2) and "
            "actual (2) counts",
        ),
        ("a\tb\tc\td", "the reference claims count 'a' is not a number"),
        ("2\tmany\t1\tx", "the actual claims count 'many' is not a number"),
        ("2.5\t2\t1\tx", "the reference claims count '2.5' is not an integer"),
        ("2\t2\tnan\tx", "the matching claims count 'nan' is not an integer"),
        ("2\t2\t1", "expected one line of 4 tab-separated values, found at most 3"),
        ("Two, two and one.", "expected one line of 4 tab-separated values, found at most 1"),
    ],
)
def test_invalid_claim_counts_fail_after_one_reask(reply: str, problem: str) -> None:
    judge = ScriptedJudge(responder=replying(CORRECTNESS, reply))
    reference, responses = answer_item("A, B", "A, B")

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "answer_correctness"))

    assert result["answer_eval_error"] == f"malformed judge reply (after one re-ask): {problem}"
    assert "answer_f1" not in result
    assert "answer_correctness_cost" not in result
    assert len(judge.chats()) == 2
    assert problem in judge.chats()[1]["messages"][-1]["content"]


@pytest.mark.parametrize(
    ("reply", "counts"),
    [
        ("3\t2\t1\tGood", ClaimCounts(3, 2, 1, "Good")),
        (" 3 \t 2 \t 2 \t  Good  ", ClaimCounts(3, 2, 2, "Good")),
        ("3.0\t2\t1\tGood", ClaimCounts(3, 2, 1, "Good")),
        ("Let me count.\n3\t2\t1\tGood", ClaimCounts(3, 2, 1, "Good")),
        ("```\n3\t2\t1\tGood\n```", ClaimCounts(3, 2, 1, "Good")),
        ("3\t2\t1\tGood\tand more", ClaimCounts(3, 2, 1, "Good\tand more")),
    ],
)
def test_claim_counts_parser_accepts_usable_replies(reply: str, counts: ClaimCounts) -> None:
    assert parse_claim_counts(reply) == counts


def test_empty_last_value_is_still_a_value() -> None:
    assert parse_claim_counts("1\t1\t0\t") == ClaimCounts(1, 1, 0, "")


def test_claim_counts_parser_rejects_an_empty_reply() -> None:
    with pytest.raises(ReplyError, match="found at most 0"):
        parse_claim_counts("  \n ")


@pytest.mark.parametrize(
    ("reference_answer", "actual_answer", "blank"),
    [
        ("OSLO T1", "   ", "actual_answer"),
        (" \n", "OSLO T1", "reference_answer"),
        ("", "", "reference_answer, actual_answer"),
    ],
)
def test_blank_answer_is_an_error_without_a_call(
    reference_answer: str,
    actual_answer: str,
    blank: str,
) -> None:
    judge = ScriptedJudge()
    reference, responses = answer_item(reference_answer, actual_answer)

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "answer_correctness"))

    assert result["answer_eval_error"] == f"{blank} is blank; not sent to the judge"
    assert judge.count() == 0


@pytest.mark.parametrize(
    ("reference_answer", "actual_answer"), [(None, "OSLO T1"), ("OSLO T1", None)]
)
def test_answer_correctness_is_absent_without_both_answers(
    reference_answer: str | None,
    actual_answer: str | None,
) -> None:
    judge = ScriptedJudge()
    reference, responses = answer_item(reference_answer, actual_answer)

    [result] = run_scripted(judge, reference, responses, only(judge_config(), "answer_correctness"))

    assert llm_keys(result) == []
    assert judge.count() == 0


def test_disabled_answer_correctness_makes_no_call() -> None:
    judge = ScriptedJudge()
    reference, responses = answer_item("OSLO T1", "OSLO T1")

    [result] = run_scripted(judge, reference, responses, only(judge_config()))

    assert llm_keys(result) == []
    assert judge.count() == 0


CUSTOM_PROMPT = (
    "Grade {{strictly}}.\nQ: {question}\nR: {reference_answer}\nA: {actual_answer}\n"
    "Reply: reference claims, actual claims, matching claims, reason (tab-separated)."
)


def test_answer_correctness_prompt_from_the_config_is_sent() -> None:
    judge = ScriptedJudge(responder=lambda body: "2\t1\t1\tone of two")
    reference, responses = answer_item("OSLO T1, OSLO T2", "OSLO T1 {not a placeholder}")
    config = {
        **only(judge_config(), "answer_correctness"),
        "answer_correctness": {"prompt": CUSTOM_PROMPT},
    }

    [result] = run_scripted(judge, reference, responses, config)

    [body] = judge.chats()
    assert task(body) == (
        "Grade {strictly}.\n"
        f"Q: {QUESTION}\n"
        "R: OSLO T1, OSLO T2\n"
        "A: OSLO T1 {not a placeholder}\n"
        "Reply: reference claims, actual claims, matching claims, reason (tab-separated)."
    )
    assert (result["answer_recall"], result["answer_precision"]) == pytest.approx((0.5, 1.0))
    assert result["answer_correctness_reason"] == "one of two"


@pytest.mark.parametrize(
    ("template", "message"),
    [
        (
            "Q {question} R {reference_answer}",
            "prompt must use exactly {question}, {reference_answer} and {actual_answer}: "
            "missing {actual_answer}",
        ),
        (
            "{question} {reference_answer} {actual_answer} {contexts}",
            "prompt must use exactly {question}, {reference_answer} and {actual_answer}: "
            "unknown {contexts}",
        ),
        (
            "{question} {answer}",
            "prompt must use exactly {question}, {reference_answer} and {actual_answer}: "
            "missing {actual_answer}, {reference_answer}; unknown {answer}",
        ),
        (
            "{} {question} {reference_answer} {actual_answer}",
            "prompt must use exactly {question}, {reference_answer} and {actual_answer}: "
            "unknown {}",
        ),
        (
            "{question} {reference_answer} {actual_answer",
            "prompt is not a valid template: expected '}' before end of string",
        ),
    ],
    ids=["missing", "unknown", "both", "positional", "unclosed"],
)
def test_answer_correctness_prompt_placeholders_are_validated(template: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config({"answer_correctness": {"prompt": template}})

    error = caught.value
    assert error.field == "answer_correctness.prompt"
    assert str(error) == f"<config>: answer_correctness.prompt: {message}"
    assert "\n" not in str(error)


def test_answer_correctness_prompt_with_literal_braces_is_valid() -> None:
    config = load_config({"answer_correctness": {"prompt": CUSTOM_PROMPT}})

    assert config.section("answer_correctness", AnswerCorrectnessConfig).prompt == CUSTOM_PROMPT


@pytest.mark.parametrize(
    "template",
    [
        "{question:>{width}} {reference_answer} {actual_answer}",
        "{question!x} {reference_answer} {actual_answer}",
        "{question:d} {reference_answer} {actual_answer}",
    ],
    ids=["nested-placeholder", "conversion", "format-spec"],
)
def test_answer_correctness_prompt_that_cannot_be_formatted_is_a_config_error(
    template: str,
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config({"answer_correctness": {"prompt": template}})

    assert caught.value.field == "answer_correctness.prompt"


def test_aggregates_count_failed_answer_metrics() -> None:
    def responder(body: dict[str, Any]) -> str | None:
        return "nonsense" if "Broken" in task(body) else None

    judge = ScriptedJudge(responder=responder)
    reference = dataset(
        question("q1", answer="OSLO T1", text=QUESTION),
        question("q2", answer="Broken", text=QUESTION),
        question("q3", text=QUESTION),
    )
    responses = [response(f"q{i}", actual_answer="OSLO T1") for i in (1, 2, 3)]
    config = only(judge_config(), "answer_correctness")

    results = run_scripted(judge, reference, responses, config)
    micro = compute_aggregates(results, config)["micro"]

    assert micro["answer_f1"]["mean"] == pytest.approx(1.0)
    coverage = micro["coverage"]["answer_f1"]
    assert coverage == {"scored": 1, "failed": 1, "skipped": 1, "failed_reason": ANY}
    assert coverage["failed_reason"] == results[1]["answer_eval_error"]
