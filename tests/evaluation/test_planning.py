"""The plan (docs/metrics.md, "How metrics are planned"): which metrics run on a question,
decided from what each metric declares before any call, and the config's metric names."""

from __future__ import annotations

from typing import Any

import pytest

from graphrag_eval import ConfigError, run_evaluation
from graphrag_eval.config import EvaluationConfig
from graphrag_eval.config.model import parse_config
from graphrag_eval.evaluation.planning import (
    NO_CONTEXTS,
    NO_EMBEDDING,
    NO_JUDGE,
    NO_REFERENCE_STEPS,
    NO_STORE,
    plan_item,
    skip_reason,
)
from graphrag_eval.inputs import ReferenceQuestion, Response, parse_reference, parse_responses
from graphrag_eval.metrics.base import (
    Input,
    ItemContext,
    ItemMetric,
    Outcome,
    OutputKey,
    Scored,
    Skipped,
)
from graphrag_eval.metrics.loading import load_config
from graphrag_eval.metrics.registry import register_metric, registered_metrics, unregister_metric
from graphrag_eval.metrics.services import need

from builders import dataset, question, response


def by_name(name: str) -> Any:
    return next(metric for metric in registered_metrics() if metric.name == name)


def one_item(
    answer: str | None = None, steps: Any = None, **fields: Any
) -> tuple[ReferenceQuestion, Response]:
    [reference] = parse_reference(dataset(question("q1", answer=answer, groups=steps)))
    responses = parse_responses([response("q1", **fields)])
    return reference, responses.responses["q1"]


def test_a_missing_input_is_the_reason_before_a_missing_service() -> None:
    reference, answered = one_item(answer=None, actual_answer="Oslo")

    reason = skip_reason(by_name("answer_correctness"), (), reference, answered)

    assert reason == "needs reference_answer and actual_answer"


def test_a_missing_service_is_the_reason_when_the_inputs_are_there() -> None:
    reference, answered = one_item(answer="Oslo", actual_answer="Oslo")

    assert skip_reason(by_name("answer_correctness"), (), reference, answered) == NO_JUDGE
    assert skip_reason(by_name("answer_relevance"), {"judge"}, reference, answered) == (
        NO_EMBEDDING
    )
    assert skip_reason(by_name("answer_correctness"), {"judge"}, reference, answered) is None


def test_context_metrics_need_a_retrieval_not_a_nonempty_one() -> None:
    reference, without = one_item(answer="Oslo", actual_answer="Oslo")
    _, retrieved_nothing = one_item(answer="Oslo", actual_answer="Oslo", retrieved_contexts=[])
    faithfulness = by_name("ragas_faithfulness")

    assert skip_reason(faithfulness, {"judge"}, reference, without) == NO_CONTEXTS
    assert skip_reason(faithfulness, {"judge"}, reference, retrieved_nothing) is None


def test_the_plan_keeps_the_metric_order_and_gives_each_skip_its_reason() -> None:
    reference, answered = one_item(answer="Oslo", actual_answer="Oslo")
    metrics = [by_name(name) for name in ("steps_score", "answer_correctness", "usage")]

    plan = plan_item(metrics, {"judge"}, reference, answered)

    assert [metric.name for metric in plan.runs] == ["answer_correctness", "usage"]
    assert [(metric.name, skipped) for metric, skipped in plan.skipped] == [
        ("steps_score", Skipped("the question has no reference steps"))
    ]


class _NeedsAnAnswer(ItemMetric):
    """Scores only items with an actual answer; scoring one without would be a bug."""

    name = "needs_an_answer"
    inputs = (Input.ACTUAL_ANSWER,)
    outputs = (OutputKey("answer_length"),)
    error_keys = ("needs_an_answer_error",)

    async def score(self, context: ItemContext) -> Outcome:
        answer = context.response.actual_answer
        assert answer is not None, "the plan runs this metric only with an actual answer"
        return Scored({"answer_length": len(answer)})


@pytest.fixture
def needs_an_answer() -> Any:
    register_metric(_NeedsAnAnswer())
    yield
    unregister_metric("needs_an_answer")


@pytest.mark.usefixtures("needs_an_answer")
def test_a_metric_is_not_scored_on_an_item_that_lacks_what_it_declares() -> None:
    reference = dataset(question("q1", answer="Oslo"), question("q2", answer="Oslo"))
    responses = [response("q1", actual_answer="Oslo"), response("q2", actual_answer=None)]

    first, second = run_evaluation(reference, responses)

    assert first["answer_length"] == 4
    assert "answer_length" not in second
    assert "needs_an_answer_error" not in second


def test_config_shape_and_metric_names_are_checked_apart() -> None:
    config = EvaluationConfig(metrics=["answer_corectness"])

    assert parse_config(config) is config  # its shape is valid
    with pytest.raises(ConfigError) as caught:
        load_config(config)

    assert str(caught.value) == (
        "<config>: metrics[0]: unknown metric 'answer_corectness' "
        "(did you mean 'answer_correctness'?)"
    )


def test_a_metric_name_error_names_the_config_file(tmp_path: Any) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("metrics: [answer_correctness, answer_correctness]\n", encoding="utf-8")

    with pytest.raises(ConfigError) as caught:
        load_config(path)

    assert str(caught.value) == f"{path}: metrics: a metric is listed more than once"


def test_a_missing_service_is_a_run_wide_skip_and_a_missing_input_is_not() -> None:
    reference, answered = one_item(answer="Oslo", actual_answer="Oslo")
    metrics = [by_name(name) for name in ("steps_score", "answer_correctness")]

    plan = plan_item(metrics, (), reference, answered)

    assert [skipped for _, skipped in plan.skipped] == [
        Skipped(NO_REFERENCE_STEPS),
        Skipped(NO_JUDGE, run_wide=True),
    ]


class _QueriesTheStore(ItemMetric):
    """Needs the SPARQL store: the row count of the store's answer to the reference query."""

    name = "store_rows"
    needs = frozenset({"store"})
    default = True
    outputs = (OutputKey("store_rows"),)
    error_keys = ("store_rows_error",)

    async def score(self, context: ItemContext) -> Outcome:
        store = need(context.services.store, "store")
        results = await store.query("SELECT * WHERE { ?s ?p ?o }", metric=self.name)
        return Scored({"store_rows": len(results["results"]["bindings"])})


@pytest.fixture
def store_metric() -> Any:
    register_metric(_QueriesTheStore())
    yield
    unregister_metric("store_rows")


@pytest.mark.usefixtures("store_metric")
def test_a_metric_that_needs_a_store_is_skipped_without_one_or_refused_by_name() -> None:
    reference, answered = one_item(answer="Oslo", actual_answer="Oslo")

    assert skip_reason(by_name("store_rows"), {"judge"}, reference, answered) == NO_STORE
    [result] = run_evaluation(dataset(question("q1", answer="Oslo")), [response("q1")])
    assert "store_rows" not in result and "store_rows_error" not in result
    with pytest.raises(ConfigError, match="metric 'store_rows' needs a SPARQL store"):
        run_evaluation(
            dataset(question("q1", answer="Oslo")), [response("q1")], {"metrics": ["store_rows"]}
        )
