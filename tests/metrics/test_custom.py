"""Custom evaluations (docs/metrics.md): outputs decoded from the judge's tab-separated reply,
the prompt, missing inputs and malformed replies, config errors, selection by name and
aggregates, against the scripted judge."""

from __future__ import annotations

import json
import math
from typing import Any
from unittest.mock import ANY

import pytest

from graphrag_eval import ConfigError, compute_aggregates, load_config
from graphrag_eval.llm.prompts import prompt
from graphrag_eval.llm.replies import decode_value
from metrics.scripted_judge import (
    ScriptedJudge,
    judge_config,
    only,
    replying,
    run_scripted,
    selecting,
    task,
)

from builders import contexts, dataset, question, response, step

Config = dict[str, Any]

QUESTION = "Which transformers are in substation Oslo?"
# The marker of the custom evaluation prompt, for responders that answer it only.
CUSTOM = "values separated by tab characters, in this order"


def answer_item(
    reference_answer: str | None, actual_answer: str | None, text: str = QUESTION
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    fields = {} if actual_answer is None else {"actual_answer": actual_answer}
    return (
        dataset(question("q1", answer=reference_answer, text=text)),
        [response("q1", **fields)],
    )


def run_one(judge: ScriptedJudge, config: Config) -> dict[str, Any]:
    """The result of one question and its response, judged by ``judge``."""
    reference = dataset(question("q1", answer="OSLO T1, OSLO T2", text=QUESTION))
    responses = [response("q1", actual_answer="OSLO T1 and OSLO T2")]
    [result] = run_scripted(judge, reference, responses, config)
    return result


# ------------------------------------------------------------------- custom evaluations

REVIEW = {
    "name": "review",
    "inputs": ["question", "actual_answer"],
    "instructions": "Review the answer.",
    "outputs": {"review_score": "1-5", "review_comment": "one sentence"},
}


def with_custom(config: Config, *evaluations: dict[str, Any]) -> Config:
    return {**only(config), "custom_evaluations": list(evaluations)}


def test_custom_evaluation_outputs_are_decoded_from_the_reply() -> None:
    judge = ScriptedJudge(responder=replying(CUSTOM, '4\t"fine"'))
    reference, responses = answer_item(None, "OSLO T1")

    [result] = run_scripted(judge, reference, responses, with_custom(judge_config(), REVIEW))

    assert result["review_score"] == 4
    assert result["review_comment"] == "fine"
    assert result["review_cost"] > 0
    assert "review_error" not in result


def test_custom_evaluation_prompt_has_instructions_inputs_and_outputs() -> None:
    judge = ScriptedJudge(responder=replying(CUSTOM, "4\tfine"))
    reference, responses = answer_item(None, "OSLO T1")

    run_scripted(judge, reference, responses, with_custom(judge_config(), REVIEW))

    [body] = judge.chats()
    assert task(body) == prompt("custom_evaluation").format(
        instructions="Review the answer.",
        inputs=f"Question:\n{QUESTION}\n\nActual answer:\nOSLO T1",
        count=2,
        outputs="1. review_score: 1-5\n2. review_comment: one sentence",
    )


def test_custom_evaluation_shows_the_chosen_parts_of_the_named_steps() -> None:
    judge = ScriptedJudge(responder=replying(CUSTOM, "true"))
    reference = dataset(question("q1", text=QUESTION))
    responses = [
        response(
            "q1",
            [
                step("sparql_query", "{}", args={"query": "SELECT ?t"}),
                step("retrieval", contexts(("1", "OSLO T1")), args={"query": "oslo"}),
            ],
        )
    ]
    evaluation = {
        "name": "query_check",
        "inputs": ["actual_steps"],
        "instructions": "Is the query sensible?",
        "outputs": {"query_ok": "true or false"},
        "steps_name": "sparql_query",
        "steps_keys": ["args"],
    }

    [result] = run_scripted(judge, reference, responses, with_custom(judge_config(), evaluation))

    assert result["query_ok"] is True
    shown = task(judge.chats()[0]).split("Actual steps:\n", 1)[1].split("\n\nReply", 1)[0]
    assert json.loads(shown) == [{"args": {"query": "SELECT ?t"}}]


def test_custom_evaluation_with_a_missing_input_sets_outputs_to_null() -> None:
    judge = ScriptedJudge()
    evaluation = {**REVIEW, "inputs": ["reference_answer", "actual_answer"]}
    reference, responses = answer_item(None, "OSLO T1")

    [result] = run_scripted(judge, reference, responses, with_custom(judge_config(), evaluation))

    assert result["review_score"] is None
    assert result["review_comment"] is None
    assert result["review_error"] == "missing input: reference_answer"
    assert "review_cost" not in result
    assert judge.count() == 0


def test_custom_evaluation_with_a_malformed_reply_sets_outputs_to_null() -> None:
    judge = ScriptedJudge(responder=replying(CUSTOM, "Four, and it reads fine."))
    reference, responses = answer_item(None, "OSLO T1")

    [result] = run_scripted(judge, reference, responses, with_custom(judge_config(), REVIEW))

    assert (result["review_score"], result["review_comment"]) == (None, None)
    assert result["review_error"] == (
        "malformed judge reply (after one re-ask): expected one line of 2 tab-separated "
        "values, found at most 1"
    )
    assert len(judge.chats()) == 2


THREE = {
    **REVIEW,
    "outputs": {"review_score": "1-5", "review_comment": "one sentence", "review_ok": "bool"},
}


def test_outputs_a_short_line_leaves_out_are_asked_again_in_one_follow_up() -> None:
    def short_first(body: dict[str, Any]) -> str | None:
        text = task(body)
        if CUSTOM not in text:
            return None
        return "4\tfine" if "3. review_ok" in text else "true"

    judge = ScriptedJudge(responder=short_first)
    reference, responses = answer_item(None, "OSLO T1")

    [result] = run_scripted(judge, reference, responses, with_custom(judge_config(), THREE))

    assert (result["review_score"], result["review_comment"], result["review_ok"]) == (
        4,
        "fine",
        True,
    )
    assert "review_error" not in result
    first, again = (task(body) for body in judge.chats())
    assert "exactly one line of 1 values" in again
    assert "1. review_ok: bool" in again
    assert "review_score" not in again
    assert "2. review_comment: one sentence" in first


def test_outputs_never_judged_are_null_and_the_error_says_which() -> None:
    def short_then_nothing(body: dict[str, Any]) -> str | None:
        text = task(body)
        if CUSTOM not in text:
            return None
        return "4\tfine" if "3. review_ok" in text else "  "  # the follow-up: blank

    judge = ScriptedJudge(responder=short_then_nothing)
    reference, responses = answer_item(None, "OSLO T1")
    config = with_custom(judge_config(), THREE)

    [result] = run_scripted(judge, reference, responses, config)

    assert (result["review_score"], result["review_comment"], result["review_ok"]) == (
        4,
        "fine",
        None,
    )
    assert result["review_error"] == "2 of 3 outputs judged; not judged: review_ok"
    assert result["review_cost"] > 0
    assert len(judge.chats()) == 3  # the call, the follow-up and its re-ask
    micro = compute_aggregates([result], config)["micro"]
    assert micro["review_score"]["mean"] == 4


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("4", 4),
        ("0.5", 0.5),
        ("true", True),
        ("null", None),
        ("[1, 2]", [1, 2]),
        ('{"a": 1}', {"a": 1}),
        ('"quoted"', "quoted"),
        ("plain words", "plain words"),
        ("", ""),
    ],
)
def test_custom_values_are_json_decoded_where_they_are_json(text: str, value: Any) -> None:
    assert decode_value(text) == value


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity"])
def test_custom_values_that_are_not_strict_json_stay_text(text: str) -> None:
    value = decode_value(text)

    assert not (isinstance(value, float) and not math.isfinite(value))


