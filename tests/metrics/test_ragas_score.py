"""``ragas_answer_relevance`` and ``ragas_score`` (docs/metrics.md): the score's weighted mean,
its worked examples and weights, which components a run has, and error samples counted as
zero, against the scripted judge."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest

from graphrag_eval import ConfigError, compute_aggregates, load_config
from graphrag_eval.metrics.ragas import RagasConfig, ragas_score
from metrics.scripted_judge import (
    ScriptedJudge,
    judge_config,
    run_scripted,
    selecting,
    task,
)

from builders import dataset, question, response
from judge_server import embed_text

QUESTION = "Which transformers are in substation Oslo?"
REFERENCE = "OSLO T1, OSLO T2"
RAGAS = (
    "ragas_faithfulness",
    "ragas_context_precision",
    "ragas_context_recall",
    "ragas_answer_relevance",
)
OSLO_CONTEXTS = ["Transformer OSLO T1 is in substation Oslo.", "The weather is sunny."]


def run_one(
    judge: ScriptedJudge,
    config: dict[str, Any],
    answer: str | None = "OSLO T1 and OSLO T2",
    *,
    retrieved: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """The result of one question and its response, judged by ``judge``."""
    fields: dict[str, Any] = {}
    if answer is not None:
        fields["actual_answer"] = answer
    if retrieved is not None:
        fields["retrieved_contexts"] = list(retrieved)
    reference = dataset(question("q1", answer=REFERENCE, text=QUESTION))
    [result] = run_scripted(judge, reference, [response("q1", **fields)], config)
    return result


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


# ----------------------------------------------------------------- ragas_answer_relevance


def test_ragas_answer_relevance_is_answer_relevance_times_100() -> None:
    judge = ScriptedJudge()
    answer = "Which transformers are in substation Oslo"
    config = selecting(judge_config(), "ragas_answer_relevance")

    result = run_one(judge, config, answer)

    assert result["ragas_answer_relevance"] == pytest.approx(
        100 * expected_relevance(QUESTION, answer)
    )
    assert result["ragas_answer_relevance"] > 80
    assert result["ragas_answer_relevance_reason"] == "\n".join(
        f"{stem} {answer}?" for stem in ("What is", "Which are", "Tell me")
    )
    assert result["ragas_answer_relevance_cost"] > 0
    assert "answer_relevance" not in result


def test_ragas_answer_relevance_asks_for_its_own_number_of_questions() -> None:
    judge = ScriptedJudge()
    config = selecting(
        judge_config(),
        "answer_relevance",
        "ragas_answer_relevance",
        ragas={"questions": 5},
    )

    result = run_one(judge, config, "OSLO T1")

    asked = sorted(task(body).split(" different")[0] for body in judge.chats())
    assert asked == ["Write 3", "Write 5"]
    assert len(result["ragas_answer_relevance_reason"].splitlines()) == 5
    assert len(result["answer_relevance_reason"].splitlines()) == 3


def test_noncommittal_answer_has_zero_ragas_answer_relevance() -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "ragas_answer_relevance")

    result = run_one(judge, config, "I'm not sure.")

    assert result["ragas_answer_relevance"] == pytest.approx(0.0)
    assert judge.count("embeddings") == 0


# ------------------------------------------------------------ ragas_score, worked examples

DEFAULT_WEIGHTS = load_config({}).section("ragas", RagasConfig).weights.model_dump()


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


def test_ragas_score_of_a_run_without_contexts_is_the_answer_relevance() -> None:
    """The reference's llm_with_context row: no retrieval at all."""
    judge = ScriptedJudge()
    config = selecting(judge_config(), "ragas_score")

    result = run_one(judge, config, "OSLO T1")

    assert not {"ragas_faithfulness", "ragas_context_precision", "ragas_context_recall"} & set(
        result
    )
    assert result["ragas_score"] == pytest.approx(result["ragas_answer_relevance"])


def test_ragas_score_of_a_run_that_retrieved_nothing() -> None:
    """The reference's basic_search row: retrieval returned nothing, so three zeros."""
    judge = ScriptedJudge()
    config = selecting(judge_config(), "ragas_score")

    result = run_one(judge, config, "OSLO T1", retrieved=[])

    assert [result[name] for name in RAGAS[:3]] == pytest.approx([0.0, 0.0, 0.0])
    assert result["ragas_score"] == pytest.approx(0.3 * result["ragas_answer_relevance"])


def test_ragas_score_of_a_full_run_is_the_weighted_mean() -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "ragas_score")

    result = run_one(judge, config, "OSLO T1 and OSLO T3", retrieved=OSLO_CONTEXTS)

    assert [result[name] for name in RAGAS[:3]] == pytest.approx([50.0, 50.0, 50.0])
    assert result["ragas_score"] == pytest.approx(
        0.3 * 50 + 0.2 * 50 + 0.2 * 50 + 0.3 * result["ragas_answer_relevance"]
    )


def test_ragas_score_weights_from_the_config() -> None:
    judge = ScriptedJudge()
    weights = {**dict.fromkeys(DEFAULT_WEIGHTS, 0), "faithfulness": 1}
    config = selecting(judge_config(), "ragas_score", ragas={"weights": weights})

    result = run_one(judge, config, "OSLO T1 and OSLO T3", retrieved=["OSLO T1 is in Oslo."])

    assert result["ragas_faithfulness"] == pytest.approx(50.0)
    assert result["ragas_score"] == pytest.approx(50.0)


def test_ragas_score_of_a_response_without_an_answer_uses_the_context_metrics() -> None:
    """A retrieval-only system: precision and recall need no answer; faithfulness and answer
    relevance do."""
    judge = ScriptedJudge()
    config = selecting(judge_config(), "ragas_score")

    result = run_one(judge, config, None, retrieved=OSLO_CONTEXTS)

    assert "ragas_faithfulness" not in result
    assert "ragas_answer_relevance" not in result
    assert (result["ragas_context_precision"], result["ragas_context_recall"]) == pytest.approx(
        (50.0, 50.0)
    )
    assert result["ragas_score"] == pytest.approx(50.0)


def test_error_samples_count_as_zero_for_the_new_metrics_when_asked() -> None:
    judge = ScriptedJudge()
    reference = dataset(
        question("q1", answer=REFERENCE, text=QUESTION),
        question("q2", answer=REFERENCE, text=QUESTION),
    )
    responses = [
        response("q1", actual_answer="OSLO T1 and OSLO T2", retrieved_contexts=OSLO_CONTEXTS),
        response("q2", status="error", error="the agent crashed"),
    ]
    config = selecting(
        judge_config(),
        "factual_accuracy",
        "ragas_score",
        aggregation={"error_samples": "zero"},
    )
    results = run_scripted(judge, reference, responses, config)

    micro = compute_aggregates(results, config)["micro"]

    for key in ("factual_accuracy_percentage", "ragas_faithfulness", "ragas_score"):
        assert micro[key]["mean"] == pytest.approx(results[0][key] / 2)
        assert micro["coverage"][key]["scored"] == 2
