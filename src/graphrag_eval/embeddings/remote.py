"""Embeddings from an OpenAI-compatible ``/embeddings`` endpoint (``llm.embedding``): texts
batched per request under the endpoint's limits and retries, cached per text, and priced.
See docs/llm.md (configuration, cache, cost).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphrag_eval.config.llm import EmbeddingConfig
from graphrag_eval.embeddings.base import Embedded, Vectors, cached_vectors
from graphrag_eval.errors import BudgetExhausted, CallFailed, LLMError, NotCalled
from graphrag_eval.llm.cache import request_key
from graphrag_eval.llm.client import Endpoint
from graphrag_eval.llm.context import CallContext
from graphrag_eval.llm.pricing import TokenUsage, estimate_tokens

__all__ = ["RemoteEmbedder"]


class RemoteEmbedder:
    """An embedding model at an endpoint (an :class:`~.base.Embedder`)."""

    def __init__(self, endpoint: Endpoint, calls: CallContext) -> None:
        assert isinstance(endpoint.settings, EmbeddingConfig)
        self.endpoint = endpoint
        self.settings: EmbeddingConfig = endpoint.settings
        self.model = endpoint.model
        self.identity = endpoint.identity
        self.calls = calls

    async def embed(self, texts: Sequence[str], *, metric: str) -> Embedded:
        """The vectors of ``texts`` (in order), batched and cached per text."""
        self.endpoint.ensure_usable()
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
        found, missing = await cached_vectors(self.calls, keys, metric)
        if missing:
            text_of = dict(zip(keys, texts, strict=True))
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
        usage = TokenUsage(sum(found[key][1] for key in keys), 0)
        return Embedded(
            [found[key][0] for key in keys], usage, self.calls.cost_usd(self.model, usage)
        )

    def plan(self, metric: str, tokens: int, texts: int) -> None:
        """In a dry run, count one request of about ``tokens`` tokens."""
        self.calls.budget.plan_tokens(metric, self.model, tokens, 0)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.endpoint.close()

    async def _embed_batch(self, texts: list[str], keys: list[str], metric: str) -> Vectors:
        """One request for ``texts``: their vectors by key, counted, priced and cached."""
        estimate = sum(estimate_tokens(text) for text in texts)
        try:
            response = await self._request(texts, estimate)
            vectors = _vectors(response, len(texts))
        except (BudgetExhausted, NotCalled):
            raise
        except LLMError:
            self.calls.stats.record_failure(metric)
            raise
        except Exception as exc:
            self.calls.stats.record_failure(metric)
            raise self.calls.sender.failure(self.endpoint, exc) from None
        reported = getattr(getattr(response, "usage", None), "prompt_tokens", None)
        total = reported if isinstance(reported, int) and reported > 0 else estimate
        usage = TokenUsage(total, 0)
        self.calls.stats.record_call(metric, usage, self.calls.cost_usd(self.model, usage))
        # The batch's tokens, shared out by length, are each text's nominal usage.
        lengths = [max(1, len(text)) for text in texts]
        shares = [round(total * length / sum(lengths)) for length in lengths]
        entries = list(zip(keys, vectors, shares, strict=True))
        if self.calls.cache is not None:
            self.calls.cache.put_embeddings(self.model, entries)
        return {key: (vector, share) for key, vector, share in entries}

    async def _request(self, texts: list[str], estimate: int) -> Any:
        endpoint = self.endpoint
        return await self.calls.sender.send(
            endpoint,
            estimate,
            lambda: endpoint.client.embeddings.create(
                model=endpoint.model, input=texts, **endpoint.request_parameters
            ),
        )


def _vectors(response: Any, count: int) -> list[list[float]]:
    """The vectors of an embeddings reply, in input order; :class:`CallFailed` when it is not
    one, or has not ``count`` of them."""
    try:
        data = sorted(response.data, key=_index)
        vectors = [[float(x) for x in item.embedding] for item in data]
    except (AttributeError, TypeError, ValueError):
        raise CallFailed("the embedding endpoint's reply is not a list of embeddings") from None
    if len(vectors) != count:
        raise CallFailed(
            f"the embedding endpoint returned {len(vectors)} vectors for {count} texts"
        )
    return vectors


def _index(item: Any) -> int:
    return int(getattr(item, "index", 0))
