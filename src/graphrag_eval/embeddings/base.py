"""The one interface of embedding models, local or remote: texts in, vectors out with what
they cost; and the per-text cache lookup both share. See docs/llm.md (local models, cache).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from graphrag_eval.llm.context import CallContext
from graphrag_eval.llm.pricing import TokenUsage

__all__ = ["Embedded", "Embedder", "Vectors", "cached_vectors"]

Vectors = dict[str, tuple[list[float], int]]
"""Embeddings by cache key: the vector and the input tokens it took."""


@dataclass(frozen=True, slots=True)
class Embedded:
    """Embedding vectors with what they cost (nominal, as
    :attr:`graphrag_eval.llm.judge.Judged.cost_usd`)."""

    vectors: list[list[float]]
    usage: TokenUsage
    cost_usd: float


class Embedder(Protocol):
    """An embedding model of a run."""

    model: str
    """The model's name as configured."""
    identity: str
    """What identifies the model in cache keys."""

    async def embed(self, texts: Sequence[str], *, metric: str) -> Embedded:
        """The vectors of ``texts`` (in order), batched and cached per text; an
        :class:`~graphrag_eval.errors.LLMError` when they cannot be had."""
        ...

    def plan(self, metric: str, tokens: int, texts: int) -> None:
        """In a dry run, count embedding ``texts`` of about ``tokens`` tokens."""
        ...

    async def aclose(self) -> None:
        """Release what the model holds (an HTTP client)."""
        ...


async def cached_vectors(
    calls: CallContext, keys: Sequence[str], metric: str
) -> tuple[Vectors, list[str]]:
    """The cached vectors of ``keys`` and the keys still missing (each once), after waiting
    for those another call is fetching right now (two metrics embedding the same texts)."""
    cache = calls.cache
    if cache is None:
        return {}, list(dict.fromkeys(keys))
    found = cache.get_embeddings(keys)
    missing = list(dict.fromkeys(key for key in keys if key not in found))
    if await calls.in_flight.wait_for(missing):
        found.update(cache.get_embeddings(missing))
        missing = [key for key in missing if key not in found]
    if len(missing) < len(set(keys)):
        calls.stats.record_cache_hit(metric)
    return found, missing
