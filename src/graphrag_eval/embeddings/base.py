"""The one interface of embedding models, local or remote (:class:`Embedder`, declared with
what the engine uses of it in :mod:`graphrag_eval.llm.services`): texts in, vectors out with
what they cost; and the per-text cache lookup both share. See docs/llm.md (local models,
cache).
"""

from __future__ import annotations

from collections.abc import Sequence

from graphrag_eval.llm.context import CallContext
from graphrag_eval.llm.services import Embedded, Embedder

__all__ = ["Embedded", "Embedder", "Vectors", "cached_vectors"]

Vectors = dict[str, tuple[list[float], int]]
"""Embeddings by cache key: the vector and the input tokens it took."""


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
