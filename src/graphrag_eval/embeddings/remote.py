"""Embeddings from an OpenAI-compatible ``/embeddings`` endpoint (``llm.embedding``): texts
batched per request under the endpoint's limits and retries, cached per text, and priced.
See docs/llm.md (configuration, cache, cost).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from graphrag_eval.config.llm import EmbeddingConfig
from graphrag_eval.embeddings.base import Embedded, Vectors, cached_vectors
from graphrag_eval.errors import BudgetExhausted, CallFailed, LLMError, NotCalled
from graphrag_eval.llm.cache import all_finite, request_key
from graphrag_eval.llm.client import Endpoint, json_body, request
from graphrag_eval.llm.context import CallContext
from graphrag_eval.llm.pricing import TokenUsage, embedding_window, estimate_tokens
from graphrag_eval.llm.wire import OPENAI_BASE_URL

__all__ = ["RemoteEmbedder"]

_OPENAI_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
"""The dimensions of OpenAI's embedding models at its own API (another server may serve a
model under the same name with its own dimension)."""

_CONFIRMATIONS = 3
"""How many times a request is sent again, while no dimension is agreed, for a reply whose
dimension no other source shares yet (three replies of three dimensions: the endpoint's
vectors are not to be trusted)."""

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""Not encodable as UTF-8 (a badly decoded file): replaced before the text is sent."""


