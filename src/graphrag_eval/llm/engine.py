"""The judge engine: every LLM and embedding call of a run goes through one :class:`LLMEngine`.

What it does for each call, so that metrics do not have to:

* **Limits** per endpoint and model (a :class:`_Lane`): at most ``llm.max_concurrency`` calls
  in flight, and the optional requests- and tokens-per-minute limits, shared by every item
  and metric of the run.
* **Retries** (tenacity) of rate limits (429, honouring ``Retry-After``/``retry-after-ms``),
  server errors (5xx), timeouts and connection errors, with exponential backoff and jitter.
  A refused request (401, 403, 404) is not retried, and stops further calls to that endpoint.
* **Validation**: a judge reply goes through the metric's parser; a malformed reply gets one
  re-ask (the reply and the problem are shown to the judge), then the call fails. A reply cut
  off by the token limit fails as such.
* **Structured output**: replies with a fixed shape are requested with a JSON schema
  (``response_format``); an endpoint that rejects it is asked with the schema in the prompt
  instead, for the rest of the run.
* **Cache** (:mod:`graphrag_eval.llm.cache`): used replies are stored under their canonical
  request; a repeated call costs nothing and makes no request.
* **Cost**: token usage and dollars per call; the nominal cost (what the reply cost when it
  was made) goes to the metric, what was actually spent to the run's :class:`CallStats`.
  With a cost limit, no new call starts once it is reached.
* **Dry run**: calls are counted and estimated instead of made.
* **Secrets**: error messages are scrubbed of API keys before they leave the engine.
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import functools
import inspect
import json
import logging
import math
import os
import random
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from aiolimiter import AsyncLimiter
from pydantic import BaseModel
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from graphrag_eval.config import (
    BertScoreConfig,
    EmbeddingConfig,
    EvaluationConfig,
    GenerationConfig,
    LLMConfig,
    secret_values,
)
from graphrag_eval.errors import (
    BudgetExhausted,
    CallFailed,
    ConfigError,
    LLMError,
    MalformedReply,
    NotCalled,
    TruncatedReply,
)
from graphrag_eval.llm.cache import CallCache, default_cache_path, request_key
from graphrag_eval.llm.local import (
    Batcher,
    bert_score_of,
    embeddings_extra_installed,
    hidden_layers,
    local_model,
    resolve_model,
)
from graphrag_eval.llm.pricing import PriceTable, TokenUsage

__all__ = [
    "CallStats",
    "Judged",
    "LLMEngine",
    "ReplyError",
    "build_engine",
    "estimate_tokens",
]

logger = logging.getLogger("graphrag_eval")

T = TypeVar("T")

_DEFAULT_BASE_URLS = {
    "ollama": "http://localhost:11434/v1",
    "vllm": "http://localhost:8000/v1",
}
_KEY_ENV = {"azure": "AZURE_OPENAI_API_KEY"}
_DRY_RUN_REPLY_TOKENS = 300
"""Reply tokens assumed per judge call in a dry run when ``max_tokens`` is not set."""

REASK = (
    "Your reply could not be used: {problem}. Reply again to the request above, in exactly "
    "the format it asks for, with nothing else."
)


class ReplyError(ValueError):
    """Raised by a reply parser: the reply does not have the required form (the message says
    what is wrong, for the re-ask)."""


def estimate_tokens(text: str) -> int:
    """A provider-independent token estimate (about four characters per token)."""
    return max(1, math.ceil(len(text) / 4))


@dataclass(frozen=True, slots=True)
class Judged(Generic[T]):
    """A parsed judge reply with what it cost."""

    value: T
    text: str
    usage: TokenUsage
    cost_usd: float
    """Nominal: what the calls behind this reply cost, whether served from the cache or not."""
    cached: bool


@dataclass(frozen=True, slots=True)
class Embedded:
    """Embedding vectors with what they cost (nominal, as :attr:`Judged.cost_usd`)."""

    vectors: list[list[float]]
    usage: TokenUsage
    cost_usd: float


@dataclass(slots=True)
class MetricCalls:
    """Calls made for one metric in a run."""

    calls: int = 0
    cache_hits: int = 0
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    """Actually spent (cache hits are free)."""
    local_texts: int = 0
    """Texts run through a local model (free)."""


@dataclass(slots=True)
class CallStats:
    """What a run's calls amounted to, for the run summary."""

    calls: int = 0
    """Calls that got a reply (re-asks included; retries of one call are one call)."""
    requests: int = 0
    """HTTP requests, retries included."""
    retries: int = 0
    cache_hits: int = 0
    failed: int = 0
    """Calls that gave no usable reply."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    """Dollars actually spent in this run (cache hits are free)."""
    local_texts: int = 0
    """Texts run through a local model (embeddings, BERTScore): free, not calls."""
    budget_reached: bool = False
    unpriced_models: set[str] = field(default_factory=set)
    by_metric: dict[str, MetricCalls] = field(default_factory=dict)
    planned: dict[str, MetricCalls] = field(default_factory=dict)
    """Dry run: the calls that would be made, with estimated tokens and cost."""

    def metric(self, name: str) -> MetricCalls:
        return self.by_metric.setdefault(name, MetricCalls())

    def as_dict(self) -> dict[str, Any]:
        """The summary written to ``run.yaml``."""
        return {
            "calls": self.calls,
            "requests": self.requests,
            "retries": self.retries,
            "cache_hits": self.cache_hits,
            "failed_calls": self.failed,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "local_texts": self.local_texts,
            "budget_reached": self.budget_reached,
            "unpriced_models": sorted(self.unpriced_models),
            "by_metric": {
                name: {
                    "calls": calls.calls,
                    "cache_hits": calls.cache_hits,
                    "failed_calls": calls.failed,
                    "input_tokens": calls.input_tokens,
                    "output_tokens": calls.output_tokens,
                    "cost_usd": round(calls.cost_usd, 6),
                    "local_texts": calls.local_texts,
                }
                for name, calls in sorted(self.by_metric.items())
            },
        }

    def plan_dict(self) -> dict[str, Any]:
        """The dry-run estimate: calls, tokens and cost per metric and in total."""
        names = sorted(set(self.planned) | set(self.by_metric))
        empty = MetricCalls()
        metrics = {
            name: {
                "calls": self.planned.get(name, empty).calls,
                "cached": self.by_metric.get(name, empty).cache_hits,
                "input_tokens": self.planned.get(name, empty).input_tokens,
                "output_tokens": self.planned.get(name, empty).output_tokens,
                "cost_usd": round(self.planned.get(name, empty).cost_usd, 6),
                "local_texts": self.planned.get(name, empty).local_texts,
            }
            for name in names
        }
        return {
            "calls": sum(m.calls for m in self.planned.values()),
            "cached": sum(m["cached"] for m in metrics.values()),
            "input_tokens": sum(m.input_tokens for m in self.planned.values()),
            "output_tokens": sum(m.output_tokens for m in self.planned.values()),
            "cost_usd": round(sum(m.cost_usd for m in self.planned.values()), 6),
            "local_texts": sum(m.local_texts for m in self.planned.values()),
            "by_metric": metrics,
            "unpriced_models": sorted(self.unpriced_models),
        }


class _Lane:
    """The limits shared by every call to one endpoint and model."""

    def __init__(self, config: LLMConfig) -> None:
        self.slots = asyncio.Semaphore(config.max_concurrency)
        self.requests = (
            AsyncLimiter(config.requests_per_minute, 60) if config.requests_per_minute else None
        )
        self.tokens = (
            AsyncLimiter(config.tokens_per_minute, 60) if config.tokens_per_minute else None
        )

    @asynccontextmanager
    async def slot(self, tokens: int) -> AsyncIterator[None]:
        async with self.slots:
            if self.requests is not None:
                await self.requests.acquire()
            if self.tokens is not None:
                await self.tokens.acquire(min(tokens, self.tokens.max_rate))
            yield


class _Endpoint:
    """One configured model at one endpoint: its client, limits and identity."""

    def __init__(
        self,
        role: str,
        settings: GenerationConfig | EmbeddingConfig,
        config: LLMConfig,
        secrets: set[str],
    ) -> None:
        try:
            import openai
        except ImportError:
            raise ConfigError(
                "LLM calls need the 'llm' extra: pip install 'graphrag-eval[llm]'",
                field=f"llm.{role}",
            ) from None
        self.role = role
        self.settings = settings
        self.model = settings.model
        self.base_url = settings.base_url or _DEFAULT_BASE_URLS.get(settings.provider)
        api_key = _api_key(role, settings)
        if api_key:
            secrets.add(api_key)
        secrets.update(secret_values(settings.request_parameters))
        client_options: dict[str, Any] = {"max_retries": 0, "timeout": config.timeout_s}
        self.client: Any
        if settings.provider == "azure":
            self.client = openai.AsyncAzureOpenAI(
                azure_endpoint=self.base_url or "",
                api_key=api_key,
                api_version=settings.api_version,
                **client_options,
            )
        else:
            self.client = openai.AsyncOpenAI(
                api_key=api_key or "not-needed", base_url=self.base_url, **client_options
            )
        # What identifies the endpoint in cache keys (never the key itself).
        self.identity = f"{settings.provider}:{str(self.client.base_url).rstrip('/')}"
        self.lane = _Lane(config)
        create = (
            self.client.chat.completions.create
            if role == "generation"
            else self.client.embeddings.create
        )
        self.request_parameters = _sdk_parameters(create, settings)
        """The config's extra request parameters, split once as the SDK takes them."""
        self.structured = (
            settings.structured_output if isinstance(settings, GenerationConfig) else "prompt"
        )
        self.refused: str | None = None
        """Why the endpoint refused a request (bad key, unknown model): no more calls."""


