"""Answer classification (docs/metrics.md): CORRECT or WRONG from the judge, DON'T KNOW from the
uncertainty phrases without a call, against the scripted judge."""

from __future__ import annotations

from typing import Any

import pytest

from graphrag_eval import compute_aggregates, load_config
from graphrag_eval.llm.prompts import prompt
from graphrag_eval.metrics.answer_classification import (
    DEFAULT_NON_ANSWERS,
    DEFAULT_UNCERTAINTY_PHRASES,
    AnswerClassificationConfig,
    uncertainty,
)
from metrics.scripted_judge import (
    Body,
    ScriptedJudge,
    answering,
    judge_config,
    run_scripted,
    selecting,
    task,
)

from builders import dataset, question, response

QUESTION = "Which transformers are in substation Oslo?"
REFERENCE = "OSLO T1, OSLO T2"
MALFORMED = "malformed judge reply (after one re-ask): "

Config = dict[str, Any]


def run_one(judge: ScriptedJudge, config: Config, answer: str) -> dict[str, Any]:
    """The result of one question and its response, judged by ``judge``."""
    reference = dataset(question("q1", answer=REFERENCE, text=QUESTION))
    [result] = run_scripted(judge, reference, [response("q1", actual_answer=answer)], config)
    return result


@pytest.mark.parametrize(
    ("answer", "label", "reason"),
    [
        ("OSLO T1 and OSLO T2", "CORRECT", "states the ground truth"),
        ("OSLO T1", "WRONG", "misses the ground truth"),
    ],
)
def test_answer_is_classified_by_the_judge(answer: str, label: str, reason: str) -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "answer_classification")

    result = run_one(judge, config, answer)

    assert result["answer_classification"] == label
    assert result["answer_classification_reason"] == reason
    assert result["answer_classification_cost"] > 0
    [body] = judge.chats()
    assert task(body) == prompt("answer_classification").format(
        question=QUESTION, reference_answer=REFERENCE, actual_answer=answer
    )


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        ("I don't know.", "i don't know"),
        ("I don\u2019t know which transformers.", "i don't know"),
        ("I DO NOT KNOW", "i do not know"),
        ("The owner is unknown", "unknown"),
        ("There is no information about Oslo.", "no information"),
        ("Sorry, I am unable to answer that.", "unable to answer"),
        ("I don't have enough information.", "don't have enough information"),
        ("N/A.", "n/a"),
        ("none", "none"),
        (" Null ", "null"),
    ],
)
def test_uncertain_answer_is_dont_know_without_a_call(answer: str, phrase: str) -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "answer_classification")

    result = run_one(judge, config, answer)

    assert result["answer_classification"] == "DON'T KNOW"
    assert result["answer_classification_reason"] == f"the answer says '{phrase}'"
    assert result["answer_classification_cost"] == pytest.approx(0.0)
    assert judge.count() == 0


@pytest.mark.parametrize(
    "answer",
    [
        "No database was needed: OSLO T1 and OSLO T2.",
        "None of the others; OSLO T1 and OSLO T2 are there.",
        "Unknowns aside, OSLO T1 and OSLO T2.",
    ],
)
def test_phrases_inside_other_words_are_not_uncertainty(answer: str) -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "answer_classification")

    result = run_one(judge, config, answer)

    assert result["answer_classification"] == "CORRECT"
    assert judge.count() == 1


def test_blank_answer_is_wrong_without_a_call() -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "answer_classification")

    result = run_one(judge, config, "   ")

    assert result["answer_classification"] == "WRONG"
    assert result["answer_classification_reason"] == "the answer is blank"
    assert judge.count() == 0


def test_uncertainty_phrases_and_non_answers_are_configurable() -> None:
    judge = ScriptedJudge()
    reference = dataset(*(question(f"q{i}", answer=REFERENCE, text=QUESTION) for i in (1, 2, 3, 4)))
    answers = ["I have no idea.", "I don't know.", "-", "N/A"]
    responses = [response(f"q{i}", actual_answer=a) for i, a in enumerate(answers, start=1)]
    config = selecting(
        judge_config(),
        "answer_classification",
        answer_classification={"uncertainty_phrases": ["No  idea"], "non_answers": ["-"]},
    )

    results = run_scripted(judge, reference, responses, config)

    assert [r["answer_classification"] for r in results] == [
        "DON'T KNOW",
        "WRONG",  # the default phrases were replaced: judged
        "DON'T KNOW",
        "WRONG",  # so were the default non-answers
    ]
    assert judge.count() == 2


