"""The public surface: a change to it must be deliberate (httpx's test_exported_members)."""

from __future__ import annotations

import inspect

import graphrag_eval

EXPECTED = {
    "ConfigError",
    "EvaluationConfig",
    "GraphragEvalError",
    "InputError",
    "__version__",
    "aggregates_frame",
    "arun_evaluation",
    "average_precision",
    "compare_results",
    "comparison_frame",
    "compute_aggregates",
    "load_config",
    "load_reference",
    "load_responses",
    "load_results",
    "load_run",
    "recall_at_k",
    "results_frame",
    "run_evaluation",
    "write_comparison",
    "write_report",
}


def test_all_is_exactly_the_public_surface() -> None:
    assert set(graphrag_eval.__all__) == EXPECTED


def test_every_exported_name_exists() -> None:
    for name in graphrag_eval.__all__:
        assert hasattr(graphrag_eval, name), name


def test_no_other_public_module_attributes() -> None:
    public = {
        name
        for name, value in vars(graphrag_eval).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert public <= EXPECTED | {"annotations"}


def test_seed_signatures() -> None:
    run = inspect.signature(graphrag_eval.run_evaluation)
    assert list(run.parameters) == ["reference_qas", "chat_responses", "config"]
    assert run.parameters["config"].default is None
    aggregates = inspect.signature(graphrag_eval.compute_aggregates)
    assert list(aggregates.parameters) == ["evaluation_results", "config"]
    assert list(inspect.signature(graphrag_eval.recall_at_k).parameters) == [
        "relevant",
        "retrieved",
        "k",
    ]
    assert list(inspect.signature(graphrag_eval.average_precision).parameters) == [
        "relevant",
        "retrieved",
    ]
    assert inspect.iscoroutinefunction(graphrag_eval.arun_evaluation)


def test_errors_form_one_tree() -> None:
    assert issubclass(graphrag_eval.InputError, graphrag_eval.GraphragEvalError)
    assert issubclass(graphrag_eval.ConfigError, graphrag_eval.GraphragEvalError)


def test_reporting_is_imported_only_when_asked_for() -> None:
    import subprocess
    import sys

    code = (
        "import sys, graphrag_eval; "
        "assert 'graphrag_eval.report.html' not in sys.modules; "
        "assert 'numpy' not in sys.modules; "
        "graphrag_eval.write_report; "
        "assert 'graphrag_eval.report.html' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_unknown_attribute_is_an_attribute_error() -> None:
    import pytest

    with pytest.raises(AttributeError, match="no_such_name"):
        _ = graphrag_eval.no_such_name  # type: ignore[attr-defined]


METRICS_EXTENSION_API = {
    "ENTRY_POINT_GROUP",
    "Aggregation",
    "DerivedMetric",
    "Failed",
    "FailureKind",
    "Input",
    "ItemContext",
    "ItemMetric",
    "KeyKind",
    "Metric",
    "Outcome",
    "OutputKey",
    "Placement",
    "Scored",
    "Section",
    "Services",
    "Skipped",
    "SparqlStore",
    "StepMetric",
    "Unit",
    "json_reply",
    "messages",
    "or_failed",
    "register_metric",
    "registered_metrics",
    "unregister_metric",
}


def test_the_metric_extension_api_is_deliberate() -> None:
    """What docs/extending.md builds a metric from."""
    import graphrag_eval.metrics

    assert set(graphrag_eval.metrics.__all__) == METRICS_EXTENSION_API
    assert graphrag_eval.metrics.ENTRY_POINT_GROUP == "graphrag_eval.metrics"


STEP_RULES_API = {
    "ENTRY_POINT_GROUP",
    "GIVEN",
    "StepRule",
    "register_step_rule",
    "step_rules",
    "unregister_step_rule",
}

CONFIG_API = {
    "AggregationConfig",
    "BUNDLED_MODEL",
    "BertScoreConfig",
    "CacheConfig",
    "ConfigSource",
    "CustomEvaluationConfig",
    "EmbeddingConfig",
    "EvaluationConfig",
    "GenerationConfig",
    "LLMConfig",
    "ModelPrice",
    "StepsConfig",
    "mask_secrets",
    "parse_config",
    "secret_values",
}


def test_the_step_rule_and_config_surfaces_are_deliberate() -> None:
    """What docs/steps.md (rules for your own tools) and the config's users import."""
    import graphrag_eval.config
    import graphrag_eval.steps

    assert set(graphrag_eval.steps.__all__) == STEP_RULES_API
    assert set(graphrag_eval.config.__all__) == CONFIG_API
    for module in (graphrag_eval.steps, graphrag_eval.config):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"
