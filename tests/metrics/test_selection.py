"""Which metrics run (docs/metrics.md, docs/architecture.md "Plan and run"): the seed's
defaults, ``metrics:`` selection, metrics that need a judge the config lacks, and items that
are never judged, against the scripted judge."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from graphrag_eval import ConfigError, load_config, run_evaluation
from graphrag_eval.metrics.registry import metrics_for, registered_metrics
from metrics.scripted_judge import (
    ScriptedJudge,
    judge_config,
    llm_keys,
    only,
    run_scripted,
    schema_of,
    selecting,
)

from builders import contexts, dataset, question, response, sparql, sparql_ref, step

Config = dict[str, Any]

QUESTION = "Which transformers are in substation Oslo?"
REFERENCE = "OSLO T1, OSLO T2"
RAGAS = (
    "ragas_faithfulness",
    "ragas_context_precision",
    "ragas_context_recall",
    "ragas_answer_relevance",
)
NEW_METRIC_PREFIXES = ("ragas_", "factual_accuracy", "answer_classification")
OSLO_CONTEXTS = ["Transformer OSLO T1 is in substation Oslo.", "The weather is sunny."]
REVIEW = {
    "name": "review",
    "inputs": ["question", "actual_answer"],
    "instructions": "Review the answer.",
    "outputs": {"review_score": "1-5", "review_comment": "one sentence"},
}


def item(
    answer: str | None = "OSLO T1 and OSLO T2",
    *,
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
        dataset(question("q1", answer=REFERENCE, text=QUESTION)),
        [response("q1", steps, **fields)],
    )


def run_one(
    judge: ScriptedJudge, config: Config, answer: str | None = "OSLO T1 and OSLO T2", **options: Any
) -> dict[str, Any]:
    """The result of one question and its response, judged by ``judge``."""
    reference, responses = item(answer, **options)
    [result] = run_scripted(judge, reference, responses, config)
    return result


def new_metric_keys(result: dict[str, Any]) -> list[str]:
    return [key for key in result if key.startswith(NEW_METRIC_PREFIXES)]


def without_judge(config: Config) -> Config:
    """``config`` with an embedding model but no judge (no ``llm.generation``)."""
    llm = {key: value for key, value in config["llm"].items() if key != "generation"}
    return {**config, "llm": llm}


# -------------------------------------------------------------------------- selection

SEED_DEFAULTS = ["answer_correctness", "answer_relevance", "retrieval_answer", "retrieval_context"]


def names(config: Config) -> list[str]:
    return [metric.name for metric in metrics_for(load_config(config))]


def test_without_a_metrics_list_only_the_seed_readme_metrics_run() -> None:
    assert names({}) == [*SEED_DEFAULTS[:2], "steps_score", *SEED_DEFAULTS[2:], "usage"]


def test_without_a_metrics_list_a_run_computes_none_of_the_new_metrics() -> None:
    judge = ScriptedJudge()
    retrieval = step("retrieval", contexts(("1", "OSLO T1 is in Oslo.")), step_id="r1")

    result = run_one(judge, judge_config(), "OSLO T1", steps=[retrieval])

    assert new_metric_keys(result) == []
    assert "answer_f1" in result
    assert "answer_relevance" in result
    assert "retrieval_answer_recall" in result["actual_steps"][0]
    asked = {schema_of(body) for body in judge.chats()}
    assert not asked & {"ClaimList", "FactualAccuracyReply", "Classification", "StatementList"}


def test_selecting_one_metric_runs_only_it_and_the_bookkeeping() -> None:
    judge = ScriptedJudge()
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
    config = selecting(judge_config(), "factual_accuracy")

    [result] = run_scripted(judge, reference, responses, config)

    assert names(config) == ["factual_accuracy", "steps_score", "usage"]
    assert result["factual_accuracy_grade"] == "A"
    assert result["steps_score"] == 1
    assert result["input_tokens"] == 10
    assert not [key for key in result if key.startswith(("answer_", "ragas_"))]
    assert not [key for key in result["actual_steps"][0] if key.startswith("retrieval_")]
    assert [schema_of(body) for body in judge.chats()] == ["FactualAccuracyReply"]


def test_selecting_ragas_score_runs_its_four_components() -> None:
    judge = ScriptedJudge()
    config = selecting(judge_config(), "ragas_score")

    result = run_one(judge, config, retrieved=OSLO_CONTEXTS)

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

    config = {"metrics": "all", "custom_evaluations": [review]}
    selected = names(config)

    # every metric enabled by default (sparql_test_suite_accuracy is off until its copies are set)
    enabled = [m.name for m in registered_metrics() if m.enabled(load_config(config))]
    assert sorted(selected) == sorted([*enabled, "review"])
    assert "sparql_test_suite_accuracy" in names(
        {**config, "sparql": {"data": ["g.ttl"], "test_suite": {"copies": 2}}}
    )
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


def test_selected_metric_without_a_judge_is_an_error_with_a_given_engine_too() -> None:
    judge = ScriptedJudge()
    config = selecting(without_judge(judge_config()), "factual_accuracy")
    reference, responses = item()

    with pytest.raises(ConfigError, match="metric 'factual_accuracy' needs an LLM judge"):
        run_scripted(judge, reference, responses, config)
    assert judge.count() == 0


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


# ------------------------------------------------------------------------ no LLM at all


def test_llm_metrics_are_skipped_entirely_without_an_llm() -> None:
    # Every LLM metric applies to this item; with no model configured none runs, and no
    # client is even built (one would need OPENAI_API_KEY, which is unset here).
    reference, responses = item(
        "OSLO T1",
        steps=[
            step(
                "retrieval",
                contexts(("1", "Transformer OSLO T1.")),
                step_id="r1",
                args={"query": "oslo"},
            )
        ],
    )
    config = {"custom_evaluations": [REVIEW]}

    [result] = run_evaluation(reference, responses, config)

    assert result["status"] == "success"
    assert llm_keys(result) == []
    assert not any(key.startswith("review") for key in result)


def test_error_responses_are_not_judged() -> None:
    judge = ScriptedJudge()
    reference = dataset(question("q1", answer="OSLO T1", text=QUESTION))
    responses = [response("q1", status="error", error="the agent crashed")]

    [result] = run_scripted(
        judge, reference, responses, {**only(judge_config()), "custom_evaluations": [REVIEW]}
    )

    assert result["status"] == "error"
    assert llm_keys(result) == []
    assert judge.count() == 0