def test_uncertainty_phrases_are_the_references_list() -> None:
    settings = load_config({}).section("answer_classification", AnswerClassificationConfig)

    assert settings.uncertainty_phrases == [
        "i don't know",
        "i do not know",
        "unknown",
        "not sure",
        "cannot determine",
        "no information",
        "insufficient data",
        "unable to answer",
        "cannot answer",
        "don't have enough information",
        "not available",
        "no data",
    ]
    assert settings.non_answers == ["unknown", "n/a", "none", "null"]


@pytest.mark.parametrize("phrase", DEFAULT_UNCERTAINTY_PHRASES)
def test_each_reference_phrase_in_a_sentence_is_detected(phrase: str) -> None:
    answer = f"Well, {phrase.upper()}, sorry."

    assert uncertainty(answer, DEFAULT_UNCERTAINTY_PHRASES, DEFAULT_NON_ANSWERS) == phrase


@pytest.mark.parametrize(
    "answer",
    [
        "No database access was needed.",
        "The unknowns are listed.",
        "I am notsure.",
        "Information is available.",
        "none of them",
        "n/a for T1, but T2 is there",
    ],
)
def test_matching_is_by_whole_words(answer: str) -> None:
    assert uncertainty(answer, DEFAULT_UNCERTAINTY_PHRASES, DEFAULT_NON_ANSWERS) is None


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        ("I don\u2019t know", "i don't know"),
        ("I don't\n  know", "i don't know"),
        ("Data: not available!", "not available"),
        ('The status is "unknown".', "unknown"),
        ("(N/A)", "n/a"),
        ("'N/A'", "n/a"),
        ("Unknown.", "unknown"),
        pytest.param("\u2018I don\u2019t know\u2019", "i don't know"),
        pytest.param("The status is 'unknown'.", "unknown"),
        pytest.param("He said 'not sure'.", "not sure"),
    ],
)
def test_case_apostrophes_and_spacing_do_not_hide_uncertainty(answer: str, phrase: str) -> None:
    assert uncertainty(answer, DEFAULT_UNCERTAINTY_PHRASES, DEFAULT_NON_ANSWERS) == phrase


def test_classification_outside_the_two_classes_is_an_error() -> None:
    reply = {"classification": "MAYBE", "reason": "hard to say"}
    judge = answering(Classification=reply)
    config = selecting(judge_config(), "answer_classification", "factual_accuracy")

    result = run_one(judge, config, "OSLO T1 and OSLO T2")

    assert result["answer_classification_error"] == MALFORMED + (
        "classification: Input should be 'CORRECT' or 'WRONG'"
    )
    assert "answer_classification" not in result
    assert len(judge.chats("Classification")) == 2
    assert result["factual_accuracy_grade"] == "A"  # the other metric is still scored


def test_a_bad_reply_for_one_item_leaves_the_others_scored() -> None:
    def classify(body: Body) -> str | None:
        return '{"classification": "MAYBE", "reason": "?"}' if "OSLO T9" in task(body) else None

    judge = answering(Classification=classify)
    reference = dataset(
        question("q1", answer=REFERENCE, text=QUESTION),
        question("q2", answer=REFERENCE, text=QUESTION),
    )
    responses = [
        response("q1", actual_answer="OSLO T1 and OSLO T2"),
        response("q2", actual_answer="OSLO T9"),
    ]
    config = selecting(judge_config(), "answer_classification")

    first, second = run_scripted(judge, reference, responses, config)

    assert first["answer_classification"] == "CORRECT"
    assert "answer_classification_error" in second
    assert (first["status"], second["status"]) == ("success", "success")


def test_answer_class_counts_per_template_and_overall_with_zeros() -> None:
    judge = ScriptedJudge()
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
    config = selecting(judge_config(), "answer_classification")

    aggregates = compute_aggregates(run_scripted(judge, reference, responses, config), config)

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