def _api_key(role: str, settings: GenerationConfig | EmbeddingConfig) -> str | None:
    if settings.api_key is not None:
        return settings.api_key.get_secret_value()
    variable = settings.api_key_env or _KEY_ENV.get(settings.provider, "OPENAI_API_KEY")
    value = os.environ.get(variable)
    if value:
        return value
    if settings.provider in ("openai", "azure") or settings.api_key_env:
        raise ConfigError(
            f"no API key: set the environment variable {variable} (or llm.{role}.api_key)",
            field=f"llm.{role}",
        )
    return None  # a local server (Ollama, vLLM, ...) usually needs none


class _LocalEmbedding:
    """A sentence-embedding model run in-process (``provider: local``): no client, no cost,
    no limits; concurrent requests are batched into forward passes."""

    def __init__(self, settings: EmbeddingConfig) -> None:
        source, identity = resolve_model(settings.model, "llm.embedding.model")
        self.settings = settings
        self.model = settings.model
        self.identity = f"local:{identity}"
        self.refused: str | None = None
        model = local_model(source, identity)
        self.batcher: Batcher[str, list[float]] = Batcher(
            lambda texts: model.sentence_embeddings(texts, settings.batch_size),
            max_batch=settings.batch_size,
        )


class _BertScorer:
    """The token-embedding model of BERTScore, with its settings."""

    def __init__(self, settings: BertScoreConfig) -> None:
        source, identity = resolve_model(settings.model, "bert_score.model")
        layers = hidden_layers(source)
        layer = settings.layer
        if layer is not None and layers is not None and not -(layers + 1) <= layer <= layers:
            raise ConfigError(
                f"layer {layer} is out of range: the model has {layers} layers "
                f"(0 is the input embeddings, {layers} or -1 the last)",
                field="bert_score.layer",
            )
        self.settings = settings
        self.identity = f"local:{identity}"
        model = local_model(source, identity)

        def score(pairs: list[tuple[str, str]]) -> list[tuple[float, float, float]]:
            texts = list(dict.fromkeys(text for pair in pairs for text in pair))
            vectors = model.token_embeddings(
                texts, settings.batch_size, settings.layer, settings.max_length
            )
            of = dict(zip(texts, vectors, strict=True))
            return [bert_score_of(of[candidate], of[reference]) for candidate, reference in pairs]

        # A pair is two texts: batch as many pairs as fill one forward pass.
        self.batcher: Batcher[tuple[str, str], tuple[float, float, float]] = Batcher(
            score, max_batch=max(1, settings.batch_size // 2)
        )


_SECRET_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_\-]{3})[A-Za-z0-9_\-]{6,}")


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
        self._secrets: set[str] = set()
        self.generation = (
            _Endpoint("generation", config.generation, config, self._secrets)
            if config.generation is not None
            else None
        )
        self.embedding: _Endpoint | _LocalEmbedding | None = None
        if config.embedding is not None and config.embedding.provider == "local":
            self.embedding = _LocalEmbedding(config.embedding)
        elif config.embedding is not None:
            self.embedding = _Endpoint("embedding", config.embedding, config, self._secrets)
        else:
            if local_embeddings is None:
                local_embeddings = embeddings_extra_installed()
            if local_embeddings:
                self.embedding = _LocalEmbedding(EmbeddingConfig(provider="local"))
        self.bert_scorer = _BertScorer(bert_score) if bert_score is not None else None
        self._in_flight: dict[str, asyncio.Future[None]] = {}
        """Judge requests being made, by cache key (only with the cache)."""
        self._planned: set[str] = set()
        """Dry run: the judge requests counted so far."""
        if isinstance(self.embedding, _Endpoint) and self.generation is not None:
            same = (self.embedding.identity, self.embedding.model) == (
                self.generation.identity,
                self.generation.model,
            )
            if same:
                self.embedding.lane = self.generation.lane
        self.prices = PriceTable(config.prices)
        self.dry_run = dry_run
        self.max_cost_usd = max_cost_usd if max_cost_usd is not None else config.max_cost_usd
        self.stats = CallStats()
        enabled = config.cache.enabled if use_cache is None else use_cache
        self.cache_path: Path | None = None
        self.cache: CallCache | None = None
        if enabled:
            self.cache_path = config.cache.path or default_cache_path()
            try:
                self.cache = CallCache(self.cache_path)
            except Exception as exc:  # sqlite3.Error, OSError
                raise ConfigError(
                    f"cannot open the call cache {self.cache_path}: {exc}", field="llm.cache.path"
                ) from None
        for endpoint in (self.generation, self.embedding):
            if isinstance(endpoint, _Endpoint) and self.prices.price(endpoint.model) is None:
                self.stats.unpriced_models.add(endpoint.model)

    # -- public API ---------------------------------------------------------------------------

    @property
    def can_judge(self) -> bool:
        return self.generation is not None

    @property
    def can_embed(self) -> bool:
        return self.embedding is not None

    @property
    def embeds_locally(self) -> bool:
        return isinstance(self.embedding, _LocalEmbedding)

    @property
    def can_bert_score(self) -> bool:
        return self.bert_scorer is not None

    async def judge(
        self,
        messages: Sequence[Mapping[str, str]],
        parse: Callable[[str], T],
        *,
        metric: str,
        schema: type[BaseModel] | None = None,
    ) -> Judged[T]:
        """Ask the judge; return the reply as ``parse`` reads it.

        ``parse`` raises :class:`ReplyError` for a malformed reply, which gets one re-ask.
        ``schema`` asks for structured output (``parse`` still validates). Raises an
        :class:`~graphrag_eval.errors.LLMError` when no usable reply is obtained.
        """
        endpoint = self._endpoint("generation")
        settings = endpoint.settings
        assert isinstance(settings, GenerationConfig)
        params: dict[str, Any] = {"temperature": settings.temperature}
        if settings.max_tokens is not None:
            params["max_tokens"] = settings.max_tokens
        params.update(endpoint.request_parameters)
        schema_json = _strict_schema(schema) if schema is not None else None
        sent: list[dict[str, str]] = [dict(message) for message in messages]
        key = request_key(
            {
                "kind": "chat",
                "endpoint": endpoint.identity,
                "model": endpoint.model,
                "messages": sent,
                "params": params,
                "schema": schema_json,
            }
        )
        calls = self.stats.metric(metric)
        # The same request already in flight (two metrics sharing a prompt): wait for it and
        # take its reply from the cache rather than pay twice.
        leader = self._in_flight.get(key) if self.cache is not None else None
        if leader is not None:
            await asyncio.wait([leader])
        cached = self.cache.get_reply(key) if self.cache is not None else None
        if cached is not None:
            try:
                value = parse(cached.text)
            except ReplyError:
                pass  # stored by an older parser; ask again
            else:
                self.stats.cache_hits += 1
                calls.cache_hits += 1
                return Judged(
                    value, cached.text, cached.usage, self._cost(endpoint, cached.usage), True
                )
        if self.dry_run and key not in self._planned:
            # The same request twice in a run is made once (merged, then cached).
            self._planned.add(key)
            self._plan(metric, endpoint, sent, schema_json, params.get("max_tokens"))
        self._check_budget()
        if self.cache is None or key in self._in_flight:
            return await self._ask(endpoint, sent, params, schema, schema_json, metric, parse, key)
        self._in_flight[key] = done = asyncio.get_running_loop().create_future()
        try:
            return await self._ask(endpoint, sent, params, schema, schema_json, metric, parse, key)
        finally:
            del self._in_flight[key]
            done.set_result(None)

    async def _ask(
        self,
        endpoint: _Endpoint,
        sent: list[dict[str, str]],
        params: dict[str, Any],
        schema: type[BaseModel] | None,
        schema_json: dict[str, Any] | None,
        metric: str,
        parse: Callable[[str], T],
        key: str,
    ) -> Judged[T]:
        """Make a judge call (with its one re-ask) and cache the reply that was used."""
        text, usage = await self._chat(endpoint, sent, params, schema, schema_json, metric)
        try:
            value = parse(text)
        except ReplyError as problem:
            self._check_budget()
            again = [
                *sent,
                {"role": "assistant", "content": text},
                {"role": "user", "content": REASK.format(problem=problem)},
            ]
            text, more = await self._chat(endpoint, again, params, schema, schema_json, metric)
            usage = usage + more
            try:
                value = parse(text)
            except ReplyError as still:
                self._failed(metric)
                raise MalformedReply(
                    self.redact(f"malformed judge reply (after one re-ask): {still}")
                ) from None
        if self.cache is not None:
            self.cache.put_reply(key, endpoint.model, text, usage)
        return Judged(value, text, usage, self._cost(endpoint, usage), False)

    async def embed(self, texts: Sequence[str], *, metric: str) -> Embedded:
        """Embedding vectors of ``texts`` (in order), batched and cached per text."""
        if isinstance(self.embedding, _LocalEmbedding):
            return await self._embed_locally(self.embedding, texts, metric)
        endpoint = self._endpoint("embedding")
        settings = endpoint.settings
        assert isinstance(settings, EmbeddingConfig)
        params = endpoint.request_parameters
        keys = [
            request_key(
                {
                    "kind": "embedding",
                    "endpoint": endpoint.identity,
                    "model": endpoint.model,
                    "input": text,
                    "params": params,
                }
            )
            for text in texts
        ]
        found, missing = await self._cached_embeddings(keys, metric)
        if missing:
            text_of = dict(zip(keys, texts, strict=True))
            if self.dry_run:
                tokens = sum(estimate_tokens(text_of[key]) for key in missing)
                batches = -(-len(missing) // settings.batch_size)
                self._plan_tokens(metric, endpoint, tokens, 0, batches=batches)
            self._check_budget()
            with self._making(missing):
                for start in range(0, len(missing), settings.batch_size):
                    batch = missing[start : start + settings.batch_size]
                    found.update(
                        await self._embed_batch(
                            endpoint, [text_of[key] for key in batch], batch, params, metric
                        )
                    )
        usage = TokenUsage(sum(found[key][1] for key in keys), 0)
        return Embedded([found[key][0] for key in keys], usage, self._cost(endpoint, usage))

    def plan_embedding(self, metric: str, tokens: int, texts: int = 1) -> None:
        """In a dry run, count an embedding call whose texts are not known yet (they come
        from a judge reply that was not asked for)."""
        if not self.dry_run:
            return
        if isinstance(self.embedding, _Endpoint):
            self._plan_tokens(metric, self.embedding, tokens, 0)
        elif isinstance(self.embedding, _LocalEmbedding):
            self.stats.planned.setdefault(metric, MetricCalls()).local_texts += texts

    def plan_follow_up(self, metric: str, prompt: str) -> None:
        """In a dry run, count a judge call that would follow one that was not made (its
        prompt depends on that call's reply; ``prompt`` approximates it)."""
        if self.dry_run and self.generation is not None:
            settings = self.generation.settings
            assert isinstance(settings, GenerationConfig)
            self._plan(metric, self.generation, [{"content": prompt}], None, settings.max_tokens)

    async def bert_scores(
        self, pairs: Sequence[tuple[str, str]], *, metric: str
    ) -> list[tuple[float, float, float]]:
        """BERTScore (precision, recall, F1; 0-1) of each ``(candidate, reference)`` pair,
        from the local model of ``bert_score.model``; batched and cached per pair."""
        scorer = self.bert_scorer
        if scorer is None:
            raise CallFailed("BERTScore is not set up for this run")
        settings = scorer.settings
        keys = [
            request_key(
                {
                    "kind": "bert_score",
                    "model": scorer.identity,
                    "layer": settings.layer,
                    "max_length": settings.max_length,
                    "candidate": candidate,
                    "reference": reference,
                }
            )
            for candidate, reference in pairs
        ]
        found: dict[str, tuple[float, float, float]] = {}
        for key in keys:
            cached = self.cache.get_reply(key) if self.cache is not None else None
            if cached is not None:
                p, r, f = json.loads(cached.text)
                found[key] = (float(p), float(r), float(f))
        if found:
            self.stats.cache_hits += 1
            self.stats.metric(metric).cache_hits += 1
        todo = {key: pair for key, pair in zip(keys, pairs, strict=True) if key not in found}
        if todo:
            texts = len({text for pair in todo.values() for text in pair})
            if self.dry_run:
                self.stats.planned.setdefault(metric, MetricCalls()).local_texts += texts
                raise NotCalled("dry run: nothing was computed")
            try:
                scores = await scorer.batcher.run(list(todo.values()))
            except Exception as exc:
                self._failed(metric)
                raise CallFailed(f"the local model {scorer.identity} failed: {exc!r}") from None
            self._local(metric, texts)
            for key, score in zip(todo, scores, strict=True):
                found[key] = score
                if self.cache is not None:
                    self.cache.put_reply(key, scorer.identity, json.dumps(score), TokenUsage(0, 0))
        return [found[key] for key in keys]

    def redact(self, text: str) -> str:
        """``text`` with every API key the engine knows (and anything shaped like one)
        replaced."""
        for secret in self._secrets:
            if len(secret) >= 4:
                text = text.replace(secret, "***")
        return _SECRET_PATTERN.sub(r"\1***", text)

    async def aclose(self) -> None:
        """Close the HTTP clients and the cache."""
        for endpoint in (self.generation, self.embedding):
            if isinstance(endpoint, _Endpoint):
                await endpoint.client.close()
        if self.cache is not None:
            self.cache.close()
            self.cache = None

    # -- calls --------------------------------------------------------------------------------

    def _endpoint(self, role: str) -> _Endpoint:
        endpoint = self.generation if role == "generation" else self.embedding
        if not isinstance(endpoint, _Endpoint):
            raise CallFailed(f"no llm.{role} is configured")
        if endpoint.refused is not None:
            raise CallFailed(endpoint.refused)
        return endpoint

    def _check_budget(self) -> None:
        """Before a call: a dry run stops here, and so does a run past its cost limit. Checked
        again when the call gets its slot, so at most the calls in flight overshoot."""
        if self.dry_run:
            raise NotCalled("dry run: the call was counted, not made")
        if self.max_cost_usd is not None and self.stats.cost_usd >= self.max_cost_usd:
            self.stats.budget_reached = True
            raise BudgetExhausted(
                f"not computed: the cost limit of ${self.max_cost_usd:g} was reached"
            )

    def _cost(self, endpoint: _Endpoint, usage: TokenUsage) -> float:
        return self.prices.cost_usd(endpoint.model, usage)

    def _failed(self, metric: str) -> None:
        self.stats.failed += 1
        self.stats.metric(metric).failed += 1

    def _spent(self, metric: str, endpoint: _Endpoint, usage: TokenUsage) -> None:
        cost = self._cost(endpoint, usage)
        for stats in (self.stats, self.stats.metric(metric)):
            stats.calls += 1
            stats.input_tokens += usage.input_tokens
            stats.output_tokens += usage.output_tokens
            stats.cost_usd += cost

    def _plan(
        self,
        metric: str,
        endpoint: _Endpoint,
        messages: Sequence[Mapping[str, str]],
        schema_json: Mapping[str, Any] | None,
        max_tokens: int | None,
    ) -> None:
        prompt = "".join(message["content"] for message in messages)
        if schema_json is not None:
            prompt += json.dumps(schema_json)
        reply = max_tokens if max_tokens is not None else _DRY_RUN_REPLY_TOKENS
        self._plan_tokens(metric, endpoint, estimate_tokens(prompt), reply)

    def _plan_tokens(
        self, metric: str, endpoint: _Endpoint, prompt: int, reply: int, batches: int = 1
    ) -> None:
        planned = self.stats.planned.setdefault(metric, MetricCalls())
        planned.calls += batches
        planned.input_tokens += prompt
        planned.output_tokens += reply
        planned.cost_usd += self._cost(endpoint, TokenUsage(prompt, reply))

    def _retrying(self, endpoint: _Endpoint) -> AsyncRetrying:
        return AsyncRetrying(
            stop=stop_after_attempt(self.config.max_retries + 1),
            wait=self._backoff,
            retry=retry_if_exception(lambda exc: _retryable(exc) and endpoint.refused is None),
            before_sleep=self._before_retry,
            reraise=True,
        )

    def _backoff(self, state: RetryCallState) -> float:
        exception = state.outcome.exception() if state.outcome is not None else None
        server_asked = _retry_after_s(exception)
        if server_asked is not None:
            # A little jitter, so calls told the same delay do not return in one burst.
            spread = max(0.01, server_asked * 0.1)
            return min(server_asked + random.uniform(0, spread), self.config.backoff_max_s)
        ceiling = min(
            self.config.backoff_max_s,
            self.config.backoff_initial_s * 2 ** (state.attempt_number - 1),
        )
        return random.uniform(ceiling / 2, ceiling)  # "equal jitter"

    def _before_retry(self, state: RetryCallState) -> None:
        self.stats.retries += 1

    async def _chat(
        self,
        endpoint: _Endpoint,
        messages: list[dict[str, str]],
        params: Mapping[str, Any],
        schema: type[BaseModel] | None,
        schema_json: dict[str, Any] | None,
        metric: str,
    ) -> tuple[str, TokenUsage]:
        """One judge call (with retries): the reply text and its usage."""
        import openai

        while True:
            structured = schema_json is not None and endpoint.structured != "prompt"
            options: dict[str, Any] = dict(params)
            sent = messages
            if schema is not None and schema_json is not None:
                if structured:
                    options["response_format"] = {
                        "type": "json_schema",
                        "json_schema": {
                            "name": schema.__name__,
                            "schema": schema_json,
                            "strict": True,
                        },
                    }
                else:
                    sent = _with_schema_in_prompt(messages, schema.__name__, schema_json)
            estimate = estimate_tokens("".join(m["content"] for m in sent)) + int(
                options.get("max_tokens") or _DRY_RUN_REPLY_TOKENS
            )
            try:
                completion = await self._request(
                    endpoint,
                    estimate,
                    functools.partial(
                        endpoint.client.chat.completions.create,
                        model=endpoint.model,
                        messages=sent,
                        **options,
                    ),
                )
            except openai.BadRequestError as exc:
                settings = endpoint.settings
                auto = (
                    isinstance(settings, GenerationConfig) and settings.structured_output == "auto"
                )
                if structured and auto and _about_structured_output(exc):
                    # The endpoint does not take a JSON schema: describe it in the prompt.
                    logger.warning(
                        "%s rejected structured output (%s); asking with the schema in the "
                        "prompt for the rest of the run",
                        endpoint.identity,
                        self.redact(_status_text(exc)),
                    )
                    endpoint.structured = "prompt"
                    continue
                self._failed(metric)
                message = f"the judge refused the request: {_status_text(exc)}"
                raise CallFailed(self.redact(message)) from None
            except (BudgetExhausted, NotCalled):
                raise
            except Exception as exc:
                self._failed(metric)
                raise self._call_failed(endpoint, exc) from None
            break
        try:
            usage = _usage(completion, sent)
            choice = completion.choices[0] if completion.choices else None
            text = (choice.message.content if choice is not None else None) or ""
            finish_reason = choice.finish_reason if choice is not None else None
        except (AttributeError, IndexError, TypeError):
            # A 200 that is not a chat completion (an HTML page from a proxy, say).
            self._failed(metric)
            reply = self.redact(repr(completion)[:200])
            raise CallFailed(f"the judge's reply is not a chat completion: {reply}") from None
        self._spent(metric, endpoint, usage)
        if finish_reason == "length":
            self._failed(metric)
            limit = options.get("max_tokens")
            raise TruncatedReply(
                "the judge's reply was cut off by the token limit"
                + (f" (max_tokens={limit})" if limit else "")
                + "; raise llm.generation.max_tokens"
            )
        return text, usage

    async def _cached_embeddings(
        self, keys: list[str], metric: str
    ) -> tuple[dict[str, tuple[list[float], int]], list[str]]:
        """The cached vectors of ``keys`` and the keys still missing, after waiting for those
        another call is fetching right now (two metrics embedding the same texts)."""
        if self.cache is None:
            return {}, list(dict.fromkeys(keys))
        found = self.cache.get_embeddings(keys)
        missing = list(dict.fromkeys(key for key in keys if key not in found))
        leaders = {self._in_flight[key] for key in missing if key in self._in_flight}
        if leaders:
            await asyncio.wait(leaders)
            found.update(self.cache.get_embeddings(missing))
            missing = [key for key in missing if key not in found]
        if len(missing) < len(set(keys)):
            self.stats.cache_hits += 1
            self.stats.metric(metric).cache_hits += 1
        return found, missing

    @contextmanager
    def _making(self, keys: Sequence[str]) -> Iterator[None]:
        """Mark ``keys`` as being fetched, for :meth:`_cached_embeddings` (with the cache)."""
        if self.cache is None:
            yield
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        mine = [key for key in keys if key not in self._in_flight]
        for key in mine:
            self._in_flight[key] = done
        try:
            yield
        finally:
            for key in mine:
                del self._in_flight[key]
            done.set_result(None)

    def _local(self, metric: str, texts: int) -> None:
        self.stats.local_texts += texts
        self.stats.metric(metric).local_texts += texts

    async def _embed_locally(
        self, endpoint: _LocalEmbedding, texts: Sequence[str], metric: str
    ) -> Embedded:
        keys = [
            request_key(
                {"kind": "embedding", "endpoint": endpoint.identity, "model": "", "input": text}
            )
            for text in texts
        ]
        found, missing = await self._cached_embeddings(keys, metric)
        if missing:
            if self.dry_run:
                self.stats.planned.setdefault(metric, MetricCalls()).local_texts += len(missing)
                raise NotCalled("dry run: nothing was computed")
            text_of = dict(zip(keys, texts, strict=True))
            try:
                with self._making(missing):
                    vectors = await endpoint.batcher.run([text_of[key] for key in missing])
            except Exception as exc:
                self._failed(metric)
                raise CallFailed(f"the local model {endpoint.identity} failed: {exc!r}") from None
            self._local(metric, len(missing))
            entries = [(key, vector, 0) for key, vector in zip(missing, vectors, strict=True)]
            if self.cache is not None:
                self.cache.put_embeddings(endpoint.identity, entries)
            found.update({key: (vector, 0) for key, vector, _ in entries})
        return Embedded([found[key][0] for key in keys], TokenUsage(0, 0), 0.0)

    async def _embed_batch(
        self,
        endpoint: _Endpoint,
        texts: list[str],
        keys: list[str],
        params: Mapping[str, Any],
        metric: str,
    ) -> dict[str, tuple[list[float], int]]:
        estimate = sum(estimate_tokens(text) for text in texts)
        try:
            response = await self._request(
                endpoint,
                estimate,
                lambda: endpoint.client.embeddings.create(
                    model=endpoint.model, input=texts, **params
                ),
            )
            try:
                data = sorted(response.data, key=_index)
                vectors = [[float(x) for x in item.embedding] for item in data]
            except (AttributeError, TypeError, ValueError):
                raise CallFailed(
                    "the embedding endpoint's reply is not a list of embeddings"
                ) from None
            if len(vectors) != len(texts):
                raise CallFailed(
                    f"the embedding endpoint returned {len(vectors)} vectors for {len(texts)} texts"
                )
        except (BudgetExhausted, NotCalled):
            raise
        except LLMError:
            self._failed(metric)
            raise
        except Exception as exc:
            self._failed(metric)
            raise self._call_failed(endpoint, exc) from None
        reported = getattr(getattr(response, "usage", None), "prompt_tokens", None)
        total = reported if isinstance(reported, int) and reported > 0 else estimate
        self._spent(metric, endpoint, TokenUsage(total, 0))
        # The batch's tokens, shared out by length, are each text's nominal usage.
        lengths = [max(1, len(text)) for text in texts]
        shares = [round(total * length / sum(lengths)) for length in lengths]
        entries = list(zip(keys, vectors, shares, strict=True))
        if self.cache is not None:
            self.cache.put_embeddings(endpoint.model, entries)
        return {key: (vector, share) for key, vector, share in entries}

    async def _request(self, endpoint: _Endpoint, tokens: int, send: Callable[[], Any]) -> Any:
        """Send one request under the endpoint's limits, retrying transient failures."""
        async for attempt in self._retrying(endpoint):
            with attempt:
                async with endpoint.lane.slot(tokens):
                    # Calls queued for a slot see what happened while they waited.
                    if endpoint.refused is not None:
                        raise CallFailed(endpoint.refused)
                    self._check_budget()
                    self.stats.requests += 1
                    return await send()
        raise AssertionError("unreachable: tenacity re-raises the last failure")

    def _call_failed(self, endpoint: _Endpoint, exc: BaseException) -> LLMError:
        import openai

        if isinstance(exc, LLMError):
            return exc
        if isinstance(exc, openai.APIStatusError) and exc.status_code in (401, 403, 404):
            endpoint.refused = self.redact(
                f"the {endpoint.role} endpoint refused the request: {_status_text(exc)}"
            )
            return CallFailed(endpoint.refused)
        attempts = self.config.max_retries + 1
        if isinstance(exc, openai.APITimeoutError):
            what = f"timed out after {self.config.timeout_s:g} s"
        elif isinstance(exc, openai.APIStatusError):
            what = _status_text(exc)
        elif isinstance(exc, openai.APIConnectionError):
            what = f"connection failed ({exc})"
        else:
            what = repr(exc)
        if _retryable(exc):
            what += f" ({attempts} attempt{'s' if attempts != 1 else ''})"
        return CallFailed(self.redact(f"{endpoint.role} call failed: {what}"))


def _sdk_parameters(
    create: Callable[..., Any], settings: GenerationConfig | EmbeddingConfig
) -> dict[str, Any]:
    """The config's extra request parameters, as the SDK takes them: the ones its ``create``
    declares as keywords, and the rest (``top_k``, ``min_p``, ...) in ``extra_body``."""
    declared = set(inspect.signature(create).parameters)
    params: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in settings.request_parameters.items():
        if key in declared and key not in ("model", "messages", "input", "extra_body"):
            params[key] = value
        else:
            extra[key] = value
    if extra:
        params["extra_body"] = extra
    return params


def _index(item: Any) -> int:
    return int(getattr(item, "index", 0))


def _retryable(exc: BaseException) -> bool:
    import openai

    if isinstance(exc, openai.APITimeoutError | openai.APIConnectionError):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return False


def _retry_after_s(exc: BaseException | None) -> float | None:
    """The delay a 429/503 response asks for (``retry-after-ms`` or ``Retry-After``)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    seconds = headers.get("retry-after")
    if seconds is None:
        return None
    try:
        return max(0.0, float(seconds))
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(seconds)
    except (TypeError, ValueError):
        return None  # neither seconds nor an HTTP date: back off as usual
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.UTC)
    return max(0.0, parsed.timestamp() - time.time())


def _about_structured_output(exc: Any) -> bool:
    """Whether a 400 complains about the structured-output request (not, say, the prompt's
    length)."""
    body = getattr(exc, "body", None)
    param = body.get("param") if isinstance(body, Mapping) else None
    text = f"{param} {_status_text(exc)}".lower()
    return any(word in text for word in ("response_format", "json_schema", "structured", "schema"))


def _status_text(exc: Any) -> str:
    message = getattr(exc, "message", None) or str(exc)
    status = getattr(exc, "status_code", None)
    text = f"{status} {message}" if status is not None else str(message)
    return " ".join(text.split())[:300]


def _usage(completion: Any, messages: Sequence[Mapping[str, str]]) -> TokenUsage:
    usage = getattr(completion, "usage", None)
    prompt = getattr(usage, "prompt_tokens", None)
    reply = getattr(usage, "completion_tokens", None)
    if isinstance(prompt, int) and isinstance(reply, int):
        return TokenUsage(prompt, reply)
    # The endpoint reported no usage: estimate it, so costs are not silently zero.
    choices = getattr(completion, "choices", None) or []
    text = (choices[0].message.content or "") if choices else ""
    return TokenUsage(
        estimate_tokens("".join(m["content"] for m in messages)), estimate_tokens(text)
    )


@functools.cache
def _strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema made acceptable to strict structured output: every object
    closed and every property required. Built once per model; read-only."""
    schema = model.model_json_schema()

    def visit(node: Any) -> Any:
        if isinstance(node, dict):
            node = {key: visit(value) for key, value in node.items()}
            if node.get("type") == "object" and "properties" in node:
                node["additionalProperties"] = False
                node["required"] = list(node["properties"])
            return node
        if isinstance(node, list):
            return [visit(item) for item in node]
        return node

    result: dict[str, Any] = visit(schema)
    return result


def _with_schema_in_prompt(
    messages: list[dict[str, str]], name: str, schema: Mapping[str, Any]
) -> list[dict[str, str]]:
    note = (
        "\n\nReply with only a JSON object (no code fence, no other text) that follows this "
        f"JSON schema (schema name: {name}):\n{json.dumps(schema, ensure_ascii=False)}"
    )
    last = dict(messages[-1])
    last["content"] = last["content"] + note
    return [*messages[:-1], last]


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
