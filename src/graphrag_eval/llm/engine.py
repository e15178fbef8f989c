"""The judge engine: every LLM and embedding call of a run goes through one :class:`LLMEngine`.

What it does for each call, so that metrics do not have to (docs/llm.md, what the engine
does with each call), each in its own module:

* **Limits** per endpoint and model (:mod:`.client`): at most ``llm.max_concurrency`` calls
  in flight, and the optional requests- and tokens-per-minute limits, shared by every item
  and metric of the run.
* **Retries** (:mod:`.retrying`) of rate limits (honouring ``Retry-After``), server errors,
  timeouts and connection errors; a refused request, or an endpoint that cannot be reached,
  stops further calls to that endpoint (its breaker, :mod:`.client`); the concurrency limit
  adapts to 429s (:mod:`.lane`).
* **Validation and structured output** (:mod:`.judge`, :mod:`.chat`, :mod:`.structured`): a
  malformed reply gets one re-ask; a JSON schema goes as ``response_format``, or in the
  prompt for an endpoint that rejects it.
* **Cache** (:mod:`.cache`, :mod:`.inflight`): used replies are stored under their canonical
  request; a repeated call costs nothing and makes no request.
* **Cost, cost cap and dry run** (:mod:`.stats`, :mod:`.budget`): token usage and dollars per
  call; no new call past the cost limit; a dry run counts calls instead of making them.
* **Secrets** (:mod:`.redaction`): error messages are scrubbed of API keys.
* **Embeddings** (:mod:`graphrag_eval.embeddings`): a local model or an endpoint, and
  BERTScore.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from graphrag_eval.config.llm import EmbeddingConfig, LLMConfig
from graphrag_eval.config.model import EvaluationConfig
from graphrag_eval.config.sections import BertScoreConfig
from graphrag_eval.embeddings.base import Embedded, Embedder
from graphrag_eval.embeddings.bert_score import BertScorer
from graphrag_eval.embeddings.local import LocalEmbedder
from graphrag_eval.embeddings.models import embeddings_extra_installed
from graphrag_eval.embeddings.remote import RemoteEmbedder
from graphrag_eval.errors import CallFailed, NotCalled
from graphrag_eval.llm.budget import FollowUp
from graphrag_eval.llm.cache import CallCache
from graphrag_eval.llm.client import Endpoint
from graphrag_eval.llm.context import CallContext
from graphrag_eval.llm.judge import Judge, Judged
from graphrag_eval.llm.pricing import TokenUsage, estimate_tokens
from graphrag_eval.llm.replies import ReplyError
from graphrag_eval.llm.stats import CallStats, MetricCalls
from graphrag_eval.llm.structured import ListShape

__all__ = [
    "CallStats",
    "Embedded",
    "FollowUp",
    "Judged",
    "LLMEngine",
    "ListShape",
    "MetricCalls",
    "ReplyError",
    "TokenUsage",
    "build_engine",
    "estimate_tokens",
]

T = TypeVar("T")


class LLMEngine:
    """Makes a run's judge and embedding calls. Create it with :func:`build_engine`, use it
    from one event loop, and close it with :meth:`aclose`."""

    def __init__(
        self,
        config: LLMConfig,
        *,
        use_cache: bool | None = None,
        dry_run: bool = False,
        max_cost_usd: float | None = None,
        local_embeddings: bool | None = None,
        bert_score: BertScoreConfig | None = None,
    ) -> None:
        """``local_embeddings``: without ``llm.embedding``, use the bundled local model
        (default: when the ``embeddings`` extra is installed). ``bert_score``: the settings
        of BERTScore, when it is to run (its model is checked now)."""
        self.config = config
        calls = self._calls = CallContext.create(config, dry_run=dry_run, max_cost_usd=max_cost_usd)
        self.generation = (
            Endpoint("generation", config.generation, config, calls.redactor)
            if config.generation is not None
            else None
        )
        self._judge = Judge(self.generation, calls) if self.generation is not None else None
        self.embedding = _embedder(config, calls, local_embeddings)
        self.bert_scorer = BertScorer(bert_score, calls) if bert_score is not None else None
        remote = self.embedding if isinstance(self.embedding, RemoteEmbedder) else None
        if remote and self.generation and remote.endpoint.shares_model_with(self.generation):
            remote.endpoint.lane = self.generation.lane  # one model, one set of limits
        calls.open_cache(use_cache)
        for endpoint in (self.generation, remote.endpoint if remote else None):
            if endpoint is not None:  # a price the provider's library knows
                calls.prices.add_default(endpoint.model, endpoint.client.price(endpoint.model))
        priced = (self.generation, remote)
        calls.stats.unpriced_models.update(
            model.model for model in priced if model and calls.prices.price(model.model) is None
        )

    # -- what the run set up --------------------------------------------------------------

    @property
    def stats(self) -> CallStats:
        """What the run's calls amounted to so far."""
        return self._calls.stats

    @property
    def dry_run(self) -> bool:
        return self._calls.budget.dry_run

    @property
    def max_cost_usd(self) -> float | None:
        """The run's cost limit (``None``: none)."""
        return self._calls.budget.max_cost_usd

    @property
    def cache(self) -> CallCache | None:
        return self._calls.cache

    @property
    def cache_path(self) -> Path | None:
        return self._calls.cache_path

    @property
    def can_judge(self) -> bool:
        return self.generation is not None

    @property
    def can_embed(self) -> bool:
        return self.embedding is not None

    @property
    def embeds_locally(self) -> bool:
        return isinstance(self.embedding, LocalEmbedder)

    @property
    def can_bert_score(self) -> bool:
        return self.bert_scorer is not None

    # -- calls ----------------------------------------------------------------------------

    async def judge(
        self,
        messages: Sequence[Mapping[str, str]],
        parse: Callable[[str], T],
        *,
        metric: str,
        schema: type[BaseModel] | None = None,
        follow_up: FollowUp | None = None,
        shape: ListShape | None = None,
    ) -> Judged[T]:
        """Ask the judge; return the reply as ``parse`` reads it.

        ``parse`` raises :class:`ReplyError` for a malformed reply, which gets one re-ask.
        ``schema`` asks for structured output (``parse`` still validates). ``follow_up``: the
        calls the metric would make from the reply, which a dry run counts with this one.
        ``shape``: the list the reply holds, for a schema as tight as the endpoint takes.
        Raises an :class:`~graphrag_eval.errors.LLMError` when no usable reply is obtained
        (in a dry run, always: the call is counted, not made).
        """
        if self._judge is None:
            raise CallFailed("no llm.generation is configured")
        try:
            return await self._judge.judge(messages, parse, metric, schema, shape)
        except NotCalled:
            if follow_up is not None:
                self._plan_follow_up(metric, follow_up)
            raise

    async def embed(self, texts: Sequence[str], *, metric: str) -> Embedded:
        """Embedding vectors of ``texts`` (in order), batched and cached per text."""
        if self.embedding is None:
            raise CallFailed("no llm.embedding is configured")
        return await self.embedding.embed(texts, metric=metric)

    def _plan_follow_up(self, metric: str, follow_up: FollowUp) -> None:
        """Count, in a dry run, the calls that would follow a judge call that was not made
        (their prompts and texts depend on its reply; ``follow_up`` approximates them)."""
        if follow_up.judge_prompt is not None and self._judge is not None:
            self._judge.plan_follow_up(metric, follow_up.judge_prompt)
        if follow_up.embedding_texts and self.embedding is not None:
            self.embedding.plan(metric, follow_up.embedding_tokens, follow_up.embedding_texts)

    async def bert_scores(
        self, pairs: Sequence[tuple[str, str]], *, metric: str
    ) -> list[tuple[float, float, float]]:
        """BERTScore (precision, recall, F1; 0-1) of each ``(candidate, reference)`` pair,
        from the local model of ``bert_score.model``; batched and cached per pair."""
        if self.bert_scorer is None:
            raise CallFailed("BERTScore is not set up for this run")
        return await self.bert_scorer.scores(pairs, metric=metric)

    def incomplete_reasons(self) -> list[str]:
        """Why calls the run planned were not made: each endpoint whose breaker opened (it
        refused requests or could not be reached), and the cost limit when it stopped calls."""
        endpoints = [self.generation]
        if isinstance(self.embedding, RemoteEmbedder):
            endpoints.append(self.embedding.endpoint)
        reasons = [
            endpoint.breaker.reason
            for endpoint in endpoints
            if endpoint is not None and endpoint.breaker.reason is not None
        ]
        budget = self._calls.budget
        if self.stats.budget_reached and budget.max_cost_usd is not None:
            reasons.append(f"the cost limit of ${budget.max_cost_usd:g} was reached")
        return reasons

    def redact(self, text: str) -> str:
        """``text`` with every API key the engine knows (and anything shaped like one)
        replaced."""
        return self._calls.redactor.redact(text)

    async def aclose(self) -> None:
        """Close the HTTP clients and the cache."""
        if self.generation is not None:
            await self.generation.close()
        if self.embedding is not None:
            await self.embedding.aclose()
        self._calls.close()


def _embedder(
    config: LLMConfig,
    calls: CallContext,
    local_embeddings: bool | None,
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


def build_engine(
    config: EvaluationConfig,
    *,
    use_cache: bool | None = None,
    dry_run: bool = False,
    max_cost_usd: float | None = None,
    local: bool = False,
    bert_score: bool = False,
) -> LLMEngine | None:
    """The engine for a run, or ``None`` when there is nothing for it to do: no LLM or
    embedding model is configured and no local model is wanted (``local``: metrics that
    embed will run; ``bert_score``: BERTScore will run).

    Raises :class:`ConfigError` when a model is configured but cannot be used (an extra is
    missing, no API key, a local model that is not on this machine).
    """
    llm = config.llm
    if llm.generation is None and llm.embedding is None and not (local or bert_score):
        return None
    return LLMEngine(
        llm,
        use_cache=use_cache,
        dry_run=dry_run,
        max_cost_usd=max_cost_usd,
        bert_score=config.bert_score if bert_score else None,
    )
