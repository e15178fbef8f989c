"""G-Eval factual accuracy (docs/metrics.md): the weighted mean of the judged criteria, its
grade, blank answers, and out-of-range or malformed replies, against the scripted judge."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_eval import compute_aggregates
from graphrag_eval.llm.prompts import prompt
from graphrag_eval.metrics.factual_accuracy import grade
from metrics.scripted_judge import (
    Body,
    ScriptedJudge,
    answering,
    judge_config,
    run_scripted,
    schema_of,
    selecting,
    task,
)

from builders import dataset, evaluate_cli, question, read_records, response, write_judge_config
from judge_server import JudgeServer

Config = dict[str, Any]

QUESTION = "Which transformers are in substation Oslo?"
REFERENCE = "OSLO T1, OSLO T2"
MALFORMED = "malformed judge reply (after one re-ask): "


def run_one(
    judge: ScriptedJudge,
    answer: str | None = "OSLO T1 and OSLO T2",
    *,
    reference_answer: str | None = REFERENCE,
    **sections: Any,
) -> dict[str, Any]:
    """The result of one question and its response, judged by ``judge`` with factual
    accuracy alone (``sections`` added to the config)."""
    config = selecting(judge_config(), "factual_accuracy", **sections)
    fields = {} if answer is None else {"actual_answer": answer}
    reference = dataset(question("q1", answer=reference_answer, text=QUESTION))
    [result] = run_scripted(judge, reference, [response("q1", **fields)], config)
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


def is_reask(body: Body) -> bool:
    return any(m["role"] == "assistant" for m in body["messages"])


def first_then(bad: dict[str, Any], good: dict[str, Any] | None) -> Callable[[Body], Any]:
    """Reply ``bad`` to a request, and ``good`` to its re-ask (``None``: ``bad`` again)."""
    return lambda body: good if good is not None and is_reask(body) else bad


def test_factual_accuracy_is_our_weighted_mean_not_the_judges() -> None:
    reply = factual_reply(90, 50, 20, final_score=12)  # the judge's own total is ignored
    judge = answering(FactualAccuracyReply=reply)

    result = run_one(judge)

    assert result["factual_accuracy_percentage"] == pytest.approx(0.5 * 90 + 0.3 * 50 + 0.2 * 20)
    assert result["factual_accuracy_grade"] == "B"
    assert result["factual_accuracy_correctness"] == 90
    assert result["factual_accuracy_completeness"] == 50
    assert result["factual_accuracy_consistency"] == 20
    assert result["factual_accuracy_reason"] == (
        "Mostly right.\ncorrectness 90: facts\ncompleteness 50: coverage\nconsistency 20: coherence"
    )
    assert result["factual_accuracy_cost"] > 0
    assert judge.count() == 1


def test_factual_accuracy_prompt_shows_question_and_both_answers() -> None:
    judge = ScriptedJudge()

    result = run_one(judge, "OSLO T1")

    [body] = judge.chats()
    assert schema_of(body) == "FactualAccuracyReply"
    assert task(body) == prompt("factual_accuracy").format(
        question=QUESTION, reference_answer=REFERENCE, actual_answer="OSLO T1"
    )
    # The rule judge: half the ground truth is stated; consistency 100.
    assert result["factual_accuracy_percentage"] == pytest.approx(0.5 * 50 + 0.3 * 50 + 0.2 * 100)


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        ({"correctness": 2, "completeness": 1, "consistency": 1}, (2 * 90 + 50 + 20) / 4),
        ({"correctness": 1, "completeness": 0, "consistency": 0}, 90.0),
        ({"consistency": 0.8}, (0.5 * 90 + 0.3 * 50 + 0.8 * 20) / 1.6),
    ],
    ids=["renormalised", "correctness-only", "one-changed"],
)
def test_factual_accuracy_weights_are_configurable(
    weights: dict[str, float], expected: float
) -> None:
    judge = answering(FactualAccuracyReply=factual_reply(90, 50, 20))

    result = run_one(judge, factual_accuracy={"weights": weights})

    assert result["factual_accuracy_percentage"] == pytest.approx(expected)
    assert result["factual_accuracy_grade"] == grade(expected)


def test_blank_answer_has_zero_factual_accuracy_without_a_call() -> None:
    judge = ScriptedJudge()

    result = run_one(judge, "  \n")

    assert result["factual_accuracy_percentage"] == pytest.approx(0.0)
    assert result["factual_accuracy_grade"] == "E"
    for criterion in ("correctness", "completeness", "consistency"):
        assert result[f"factual_accuracy_{criterion}"] == pytest.approx(0.0)
    assert judge.count() == 0


def test_blank_reference_answer_is_a_factual_accuracy_error_without_a_call() -> None:
    judge = ScriptedJudge()

    result = run_one(judge, reference_answer=" ")

    assert result["factual_accuracy_error"] == "reference_answer is blank; not sent to the judge"
    assert "factual_accuracy_percentage" not in result
    assert judge.count() == 0


@pytest.mark.parametrize(
    ("percentage", "letter"),
    [
        (100.0, "A"),
        (80.0, "A"),
        (79.999, "B"),
        (79.99, "B"),
        (60.0, "B"),
        (59.999, "C"),
        (40.0, "C"),
        (39.999, "D"),
        (20.0, "D"),
        (19.999, "E"),
        (19.99, "E"),
        (0.0, "E"),
    ],
)
def test_grade_thresholds(percentage: float, letter: str) -> None:
    assert grade(percentage) == letter


@pytest.mark.parametrize(
    ("scores", "percentage", "letter"),
    [
        ((90, 70, 100), 86.0, "A"),
        ((60, 40, 80), 58.0, "C"),
        ((80, 80, 80), 80.0, "A"),
        ((79, 81, 80), 79.8, "B"),
        ((60, 60, 60), 60.0, "B"),
        ((40, 40, 40), 40.0, "C"),
        ((20, 20, 20), 20.0, "D"),
        ((19, 20, 21), 19.7, "E"),
        pytest.param((31, 97, 77), 60.0, "B", id="exactly-60-mixed"),
        pytest.param((7, 97, 37), 40.0, "C", id="exactly-40-mixed"),
        pytest.param((0, 62, 7), 20.0, "D", id="exactly-20-mixed"),
    ],
)
def test_grade_of_judged_scores_at_and_around_the_thresholds(
    scores: tuple[int, int, int],
    percentage: float,
    letter: str,
) -> None:
    judge = answering(FactualAccuracyReply=factual_reply(*scores))

    result = run_one(judge)

    assert result["factual_accuracy_percentage"] == pytest.approx(percentage)
    assert result["factual_accuracy_grade"] == letter


FRACTIONS_PROBLEM = (
    "the scores (correctness 0.058, completeness 0.974, consistency 0.5) are all at most 1, "
    "a 0-1 scale: each score must be an integer from 0 to 100"
)


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (factual_reply(120, 50, 50), "correctness.score must be from 0 to 100, got 120"),
        (factual_reply(50, -5, 50), "completeness.score must be from 0 to 100, got -5"),
        (factual_reply(50, 50, 100.5), "consistency.score must be from 0 to 100, got 100.5"),
        # A judge that answers in fractions (0.058-0.974) is off the asked 0-100 scale: the
        # value fails instead of getting grade E.
        (factual_reply(0.058, 0.974, 0.5), FRACTIONS_PROBLEM),
    ],
    ids=["above-100", "negative", "just-above-100", "a-0-1-scale"],
)
def test_scores_off_the_0_100_scale_are_reasked_once_then_an_error(
    reply: dict[str, Any], problem: str
) -> None:
    judge = answering(FactualAccuracyReply=reply)

    result = run_one(judge)

    assert result["factual_accuracy_error"] == MALFORMED + problem
    assert not {"factual_accuracy_percentage", "factual_accuracy_grade"} & set(result)
    bodies = judge.chats()
    assert len(bodies) == 2
    assert problem in bodies[1]["messages"][-1]["content"]


@pytest.mark.parametrize(
    "scores",
    [(1, 1, 1), (1, 0, 0), (0.5, 0.5, 0.5)],
    ids=["all-one", "one-and-zeros", "halves"],
)
def test_scores_all_at_most_1_count_as_the_0_1_scale(scores: tuple[float, ...]) -> None:
    judge = answering(FactualAccuracyReply=factual_reply(*scores))

    result = run_one(judge)

    assert "a 0-1 scale" in result["factual_accuracy_error"]
    assert judge.count() == 2


@pytest.mark.parametrize(
    ("scores", "percentage"),
    [((0, 0, 0), 0.0), ((0, 0, 2), 0.4), ((1, 0, 90), 18.5), ((0.5, 3, 0), 1.15)],
    ids=["all-zero", "one-above-1", "high-consistency", "a-fraction-and-3"],
)
def test_low_scores_on_the_0_100_scale_are_accepted(
    scores: tuple[float, float, float], percentage: float
) -> None:
    """All 0 is 0 on any scale; one score above 1 places the reply on the 0-100 scale."""
    judge = answering(FactualAccuracyReply=factual_reply(*scores))

    result = run_one(judge)

    assert result["factual_accuracy_percentage"] == pytest.approx(percentage)
    assert result["factual_accuracy_grade"] == "E"
    assert judge.count() == 1


def test_non_finite_factual_accuracy_score_is_an_error() -> None:
    text = json.dumps(factual_reply(50, 50, 50)).replace('"score": 50', '"score": NaN', 1)
    judge = answering(FactualAccuracyReply=text)

    result = run_one(judge)

    assert result["factual_accuracy_error"] == MALFORMED + (
        "correctness.score must be from 0 to 100, got nan"
    )


@pytest.mark.parametrize(
    ("first", "reasked", "percentage", "letter"),
    [
        ((120, 50, 50), (100, 50, 50), 50 + 15 + 10, "B"),
        ((0.9, 0.5, 1), (90, 50, 100), 45 + 15 + 20, "A"),
    ],
    ids=["out-of-range", "a-0-1-scale"],
)
def test_factual_accuracy_succeeds_when_the_reask_is_on_the_0_100_scale(
    first: tuple[float, float, float],
    reasked: tuple[float, float, float],
    percentage: float,
    letter: str,
) -> None:
    replies = first_then(factual_reply(*first), factual_reply(*reasked))
    judge = answering(FactualAccuracyReply=replies)

    result = run_one(judge)

    assert result["factual_accuracy_percentage"] == pytest.approx(percentage)
    assert result["factual_accuracy_grade"] == letter
    assert "factual_accuracy_error" not in result
    assert judge.count() == 2


def test_factual_accuracy_reply_missing_a_criterion_is_malformed() -> None:
    reply = factual_reply(50, 50, 50)
    del reply["consistency"]
    judge = answering(FactualAccuracyReply=reply)

    result = run_one(judge)

    assert result["factual_accuracy_error"] == MALFORMED + "consistency: Field required"


def test_grade_distribution_lists_a_to_e_in_order_with_zeros() -> None:
    def scores(body: Body) -> dict[str, Any]:
        score = int(task(body).split("Candidate: score ")[1].split()[0])
        return factual_reply(score, score, score)

    judge = answering(FactualAccuracyReply=scores)
    reference = [
        *dataset(
            *(question(f"q{i}", answer=REFERENCE, text=QUESTION) for i in (1, 2, 3)),
            template_id="t1",
        ),
        *dataset(question("q4", answer=REFERENCE, text=QUESTION), template_id="t2"),
    ]
    given = {"q1": 85, "q2": 90, "q3": 10, "q4": 45}
    responses = [response(qid, actual_answer=f"score {s}") for qid, s in given.items()]
    config = selecting(judge_config(), "factual_accuracy")

    aggregates = compute_aggregates(run_scripted(judge, reference, responses, config), config)

    micro = aggregates["micro"]["factual_accuracy_grade"]
    assert list(micro.items()) == [("A", 2), ("B", 0), ("C", 1), ("D", 0), ("E", 1)]
    t2 = aggregates["per_template"]["t2"]["factual_accuracy_grade"]
    assert list(t2.items()) == [("A", 0), ("B", 0), ("C", 1), ("D", 0), ("E", 0)]
    assert aggregates["micro"]["factual_accuracy_percentage"]["mean"] == pytest.approx(57.5)


def test_a_judge_on_a_0_1_scale_fails_every_value_through_the_cli(tmp_path: Path) -> None:
    """End to end over HTTP (tests/judge_server.py) with the command line: a judge that
    scores in fractions fails every factual accuracy value, after one re-ask each, and the
    aggregates count them as failed; no grade E is given."""

    def fractions(body: Body) -> str | None:
        if schema_of(body) != "FactualAccuracyReply":
            return None
        return json.dumps(factual_reply(0.058, 0.974, 0.5))

    reference = tmp_path / "reference.json"
    reference.write_text(
        json.dumps(dataset(*(question(f"q{i}", answer=REFERENCE, text=QUESTION) for i in range(3))))
    )
    responses = tmp_path / "responses.jsonl"
    responses.write_text(
        "".join(json.dumps(response(f"q{i}", actual_answer="OSLO T1")) + "\n" for i in range(3))
    )
    out = tmp_path / "out"
    with JudgeServer(responder=fractions) as server:
        only_factual = {"metrics": ["factual_accuracy"]}
        config = write_judge_config(tmp_path, server.url, only_factual, cache={"enabled": False})
        code = evaluate_cli(reference, responses, "-c", config, "-o", out, "-q")
        chats = server.count("/v1/chat/completions")

    assert code == 3  # evaluation incomplete: every value of the metric failed
    assert chats == 6  # each question asked once and re-asked once
    for result in read_records(out):
        assert result["factual_accuracy_error"] == MALFORMED + FRACTIONS_PROBLEM
        assert "factual_accuracy_grade" not in result
    aggregates = yaml.safe_load((out / "aggregates.yaml").read_text())
    micro = aggregates["micro"]
    for key in ("factual_accuracy_percentage", "factual_accuracy_grade"):
        assert micro["coverage"][key]["failed"] == 3
        assert micro["coverage"][key]["scored"] == 0
        assert micro["coverage"][key]["failed_reason"] == MALFORMED + FRACTIONS_PROBLEM
    assert (micro.get("factual_accuracy_grade") or {}).get("E", 0) == 0