class RemoteEmbedder:
    """An embedding model at an endpoint (an :class:`~.base.Embedder`)."""

    def __init__(self, endpoint: Endpoint, calls: CallContext) -> None:
        assert isinstance(endpoint.settings, EmbeddingConfig)
        self.endpoint = endpoint
        self.settings: EmbeddingConfig = endpoint.settings
        self.model = endpoint.model
        self.identity = endpoint.identity
        self.calls = calls
        self.max_input_tokens = self.settings.max_input_tokens or embedding_window(self.model)
        """The longest text sent (``llm.embedding.max_input_tokens``, docs/llm.md)."""
        self.dimension: int | None = _configured_dimension(endpoint.request_parameters) or (
            _OPENAI_DIMENSIONS.get(self.model)
            if str(endpoint.client.base_url).rstrip("/") == OPENAI_BASE_URL
            else None
        )
        """The dimension of the model's vectors once known: the ``dimensions`` request
        parameter, OpenAI's own for its models at its API, else two sources that agree (two
        replies, or a reply and the dimension the cache kept from an earlier run). A reply of
        another dimension is a failed request, sent again: one malformed reply never fixes
        the dimension for the others."""
        self._cached_dimension: int | None = None
        self._votes: Counter[int] = Counter()
        """Dimensions seen in replies (and the cache's) while none is agreed."""
        self._dimension_key = request_key(
            {"endpoint": self.identity, "model": self.model, "params": endpoint.request_parameters}
        )

    async def embed(self, texts: Sequence[str], *, metric: str) -> Embedded:
        """The vectors of ``texts`` (in order), batched and cached per text."""
        self.endpoint.ensure_usable()
        self._check_lengths(texts)
        params = self.endpoint.request_parameters
        keys = [
            request_key(
                {
                    "kind": "embedding",
                    "endpoint": self.identity,
                    "model": self.model,
                    "input": text,
                    "params": params,
                }
            )
            for text in texts
        ]
        if self.dimension is None and not self._votes and self.calls.cache is not None:
            self._cached_dimension = self.calls.cache.get_dimension(self._dimension_key)
            if self._cached_dimension is not None:
                self._votes[self._cached_dimension] += 1
        found, missing = await cached_vectors(self.calls, keys, metric)
        missing += self._misfits(found)
        text_of = dict(zip(keys, texts, strict=True))
        if missing:
            await self._fetch(missing, text_of, found, metric)
            # Cached vectors kept before the endpoint's dimension was known, and not of it.
            stale = self._misfits(found)
            if stale:
                await self._fetch(stale, text_of, found, metric)
        usage = TokenUsage(sum(found[key][1] for key in keys), 0)
        return Embedded(
            [found[key][0] for key in keys], usage, self.calls.cost_usd(self.model, usage)
        )

    async def _fetch(
        self, missing: list[str], text_of: dict[str, str], found: Vectors, metric: str
    ) -> None:
        """Embed the texts of ``missing`` in batches, adding their vectors to ``found``."""
        size = self.settings.batch_size
        if self.calls.budget.dry_run:
            tokens = sum(estimate_tokens(text_of[key]) for key in missing)
            self.calls.budget.plan_tokens(
                metric, self.model, tokens, 0, batches=-(-len(missing) // size)
            )
        self.calls.budget.check()
        with self.calls.in_flight.fetching(missing):
            for start in range(0, len(missing), size):
                batch = missing[start : start + size]
                texts_of_batch = [text_of[key] for key in batch]
                found.update(await self._embed_batch(texts_of_batch, batch, metric))

    def _check_lengths(self, texts: Sequence[str]) -> None:
        """:class:`CallFailed`, before any call, for a text over the model's input limit:
        the endpoint would refuse it, after it had been sent whole."""
        for text in texts:
            tokens = estimate_tokens(text)
            if tokens > self.max_input_tokens:
                raise CallFailed(
                    f"a text to embed is about {tokens} tokens, over the limit of "
                    f"{self.max_input_tokens} (llm.embedding.max_input_tokens, the embedding "
                    "model's input limit): not sent; shorten it or raise the limit"
                )

    def _misfits(self, found: Vectors) -> list[str]:
        """Remove from ``found`` the cached vectors of another dimension than the endpoint's
        (all of them when they disagree and it is not known yet): they are fetched again."""
        dimensions = {len(vector) for vector, _ in found.values()}
        known = self.dimension or self._cached_dimension
        if known is None and len(dimensions) <= 1:
            return []
        misfits = [key for key, (vector, _) in found.items() if len(vector) != known]
        for key in misfits:
            del found[key]
        return misfits

    def plan(self, metric: str, tokens: int, texts: int) -> None:
        """In a dry run, count one request of about ``tokens`` tokens."""
        self.calls.budget.plan_tokens(metric, self.model, tokens, 0)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.endpoint.close()

    async def _embed_batch(self, texts: list[str], keys: list[str], metric: str) -> Vectors:
        """One request for ``texts`` (sent again while its vectors' dimension is not the
        model's, or not confirmed yet): their vectors by key, counted, priced and cached."""
        estimate = sum(estimate_tokens(text) for text in texts)
        unconfirmed = mismatched = 0
        while True:
            vectors, total = await self._reply(texts, estimate, metric)
            dimension = len(vectors[0])
            agreed = self._agreed(dimension)
            degenerate = _degenerate(vectors) if agreed else None
            if agreed and degenerate is None:
                break
            if agreed is None:  # no dimension agreed yet: another reply decides
                unconfirmed += 1
                problem = f"vectors of dimension {dimension}, and no two replies agree yet"
                if unconfirmed <= _CONFIRMATIONS:
                    self.calls.stats.retries += 1
                    continue
            else:
                mismatched += 1  # of another dimension, or unusable (a failed request)
                problem = degenerate or (
                    f"vectors of dimension {dimension}, the model's have {self.dimension} "
                    f"({mismatched} attempt{'s' if mismatched != 1 else ''})"
                )
                if mismatched <= self.calls.config.max_retries:
                    self.calls.stats.retries += 1
                    continue
            self.calls.stats.record_failure(metric)
            raise CallFailed(f"the embedding endpoint returned {problem}")
        # The batch's tokens, shared out by length, are each text's nominal usage.
        lengths = [max(1, len(text)) for text in texts]
        shares = [round(total * length / sum(lengths)) for length in lengths]
        entries = list(zip(keys, vectors, shares, strict=True))
        if self.calls.cache is not None:
            self.calls.cache.put_embeddings(self.model, entries)
        return {key: (vector, share) for key, vector, share in entries}

    async def _reply(
        self, texts: list[str], estimate: int, metric: str
    ) -> tuple[list[list[float]], int]:
        """The vectors of one request for ``texts`` and its input tokens, counted and priced
        (a reply is paid for whether its vectors are used or not)."""
        try:
            response = json_body(await self._request(texts, estimate))
            vectors = _vectors(response, len(texts))
        except (BudgetExhausted, NotCalled):
            raise
        except LLMError:
            self.calls.stats.record_failure(metric)
            raise
        except Exception as exc:
            self.calls.stats.record_failure(metric)
            raise self.calls.sender.failure(self.endpoint, exc) from None
        usage_reported = response.get("usage")
        reported = usage_reported.get("prompt_tokens") if isinstance(usage_reported, dict) else None
        total = reported if isinstance(reported, int) and reported > 0 else estimate
        usage = TokenUsage(total, 0)
        self.calls.stats.record_call(metric, usage, self.calls.cost_usd(self.model, usage))
        return vectors, total

    def _agreed(self, dimension: int) -> bool | None:
        """Whether a reply's ``dimension`` is the model's; ``None`` while none is agreed and
        no other source has this one yet (its vote is counted: the request is sent again, and
        the next reply of that dimension, from any request, agrees it)."""
        if self.dimension is None:
            self._votes[dimension] += 1
            if self._votes[dimension] < 2:
                return None
            self.dimension = dimension
            self._votes.clear()
            if self.calls.cache is not None and dimension != self._cached_dimension:
                self.calls.cache.put_dimension(self._dimension_key, dimension)
        return dimension == self.dimension

    async def _request(self, texts: list[str], estimate: int) -> Any:
        endpoint = self.endpoint
        body = {
            "model": endpoint.model,
            "input": [_LONE_SURROGATE.sub("\ufffd", text) for text in texts],
            "encoding_format": "float",
        }
        usage = TokenUsage(estimate, 0)
        cost = self.calls.cost_usd(self.model, usage) if self.calls.budget.max_cost_usd else 0.0
        return await self.calls.sender.send(
            endpoint,
            estimate,
            request(endpoint, "/embeddings", body, endpoint.request_parameters),
            cost,
        )


def _vectors(response: Any, count: int) -> list[list[float]]:
    """The vectors of an embeddings reply, in input order; :class:`CallFailed` when it is not
    one, or has not ``count`` of them."""
    try:
        data = sorted(response["data"], key=_index)
        vectors = [[float(x) for x in item["embedding"]] for item in data]
    except (KeyError, AttributeError, TypeError, ValueError):
        raise CallFailed("the embedding endpoint's reply is not a list of embeddings") from None
    if len(vectors) != count:
        raise CallFailed(
            f"the embedding endpoint returned {len(vectors)} vectors for {count} texts"
        )
    dimensions = {len(vector) for vector in vectors}
    if len(dimensions) > 1 or 0 in dimensions:
        raise CallFailed("the embedding endpoint returned vectors of different dimensions")
    if not all(all_finite(vector) for vector in vectors):
        raise CallFailed("the embedding endpoint returned a vector that is not finite")
    return vectors


def _degenerate(vectors: list[list[float]]) -> str | None:
    """What makes one of ``vectors`` unusable for a cosine, which needs a length: a vector of
    zeros, or one whose length is not finite; ``None`` when they are all usable."""
    squares = [sum(x * x for x in vector) for vector in vectors]
    if 0.0 in squares:
        return "a vector of zeros"
    return "a vector too long to compare" if math.inf in squares else None


def _configured_dimension(parameters: dict[str, Any]) -> int | None:
    """The ``dimensions`` request parameter (OpenAI's models shortened), when it is one."""
    value = parameters.get("dimensions")
    extra = parameters.get("extra_body")
    if value is None and isinstance(extra, dict):
        value = extra.get("dimensions")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _index(item: Any) -> int:
    return int(item.get("index", 0))
