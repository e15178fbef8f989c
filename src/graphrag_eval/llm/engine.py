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
* **Embeddings and BERTScore** (:mod:`.services`): the run's embedding model and BERTScore's
  are given to the engine, built where the run's services are assembled
  (:mod:`graphrag_eval.evaluation.services`): an embedding endpoint shares the judge's limits
  when it serves the same model, counts in dry runs and in why a run is incomplete, and is
  closed with the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from graphrag_eval.config.llm import LLMConfig
from graphrag_eval.errors import CallFailed, NotCalled
from graphrag_eval.llm.budget import FollowUp
from graphrag_eval.llm.cache import CallCache
from graphrag_eval.llm.client import Endpoint
from graphrag_eval.llm.context import CallContext
from graphrag_eval.llm.judge import Judge, Judged
from graphrag_eval.llm.pricing import TokenUsage, estimate_tokens
from graphrag_eval.llm.replies import ReplyError
from graphrag_eval.llm.services import Embedded, Embedder, PairScorer
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
    "estimate_tokens",
]

T = TypeVar("T")


class LLMEngine:
    """Makes a run's judge and embedding calls. Create it with
    :func:`graphrag_eval.evaluation.services.build_engine`, use it
    from one event loop, and close it with :meth:`aclose`."""

    def __init__(
        self,
        config: LLMConfig,
        calls: CallContext,
        *,
        generation: Endpoint | None = None,
        embedding: Embedder | None = None,
        bert_scorer: PairScorer | None = None,
        use_cache: bool | None = None,
    ) -> None:
        """``calls``: what every call of the run shares (its cache is opened here,
        ``use_cache`` overriding the config); ``generation``: the judge's endpoint;
        ``embedding``: the run's embedding model, and ``bert_scorer`` BERTScore's, built on
        ``calls``."""
        self.config = config
        self._calls = calls
        self.generation = generation
        self._judge = Judge(self.generation, calls) if self.generation is not None else None
        self.embedding = embedding
        self.bert_scorer = bert_scorer
        remote = embedding.endpoint if embedding is not None else None
        if remote and self.generation and remote.shares_model_with(self.generation):
            remote.lane = self.generation.lane  # one model, one set of limits
        calls.open_cache(use_cache)
        endpoints = [endpoint for endpoint in (self.generation, remote) if endpoint is not None]
        for endpoint in endpoints:  # a price the provider's library knows
            calls.prices.add_default(endpoint.model, endpoint.client.price(endpoint.model))
        calls.stats.unpriced_models.update(
            endpoint.model for endpoint in endpoints if calls.prices.price(endpoint.model) is None
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

    def _plan_follow_up(self, metric: str, follow_up: FollowUp) -> None:
        """Count, in a dry run, the calls that would follow a judge call that was not made
        (their prompts and texts depend on its reply; ``follow_up`` approximates them)."""
        if follow_up.judge_prompt is not None and self._judge is not None:
            self._judge.plan_follow_up(metric, follow_up.judge_prompt)
        if follow_up.embedding_texts and self.embedding is not None:
            self.embedding.plan(metric, follow_up.embedding_tokens, follow_up.embedding_texts)

    def incomplete_reasons(self) -> list[str]:
        """Why calls the run planned were not made: each endpoint whose breaker opened (it
        refused requests or could not be reached), and the cost limit when it stopped calls."""
        endpoints = [self.generation, self.embedding.endpoint if self.embedding else None]
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
