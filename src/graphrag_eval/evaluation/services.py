"""Where a run's services are assembled: the engine (the judge and what every call shares,
:mod:`graphrag_eval.llm.engine`), the embedding model (a local model or an endpoint,
:mod:`graphrag_eval.embeddings`) and BERTScore's, built here on the engine's call context
and handed to it, so that ``llm`` never imports ``embeddings``; and the typed services each
item's metrics get (:class:`~graphrag_eval.metrics.services.Services`). See
docs/architecture.md (the packages and modules).
"""

from __future__ import annotations

from graphrag_eval.config.llm import EmbeddingConfig, LLMConfig
from graphrag_eval.config.model import EvaluationConfig
from graphrag_eval.embeddings.bert_score import BertScorer
from graphrag_eval.embeddings.local import LocalEmbedder
from graphrag_eval.embeddings.models import embeddings_extra_installed
from graphrag_eval.embeddings.remote import RemoteEmbedder
from graphrag_eval.errors import ConfigError
from graphrag_eval.evaluation.execution import SharedExecutions
from graphrag_eval.graph.execution import GraphStore
from graphrag_eval.graph.stores import open_store
from graphrag_eval.llm.batch.client import enable_batch
from graphrag_eval.llm.client import Endpoint
from graphrag_eval.llm.context import CallContext
from graphrag_eval.llm.engine import LLMEngine
from graphrag_eval.llm.services import Embedder
from graphrag_eval.metrics.services import Services

__all__ = ["build_engine", "embedder_of", "open_run_store", "services_of"]


def build_engine(
    config: EvaluationConfig,
    *,
    use_cache: bool | None = None,
    dry_run: bool = False,
    max_cost_usd: float | None = None,
    local: bool = False,
    bert_score: bool = False,
) -> LLMEngine | None:
    """The engine for a run, with its embedding model and BERTScore's, or ``None`` when there
    is nothing for it to do: no LLM or embedding model is configured and no local model is
    wanted (``local``: metrics that embed will run; ``bert_score``: BERTScore will run, and
    its model is checked now).

    Raises :class:`~graphrag_eval.errors.ConfigError` when a model is configured but cannot
    be used (an extra is missing, no API key, a local model that is not on this machine).
    """
    llm = config.llm
    if llm.generation is None and llm.embedding is None and not (local or bert_score):
        return None
    calls = CallContext.create(llm, dry_run=dry_run, max_cost_usd=max_cost_usd)
    # The judge first: a missing key stops the run before a local model is loaded.
    generation = (
        Endpoint("generation", llm.generation, llm, calls.redactor)
        if llm.generation is not None
        else None
    )
    if llm.batch and generation is not None:  # a judge without a batch API: exit 2 here
        enable_batch(generation, llm, calls.redactor)
    return LLMEngine(
        llm,
        calls,
        generation=generation,
        embedding=embedder_of(llm, calls),
        bert_scorer=BertScorer(config.bert_score, calls) if bert_score else None,
        use_cache=use_cache,
    )


def embedder_of(
    config: LLMConfig, calls: CallContext, local_embeddings: bool | None = None
) -> Embedder | None:
    """The run's embedding model: ``llm.embedding``, else the bundled local model when it is
    wanted (``local_embeddings``; default: when the ``embeddings`` extra is installed)."""
    settings = config.embedding
    if settings is not None and settings.provider == "local":
        return LocalEmbedder(settings, calls)
    if settings is not None:
        return RemoteEmbedder(Endpoint("embedding", settings, config, calls.redactor), calls)
    if local_embeddings is None:
        local_embeddings = embeddings_extra_installed()
    if local_embeddings:
        return LocalEmbedder(EmbeddingConfig(provider="local"), calls)
    return None


def open_run_store(config: EvaluationConfig) -> SharedExecutions | None:
    """The store ``config.sparql`` names, opened, its executions shared within the run
    (:class:`~graphrag_eval.evaluation.execution.SharedExecutions`); ``None`` when it names
    none. Raises :class:`~graphrag_eval.errors.ConfigError` or
    :class:`~graphrag_eval.errors.InputError` when it cannot be opened (docs/knowledge-graph.md).
    """
    if not config.sparql.configured:
        _nothing_asks_for_a_store(config)
        return None
    store = open_store(config.sparql)
    if store is None:
        where = "sparql.endpoint" if config.sparql.endpoint is not None else "sparql.data"
        raise ConfigError("this installation cannot open such a store", field=where)
    return SharedExecutions(store)


def _nothing_asks_for_a_store(config: EvaluationConfig) -> None:
    """Refuse a config that asks for executions without naming a store: ``execute: always``
    or test-suite copies would silently do nothing (docs/knowledge-graph.md)."""
    sparql = config.sparql
    asked = None
    if sparql.execute == "always":
        asked = ("sparql.execute", "'always'")
    elif sparql.test_suite.copies:
        asked = ("sparql.test_suite.copies", f"{sparql.test_suite.copies} copies")
    if asked is not None:
        raise ConfigError(
            f"{asked[1]} needs a store to execute queries against, and none is named: give "
            "sparql.data or sparql.endpoint in the config, or --data FILE / --endpoint URL",
            field=asked[0],
        )


def services_of(engine: LLMEngine | None, store: GraphStore | None = None) -> Services:
    """The services the metrics of a run get from ``engine`` (none without one) and
    ``store`` (its executions shared within the run)."""
    if store is not None and not isinstance(store, SharedExecutions):
        store = SharedExecutions(store)
    if engine is None:
        return Services() if store is None else Services(store=store)
    return Services(
        judge=engine if engine.can_judge else None,
        embedder=engine.embedding,
        bert_scorer=engine.bert_scorer,
        store=store,
        redact=engine.redact,
    )
