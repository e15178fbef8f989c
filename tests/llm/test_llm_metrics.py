"""The LLM-judged metrics (docs/metrics.md) against the rule-based judge server: answer relevance,
custom evaluations, and their aggregates. The unit tests of answer correctness and retrieval
answer are in tests/metrics/, on the scripted judge."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest

from graphrag_eval import ConfigError, compute_aggregates, load_config, run_evaluation
from graphrag_eval.llm.prompts import prompt
from graphrag_eval.llm.replies import decode_value

from builders import contexts, dataset, question, response, step
from judge_server import JudgeServer, embed_text

Config = dict[str, Any]
StartJudge = Callable[..., JudgeServer]
MakeConfig = Callable[..., Config]

QUESTION = "Which transformers are in substation Oslo?"

# Markers of each built-in prompt, for responders that answer one kind of call only.
RELEVANCE = "different questions that the answer below would be a good response to"
CUSTOM = "values separated by tab characters, in this order"


def task(body: dict[str, Any]) -> str:
    """The user message of a chat request."""
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def replying(marker: str, reply: str) -> Callable[[dict[str, Any]], str | None]:
    """A responder that answers ``reply`` to prompts containing ``marker`` (the rule judge
    answers the others)."""
    return lambda body: reply if marker in task(body) else None


def chats(server: JudgeServer, marker: str = "") -> list[dict[str, Any]]:
    """The chat request bodies whose prompt contains ``marker``."""
    return [
        r.body
        for r in server.requests
        if r.path.endswith("chat/completions") and marker in task(r.body)
    ]


def only(config: Config, *enabled: str) -> Config:
    """``config`` with only the named built-in LLM metrics enabled."""
    sections = ("answer_correctness", "answer_relevance", "retrieval_answer")
    return {**config, **{name: {"enabled": name in enabled} for name in sections}}


def answer_item(
    reference_answer: str | None, actual_answer: str | None, text: str = QUESTION
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    fields = {} if actual_answer is None else {"actual_answer": actual_answer}
    return (
        dataset(question("q1", answer=reference_answer, text=text)),
        [response("q1", **fields)],
    )


def retrieval_item(
    texts: list[str], reference_answer: str | None = "OSLO T1, OSLO T2"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    output = contexts(*((str(rank), text) for rank, text in enumerate(texts, start=1)))
    return (
        dataset(question("q1", answer=reference_answer, text=QUESTION)),
        [response("q1", [step("retrieval", output, step_id="r1", args={"query": "oslo"})])],
    )


def llm_keys(result: dict[str, Any]) -> list[str]:
    keys = [key for key in result if key.startswith(("answer_", "fluency"))]
    for step_result in result.get("actual_steps", ()):
        keys += [key for key in step_result if key.startswith("retrieval_answer")]
    return keys


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


def test_answer_relevance_is_the_mean_similarity_of_generated_questions(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    answer = "Which transformers are in substation Oslo"
    reference, responses = answer_item(None, answer)

    [result] = run_evaluation(reference, responses, only(make_config(server), "answer_relevance"))

    assert result["answer_relevance"] == pytest.approx(_expected_relevance(QUESTION, answer))
    assert result["answer_relevance"] > 0.8
    assert result["answer_relevance_reason"] == "\n".join(
        f"{stem} {answer}?" for stem in ("What is", "Which are", "Tell me")
    )
    assert result["answer_relevance_cost"] > 0


def test_unrelated_answer_has_low_relevance(server: JudgeServer, make_config: MakeConfig) -> None:
    answer = "Bananas ripen quickly"
    reference, responses = answer_item(None, answer)

    [result] = run_evaluation(reference, responses, only(make_config(server), "answer_relevance"))

    # Only the generated questions' stems ("Which are ...") share words with the question.
    assert result["answer_relevance"] == pytest.approx(_expected_relevance(QUESTION, answer))
    assert result["answer_relevance"] < 0.4


def test_noncommittal_answer_has_zero_relevance_without_embeddings(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    reference, responses = answer_item(None, "I don't know")

    [result] = run_evaluation(reference, responses, only(make_config(server), "answer_relevance"))

    assert result["answer_relevance"] == pytest.approx(0.0)
    assert result["answer_relevance_reason"].endswith("(the answer is non-committal)")
    assert server.count("embeddings") == 0


def test_answer_relevance_embeds_locally_without_an_embedding_endpoint(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    """With no llm.embedding, the bundled local model (the embeddings extra, installed with
    the dev extra) embeds the questions: the judge is asked, the endpoint never embeds."""
    reference, responses = answer_item(None, "OSLO T1")

    [result] = run_evaluation(reference, responses, make_config(server, embedding=None))

    assert 0.0 <= result["answer_relevance"] <= 1.0
    assert "answer_relevance_error" not in result
    assert server.count("chat/completions") >= 1
    assert server.count("embeddings") == 0


def test_answer_relevance_asks_for_the_configured_number_of_questions(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    reference, responses = answer_item(None, "OSLO T1")
    config = {**only(make_config(server), "answer_relevance"), "answer_relevance": {"questions": 5}}

    [result] = run_evaluation(reference, responses, config)

    assert "Write 5 different questions" in task(chats(server)[0])
    assert len(result["answer_relevance_reason"].splitlines()) == 5
    [embeddings] = [r.body for r in server.requests if r.path.endswith("embeddings")]
    assert len(embeddings["input"]) == 6  # the question and the five generated ones


def test_wrong_number_of_generated_questions_fails_after_one_reask(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    reply = json.dumps({"questions": ["Which transformers?", "  "], "noncommittal": False})
    server = judge(responder=replying(RELEVANCE, reply))
    reference, responses = answer_item(None, "OSLO T1")

    [result] = run_evaluation(reference, responses, only(make_config(server), "answer_relevance"))

    assert result["answer_relevance_error"] == (
        "malformed judge reply (after one re-ask): expected 3 questions, got 1"
    )
    assert "answer_relevance" not in result
    assert len(chats(server)) == 2


def test_failed_embeddings_are_the_relevance_error(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    from judge_server import Faults

    server = judge()
    broken = judge(faults=Faults(server_error=1.0))
    reference, responses = answer_item(None, "OSLO T1")
    config = make_config(server, embedding={"base_url": broken.url}, max_retries=0)

    [result] = run_evaluation(reference, responses, only(config, "answer_relevance"))

    assert result["answer_relevance_error"] == (
        "embedding call failed: 500 Error code: 500 - The server had an error (1 attempt)"
    )
    assert "answer_relevance" not in result


# ------------------------------------------------------------------- custom evaluations

REVIEW = {
    "name": "review",
    "inputs": ["question", "actual_answer"],
    "instructions": "Review the answer.",
    "outputs": {"review_score": "1-5", "review_comment": "one sentence"},
}


def with_custom(config: Config, *evaluations: dict[str, Any]) -> Config:
    return {**only(config), "custom_evaluations": list(evaluations)}


def test_custom_evaluation_outputs_are_decoded_from_the_reply(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(responder=replying(CUSTOM, '4\t"fine"'))
    reference, responses = answer_item(None, "OSLO T1")

    [result] = run_evaluation(reference, responses, with_custom(make_config(server), REVIEW))

    assert result["review_score"] == 4
    assert result["review_comment"] == "fine"
    assert result["review_cost"] > 0
    assert "review_error" not in result


def test_custom_evaluation_prompt_has_instructions_inputs_and_outputs(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(responder=replying(CUSTOM, "4\tfine"))
    reference, responses = answer_item(None, "OSLO T1")

    run_evaluation(reference, responses, with_custom(make_config(server), REVIEW))

    [body] = chats(server)
    assert task(body) == prompt("custom_evaluation").format(
        instructions="Review the answer.",
        inputs=f"Question:\n{QUESTION}\n\nActual answer:\nOSLO T1",
        count=2,
        outputs="1. review_score: 1-5\n2. review_comment: one sentence",
    )


def test_custom_evaluation_shows_the_chosen_parts_of_the_named_steps(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(responder=replying(CUSTOM, "true"))
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

    [result] = run_evaluation(reference, responses, with_custom(make_config(server), evaluation))

    assert result["query_ok"] is True
    shown = task(chats(server)[0]).split("Actual steps:\n", 1)[1].split("\n\nReply", 1)[0]
    assert json.loads(shown) == [{"args": {"query": "SELECT ?t"}}]


def test_custom_evaluation_with_a_missing_input_sets_outputs_to_null(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    evaluation = {**REVIEW, "inputs": ["reference_answer", "actual_answer"]}
    reference, responses = answer_item(None, "OSLO T1")

    [result] = run_evaluation(reference, responses, with_custom(make_config(server), evaluation))

    assert result["review_score"] is None
    assert result["review_comment"] is None
    assert result["review_error"] == "missing input: reference_answer"
    assert "review_cost" not in result
    assert server.count() == 0


def test_custom_evaluation_with_a_malformed_reply_sets_outputs_to_null(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(responder=replying(CUSTOM, "Four, and it reads fine."))
    reference, responses = answer_item(None, "OSLO T1")

    [result] = run_evaluation(reference, responses, with_custom(make_config(server), REVIEW))

    assert (result["review_score"], result["review_comment"]) == (None, None)
    assert result["review_error"] == (
        "malformed judge reply (after one re-ask): expected one line of 2 tab-separated "
        "values, found at most 1"
    )
    assert len(chats(server)) == 2


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


# -------------------------------------------------------------------------- aggregates


def test_aggregates_include_custom_outputs_with_coverage(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(responder=replying(CUSTOM, "4\tfine"))
    evaluation = {**REVIEW, "inputs": ["reference_answer", "actual_answer"]}
    reference = dataset(
        question("q1", answer="OSLO T1", text=QUESTION), question("q2", text=QUESTION)
    )
    responses = [response("q1", actual_answer="OSLO T1"), response("q2", actual_answer="T2")]
    config = with_custom(make_config(server), evaluation)

    results = run_evaluation(reference, responses, config)
    micro = compute_aggregates(results, config)["micro"]

    assert micro["review_score"] == {"sum": 4, "mean": 4, "median": 4, "min": 4, "max": 4}
    assert micro["coverage"]["review_score"] == {"scored": 1, "failed": 1, "skipped": 0}
    assert micro["review_cost"]["sum"] == results[0]["review_cost"]
    assert "review_comment" not in micro  # text is not aggregated as a number


def test_aggregates_count_failed_answer_metrics(judge: StartJudge, make_config: MakeConfig) -> None:
    def responder(body: dict[str, Any]) -> str | None:
        return "nonsense" if "Broken" in task(body) else None

    server = judge(responder=responder)
    reference = dataset(
        question("q1", answer="OSLO T1", text=QUESTION),
        question("q2", answer="Broken", text=QUESTION),
        question("q3", text=QUESTION),
    )
    responses = [response(f"q{i}", actual_answer="OSLO T1") for i in (1, 2, 3)]
    config = only(make_config(server), "answer_correctness")

    results = run_evaluation(reference, responses, config)
    micro = compute_aggregates(results, config)["micro"]

    assert micro["answer_f1"]["mean"] == pytest.approx(1.0)
    assert micro["coverage"]["answer_f1"] == {"scored": 1, "failed": 1, "skipped": 1}


# ------------------------------------------------------------------------ no LLM at all


def test_llm_metrics_are_skipped_entirely_without_an_llm() -> None:
    # Every LLM metric applies to this item; with no model configured none runs, and no
    # client is even built (one would need OPENAI_API_KEY, which is unset here).
    reference, responses = retrieval_item(["Transformer OSLO T1."])
    responses[0]["actual_answer"] = "OSLO T1"
    config = {"custom_evaluations": [REVIEW]}

    [result] = run_evaluation(reference, responses, config)

    assert result["status"] == "success"
    assert llm_keys(result) == []
    assert not any(key.startswith("review") for key in result)


def test_error_responses_are_not_judged(server: JudgeServer, make_config: MakeConfig) -> None:
    reference = dataset(question("q1", answer="OSLO T1", text=QUESTION))
    responses = [response("q1", status="error", error="the agent crashed")]

    [result] = run_evaluation(reference, responses, with_custom(make_config(server), REVIEW))

    assert result["status"] == "error"
    assert llm_keys(result) == []
    assert server.count() == 0
