"""The metric interface, outcomes as values, and the metric registry.

A metric looks at one item (the reference question, the response, and the step matching
computed for it) and returns an :data:`Outcome`: :class:`Scored` with the output keys it
produced, :class:`Skipped` when its inputs are missing, or :class:`Failed` with an error.
Failures are values, never exceptions and never NaN; they become ``<metric>_error`` keys
only at the output edge (:mod:`graphrag_eval.results.to_records`).

An :class:`ItemMetric` scores the item as a whole; a :class:`StepMetric` scores individual
actual steps (the ``retrieval_context_*`` metrics), and its keys are written on those steps.

Each metric declares what it cannot do without: the item :class:`Input` fields it reads
(``inputs``) and the services it calls (``needs``). :mod:`graphrag_eval.evaluation.planning` reads
these
declarations before any call and skips a metric whose inputs or services are missing, so a
metric's ``score`` may assume them (docs/metrics.md, "How metrics are planned").

Each metric declares its output keys (:class:`OutputKey`): how each aggregates (statistics,
label counts, or not at all), which error keys report its failure, and whether an error sample
counts as 0 under ``aggregation.error_samples: zero``; the aggregator keeps no list of names.
"""

from __future__ import annotations

import dataclasses
import enum
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from graphrag_eval.config.base import Section
from graphrag_eval.config.model import (
    EvaluationConfig,
    add_section,
    remove_section,
    set_section_loader,
)
from graphrag_eval.errors import ConfigError
from graphrag_eval.inputs import ActualStep, ReferenceQuestion, Response
from graphrag_eval.metrics.plugins import entry_point_metrics
from graphrag_eval.steps.matching import StepsOutcome