@pytest.mark.parametrize(
    ("evaluations", "message"),
    [
        (
            [{**REVIEW, "outputs": {"answer_f1": "my own f1"}}],
            "custom_evaluations[0] (review): key 'answer_f1' is already used by a built-in "
            "metric or another evaluation",
        ),
        (
            [{**REVIEW, "name": "answer_eval"}],
            "custom_evaluations[0] (answer_eval): key 'answer_eval_error' is already used by "
            "a built-in metric or another evaluation",
        ),
        (
            [{**REVIEW, "outputs": {"steps_score": "x"}}],
            "custom_evaluations[0] (review): key 'steps_score' is already used by a built-in "
            "metric or another evaluation",
        ),
        (
            [REVIEW, {**REVIEW, "name": "second"}],
            "custom_evaluations[1] (second): key 'review_score' is already used by a built-in "
            "metric or another evaluation",
        ),
    ],
    ids=["output", "error-key", "steps-key", "two-evaluations"],
)
def test_custom_output_names_may_not_collide(
    evaluations: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config({"custom_evaluations": evaluations})

    assert str(caught.value) == f"<config>: {message}"


def test_custom_evaluation_with_step_inputs_needs_steps_name_and_keys() -> None:
    evaluation = {**REVIEW, "inputs": ["actual_steps"]}

    with pytest.raises(ConfigError) as caught:
        load_config({"custom_evaluations": [evaluation]})

    assert str(caught.value) == (
        "<config>: custom_evaluations.0: step inputs need steps_name and steps_keys"
    )


# ------------------------------------------------------------------ selection by name

# One output only, so that a reply of one value is well-formed.
SCORED_REVIEW = {
    "name": "review",
    "inputs": ["question", "actual_answer"],
    "instructions": "Review the answer.",
    "outputs": {"review_score": "1-5"},
}
TONE = {**SCORED_REVIEW, "name": "tone", "outputs": {"tone_score": "1-5"}}


@pytest.mark.parametrize(
    "name", ["factual_accuracy", "ragas_score", "answer_classification", "semantic_similarity"]
)
def test_custom_evaluation_may_not_take_a_metrics_name(name: str) -> None:
    evaluation = {**SCORED_REVIEW, "name": name, "outputs": {"my_output": "x"}}

    with pytest.raises(ConfigError) as caught:
        load_config({"custom_evaluations": [evaluation]})

    assert str(caught.value) == (
        f"<config>: custom_evaluations[0]: the name '{name}' is already a metric's"
    )


def test_custom_evaluation_is_selected_by_name() -> None:
    judge = ScriptedJudge(responder=lambda body: "4" if "tab characters" in task(body) else None)
    config = selecting(judge_config(), "review", custom_evaluations=[SCORED_REVIEW, TONE])

    result = run_one(judge, config)

    assert result["review_score"] == 4
    assert not [key for key in result if key.startswith("tone")]
    assert judge.count() == 1


def test_misspelt_custom_evaluation_name_gets_a_suggestion() -> None:
    with pytest.raises(ConfigError, match=r"unknown metric 'reveiw' \(did you mean 'review'\?\)"):
        load_config({"metrics": ["reveiw"], "custom_evaluations": [SCORED_REVIEW]})


# -------------------------------------------------------------------------- aggregates


def test_aggregates_include_custom_outputs_with_coverage() -> None:
    judge = ScriptedJudge(responder=replying(CUSTOM, "4\tfine"))
    evaluation = {**REVIEW, "inputs": ["reference_answer", "actual_answer"]}
    reference = dataset(
        question("q1", answer="OSLO T1", text=QUESTION), question("q2", text=QUESTION)
    )
    responses = [response("q1", actual_answer="OSLO T1"), response("q2", actual_answer="T2")]
    config = with_custom(judge_config(), evaluation)

    results = run_scripted(judge, reference, responses, config)
    micro = compute_aggregates(results, config)["micro"]

    assert micro["review_score"] == {"sum": 4, "mean": 4, "median": 4, "min": 4, "max": 4}
    coverage = micro["coverage"]["review_score"]
    assert coverage == {"scored": 1, "failed": 1, "skipped": 0, "failed_reason": ANY}
    assert coverage["failed_reason"] == results[1]["review_error"]
    assert micro["review_cost"]["sum"] == results[0]["review_cost"]
    assert "review_comment" not in micro  # text is not aggregated as a number
