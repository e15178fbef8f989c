"""The metric registry: the metrics registered in code, by entry points and by the config
(``custom_evaluations``), which of them a config selects, and the output keys they declare
(docs/extending.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from graphrag_eval.config.model import (
    EvaluationConfig,
    add_section,
    remove_section,
    set_section_loader,
)
from graphrag_eval.errors import ConfigError
from graphrag_eval.metrics.base import DerivedMetric, Metric, OutputKey, StepMetric
from graphrag_eval.metrics.plugins import entry_point_metrics

__all__ = [
    "builtins_registered",
    "configured_metrics",
    "declared_outputs",
    "explicitly_selected",
    "metrics_for",
    "register_config_metrics",
    "register_metric",
    "registered_metrics",
    "reserved_keys",
    "selectable_metric_names",
    "selected_names",
    "unregister_metric",
]

_REGISTRY: dict[str, Metric] = {}
ConfigMetrics = Callable[[EvaluationConfig], Iterable[Metric]]
_CONFIG_METRICS: list[ConfigMetrics] = []
_plugins_loaded = False
_builtins_registered = False


def register_metric(metric: Metric) -> Metric:
    """Register (or replace, by name) a metric; returns it. Registration order is output
    order: the built-in metrics first (:mod:`graphrag_eval.metrics.builtin`, registered when
    the package is imported), then those of entry points (``graphrag_eval.metrics``, loaded
    on first use), then the user's (docs/extending.md)."""
    _load_plugins()
    if metric.section is not None and metric.settings_model is not None:
        add_section(metric.section, metric.settings_model)
    _REGISTRY[metric.name] = metric
    return metric


def unregister_metric(name: str) -> None:
    """Remove a registered metric by name (no error if absent)."""
    _load_plugins()
    metric = _REGISTRY.pop(name, None)
    section = metric.section if metric is not None else None
    if section is not None and all(other.section != section for other in _REGISTRY.values()):
        remove_section(section)


def registered_metrics() -> tuple[Metric, ...]:
    """All registered metrics, in registration order."""
    _load_plugins()
    return tuple(_REGISTRY.values())


def builtins_registered() -> None:
    """Called once the built-in metrics are registered: entry points may load from now on."""
    global _builtins_registered
    _builtins_registered = True
    set_section_loader(_load_plugins)  # a config read from now on knows every section


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded or not _builtins_registered:  # after the built-ins
        return
    _plugins_loaded = True  # before loading: a plugin may register itself
    try:
        for metric in entry_point_metrics(Metric):
            register_metric(metric)
    except ConfigError:
        _plugins_loaded = False  # the next use says so again
        raise


def register_config_metrics(make: ConfigMetrics) -> ConfigMetrics:
    """Register a source of metrics a config defines (the custom evaluations)."""
    if make not in _CONFIG_METRICS:
        _CONFIG_METRICS.append(make)
    return make


def configured_metrics(config: EvaluationConfig) -> tuple[Metric, ...]:
    """The registered metrics and those the config defines (custom evaluations)."""
    return (
        *registered_metrics(),
        *(metric for make in _CONFIG_METRICS for metric in make(config)),
    )


def selected_names(config: EvaluationConfig) -> frozenset[str] | None:
    """The metric names ``metrics:`` asks for, with what they depend on (``None``: no list,
    the defaults run)."""
    if config.metrics is None:
        return None
    every = configured_metrics(config)
    if config.metrics == "all":
        return frozenset(metric.name for metric in every)
    by_name = {metric.name: metric for metric in every}
    names = set(config.metrics)
    pending = list(names)
    while pending:
        metric = by_name.get(pending.pop())
        for dependency in metric.depends_on if metric is not None else ():
            if dependency not in names:
                names.add(dependency)
                pending.append(dependency)
    return frozenset(names)


def metrics_for(config: EvaluationConfig) -> tuple[Metric, ...]:
    """The metrics that run under ``config``: the ones ``metrics:`` selects (by default the
    default metrics of docs/metrics.md), that are enabled; derived metrics last."""
    selected = selected_names(config)
    chosen = [
        metric
        for metric in configured_metrics(config)
        if metric.enabled(config)
        and (metric.always or (metric.default if selected is None else metric.name in selected))
    ]
    return (
        *(metric for metric in chosen if not isinstance(metric, DerivedMetric)),
        *(metric for metric in chosen if isinstance(metric, DerivedMetric)),
    )


def explicitly_selected(config: EvaluationConfig) -> frozenset[str]:
    """Names of the metrics the user asked for by name (or with ``all``): these must have
    what they need."""
    return selected_names(config) or frozenset()


def selectable_metric_names() -> tuple[str, ...]:
    """The built-in names ``metrics:`` accepts."""
    return tuple(metric.name for metric in registered_metrics())


def declared_outputs(metrics: Iterable[Metric] | None = None) -> dict[str, tuple[OutputKey, bool]]:
    """``key -> (declaration, is step-level)`` for every key the metrics write."""
    declared: dict[str, tuple[OutputKey, bool]] = {}
    for metric in registered_metrics() if metrics is None else metrics:
        for output in metric.outputs:
            if not output.error_keys:
                output = dataclasses.replace(output, error_keys=metric.error_keys)
            declared[output.name] = (output, isinstance(metric, StepMetric))
    return declared


IDENTITY_KEYS = frozenset(
    {
        "template_id",
        "question_id",
        "question_text",
        "reference_answer",
        "reference_steps",
        "status",
        "error",
        "actual_answer",
        "actual_steps",
        "input_errors",
        "missing_response",
        "evaluation_error",
        "skipped",
    }
)
"""Result keys that identify an item or copy its inputs: never metrics."""


def reserved_keys() -> frozenset[str]:
    """Every key a built-in metric or the result itself writes (custom outputs may not)."""
    keys = set(IDENTITY_KEYS)
    for metric in registered_metrics():
        keys.update(output.name for output in metric.outputs)
        keys.update(metric.error_keys)
    return frozenset(keys)
