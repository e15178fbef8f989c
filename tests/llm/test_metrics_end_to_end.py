"""Judged metrics end to end, through the real client and the HTTP judge server
(docs/llm.md): calls shared through the cache and in flight, and what failed or malformed
replies make of a metric. The unit tests of each metric are in tests/metrics/, on the
scripted judge."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from graphrag_eval import run_evaluation

from builders import dataset, question, response
from judge_server import Faults, JudgeServer

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
OSLO_CONTEXTS = ["Transformer OSLO T1 is in substation Oslo.", "The weather is sunny."]


def schema_of(body: Body) -> str | None:
    """The structured-output schema a chat request asks for."""
    return ((body.get("response_format") or {}).get("json_schema") or {}).get("name")


def chats(server: JudgeServer) -> list[Body]:
    """The chat request bodies."""
    return [r.body for r in server.requests if r.path.endswith("chat/completions")]


def only(config: Config, *enabled: str) -> Config:
    """``config`` with only the named built-in LLM metrics enabled (of the seed's three)."""
    sections = ("answer_correctness", "answer_relevance", "retrieval_answer")
    return {**config, **{name: {"enabled": name in enabled} for name in sections}}


def selecting(config: Config, *metrics: str) -> Config:
    """``config`` running only ``metrics``."""
    return {**config, "metrics": list(metrics)}


def run_one(
    config: Config,
    answer: str | None = "OSLO T1 and OSLO T2",
    *,
    retrieved: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """The result of one question and its response."""
    fields: dict[str, Any] = {}
    if answer is not None:
        fields["actual_answer"] = answer
    if retrieved is not None:
        fields["retrieved_contexts"] = list(retrieved)
    reference = dataset(question("q1", answer=REFERENCE, text=QUESTION))
    [result] = run_evaluation(reference, [response("q1", **fields)], config)
    return result


def new_metric_keys(result: dict[str, Any]) -> list[str]:
    return [key for key in result if key.startswith(NEW_METRIC_PREFIXES)]


# ------------------------------------------------------------------------ shared calls


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


def test_answer_relevance_and_ragas_answer_relevance_share_one_judge_call(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    """They ask the same question at the same moment: one judge call and one embeddings
    request serve both (the second waits for the first and reads the cache)."""
    config = selecting(make_config(server), "answer_relevance", "ragas_answer_relevance")

    result = run_one(config, "OSLO T1 and OSLO T2")

    assert server.count("chat/completions") == 1
    assert server.count("embeddings") == 2  # one request, sent again to confirm its dimension
    assert result["ragas_answer_relevance"] == pytest.approx(100 * result["answer_relevance"])
    assert result["ragas_answer_relevance_reason"] == result["answer_relevance_reason"]


# ---------------------------------------------------------------- failed and malformed


def test_failed_embeddings_are_the_relevance_error(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge()
    broken = judge(faults=Faults(server_error=1.0))
    reference = dataset(question("q1", answer=None, text=QUESTION))
    responses = [response("q1", actual_answer="OSLO T1")]
    config = make_config(server, embedding={"base_url": broken.url}, max_retries=0)

    [result] = run_evaluation(reference, responses, only(config, "answer_relevance"))

    assert result["answer_relevance_error"] == (
        "embedding call failed: 500 Error code: 500 - The server had an error (1 attempt)"
    )
    assert "answer_relevance" not in result


@pytest.mark.parametrize(
    ("limit", "question_text"),
    [(5, QUESTION), (None, QUESTION + " and" * 11_000)],
    ids=["configured-limit", "default-limit-of-the-model"],
)
def test_a_text_over_the_embedding_models_limit_is_not_sent(
    server: JudgeServer, make_config: MakeConfig, limit: int | None, question_text: str
) -> None:
    """The text is refused before any embeddings request, and the metric says why; the
    default limit is the model's (8,191 tokens for text-embedding-3-small)."""
    reference = dataset(question("q1", answer=None, text=question_text))
    responses = [response("q1", actual_answer="OSLO T1")]
    embedding = {"max_input_tokens": limit} if limit is not None else {}
    config = make_config(server, embedding=embedding)

    [result] = run_evaluation(reference, responses, only(config, "answer_relevance"))

    expected = limit if limit is not None else 8191
    assert "answer_relevance" not in result
    assert (
        f"over the limit of {expected} (llm.embedding.max_input_tokens"
        in (result["answer_relevance_error"])
    )
    assert server.count("embeddings") == 0


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


def test_ragas_score_is_absent_when_no_component_was_computed(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(faults=Faults(malformed=1.0))
    config = selecting(make_config(server), "ragas_score")

    result = run_one(config, retrieved=OSLO_CONTEXTS)

    assert "ragas_score" not in result
    assert "ragas_score_error" not in result