__all__ = [
    "Aggregation",
    "DerivedMetric",
    "Failed",
    "Input",
    "ItemContext",
    "ItemMetric",
    "Metric",
    "Outcome",
    "OutputKey",
    "Placement",
    "Scored",
    "Skipped",
    "StepMetric",
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


class Aggregation(enum.Enum):
    """How a key's values are aggregated per template and overall."""

    NUMERIC = "numeric"
    """sum, mean, median, min and max of the values."""
    LABEL = "label"
    """a ``{label: count}`` map."""
    NONE = "none"
    """not aggregated (reasons, intermediate counts)."""


class Input(enum.Enum):
    """An item input a metric cannot be scored without; missing, the plan skips the metric."""

    REFERENCE_ANSWER = "reference_answer"
    ACTUAL_ANSWER = "actual_answer"
    CONTEXTS = "contexts"
    """The response's retrieved contexts: ``retrieved_contexts`` or ``retrieval`` steps."""
    REFERENCE_STEPS = "reference_steps"
    """At least one reference step."""


class Placement(enum.Enum):
    """Where an item metric's keys go in a result, relative to the copied ``actual_steps``."""

    BEFORE_STEPS = "before_steps"
    AFTER_STEPS = "after_steps"


@dataclass(frozen=True, slots=True)
class OutputKey:
    """One key a metric writes, and how it is aggregated."""

    name: str
    aggregation: Aggregation = Aggregation.NUMERIC
    error_keys: tuple[str, ...] = ()
    """Keys whose presence means this key's metric failed (for ``coverage``); by default the
    metric's own ``error_keys``."""
    zero_for_error_samples: bool = False
    """Under ``aggregation.error_samples: zero``, an error sample that would have had this key
    (it has every field of ``requires``, and some successful item has the key or the
    evaluation wrote its 0 on some error sample) counts as 0."""
    requires: tuple[str, ...] = ()
    """Result fields an item must have for this key to apply, e.g. ``reference_steps``."""
    always: bool = False
    """Aggregated even when no item has it (zeros), like token counts."""
    headline: bool = False
    """Shown first in summaries (the one number of its metric people look at)."""
    labels: tuple[str, ...] = ()
    """For a label key: the labels to show first, in this order, with 0 for absent ones (the
    grades A to E); other labels follow."""
    counts: tuple[tuple[str, str], ...] = ()
    """For a label key: ``(label, aggregate key)`` pairs; the aggregates give how many
    questions have each label under that key (0 included), e.g. ``correct_answers_count``."""
    maximum: float | None = None
    """The best possible value of a score (1 or 100), for charts and for putting scores of
    different scales side by side; ``None`` for unbounded values (tokens, costs)."""
    lower_is_better: bool = False
    """Smaller values are better (costs, tokens, seconds): comparisons read a fall as an
    improvement, and ``--fail-on-regression`` leaves them out (gate them with
    ``--fail-over``)."""


@dataclass(frozen=True, slots=True)
class Scored:
    """The metric produced these output keys (a score and its companions: reason, cost...)."""

    values: Mapping[str, Any]
    failures: Mapping[str, str] = field(default_factory=dict)
    """Error key -> message for the parts that failed while others were scored (a metric with
    two judge calls, one of which failed)."""


@dataclass(frozen=True, slots=True)
class Skipped:
    """The metric does not apply: its inputs are missing. Written as its reason under
    ``skipped`` unless ``run_wide``."""

    reason: str
    run_wide: bool = False
    """The reason holds for the whole run (a service is missing), not for this question:
    kept in the typed result, not written per question (docs/outputs.md)."""


@dataclass(frozen=True, slots=True)
class Failed:
    """The metric applied but could not be computed; written as its error keys."""

    error: str


Outcome = Scored | Skipped | Failed


@dataclass(frozen=True, slots=True)
class ItemContext:
    """Everything a metric may look at for one item."""

    question: ReferenceQuestion
    response: Response
    config: EvaluationConfig
    steps: StepsOutcome | None = None
    """The step matching, when the item has reference steps and the response is usable."""
    steps_error: str | None = None
    """Why the step matching failed, if it did (a bug, reported in the log)."""
    services: Mapping[str, Any] = field(default_factory=dict)
    """Shared services (judge, embedder) for metrics that need them."""
    scores: Mapping[str, Any] = field(default_factory=dict)
    """For a :class:`DerivedMetric`: the values the item's other metrics produced."""


class Metric(ABC):
    """What every metric declares."""

    name: str
    """Unique name, used in config (``metrics:``) and for error reporting."""
    outputs: tuple[OutputKey, ...]
    """The keys it writes, in output order."""
    error_keys: tuple[str, ...]
    """The keys a :class:`Failed` outcome is written to."""
    uses_llm: bool = False
    """Whether it calls the LLM judge or embeddings (its failures may be transient: a resumed
    run evaluates such items again)."""
    inputs: tuple[Input, ...] = ()
    """Item inputs it cannot be scored without; an item lacking one is skipped for it."""
    needs: frozenset[str] = frozenset()
    """Services it cannot run without: ``judge`` (``llm.generation``), ``embeddings``
    (``llm.embedding`` or the local model), ``bert_model`` (the BERTScore model). Selected
    by name in ``metrics:`` without them, the run stops with a config error; run by
    default, the metric is skipped (on an item, the plan skips it too, so ``score`` may
    assume them)."""
    default: bool = True
    """Runs when the config has no ``metrics:`` list (docs/metrics.md, "Choosing metrics")."""
    always: bool = False
    """Runs whatever ``metrics:`` says (deterministic bookkeeping: steps, usage)."""
    depends_on: tuple[str, ...] = ()
    """Metrics whose values it is computed from (run along with it)."""
    section: ClassVar[str | None] = None
    """The name of its config section, when it has settings (metrics of one family may
    share one)."""
    settings_model: ClassVar[type[Section] | None] = None
    """Its settings: a config section model whose fields all have defaults; registering the
    metric adds the section to the config (docs/extending.md)."""

    def enabled(self, config: EvaluationConfig) -> bool:
        """Whether the metric runs under ``config``; enabled by default."""
        return True


class ItemMetric(Metric):
    """A metric of the item as a whole; its keys go on the item."""

    placement: ClassVar[Placement] = Placement.AFTER_STEPS

    @abstractmethod
    async def score(self, context: ItemContext) -> Outcome:
        """Score one item."""


class DerivedMetric(ItemMetric):
    """An item metric computed from other metrics' values (``context.scores``), after them."""


class StepMetric(Metric):
    """A metric of individual actual steps; its keys go on each step it scored."""

    @abstractmethod
    def applies_to(self, context: ItemContext, step: ActualStep) -> bool:
        """Whether ``step`` is one this metric scores."""

    @abstractmethod
    async def score_step(self, context: ItemContext, step: ActualStep) -> Outcome:
        """Score one actual step of the item."""


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
