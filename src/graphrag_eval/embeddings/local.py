"""Sentence embeddings from a model run in-process (``llm.embedding.provider: local``, or the
bundled model when no embedding endpoint is configured): no client, no cost, no limits;
concurrent requests are batched into forward passes. See docs/llm.md (local models).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from graphrag_eval.config.llm import EmbeddingConfig
from graphrag_eval.embeddings.base import Embedded, cached_vectors
from graphrag_eval.embeddings.batching import Batcher
from graphrag_eval.embeddings.models import local_model, resolve_model
from graphrag_eval.errors import CallFailed, NotCalled
from graphrag_eval.llm.cache import request_key
from graphrag_eval.llm.context import CallContext
from graphrag_eval.llm.pricing import TokenUsage

__all__ = ["LocalEmbedder", "run_locally"]

X = TypeVar("X")
Y = TypeVar("Y")


class LocalEmbedder:
    """A sentence-embedding model run in-process (an :class:`~.base.Embedder`)."""

    def __init__(self, settings: EmbeddingConfig, calls: CallContext) -> None:
        source, identity = resolve_model(settings.model, "llm.embedding.model")
        self.settings = settings
        self.model = settings.model
        self.identity = f"local:{identity}"
        self.calls = calls
        self.endpoint = None
        """It runs in-process: no endpoint."""
        model = local_model(source, identity)
        self.batcher: Batcher[str, list[float]] = Batcher(
            lambda texts: model.sentence_embeddings(texts, settings.batch_size),
            max_batch=settings.batch_size,
        )

    async def embed(self, texts: Sequence[str], *, metric: str) -> Embedded:
        """The vectors of ``texts`` (in order), batched and cached per text; free."""
        keys = [
            request_key(
                {"kind": "embedding", "endpoint": self.identity, "model": "", "input": text}
            )
            for text in texts
        ]
        found, missing = await cached_vectors(self.calls, keys, metric)
        if missing:
            text_of = dict(zip(keys, texts, strict=True))
            with self.calls.in_flight.fetching(missing):
                vectors = await run_locally(
                    self.calls,
                    self.batcher,
                    [text_of[key] for key in missing],
                    identity=self.identity,
                    metric=metric,
                    texts=len(missing),
                )
            entries = [(key, vector, 0) for key, vector in zip(missing, vectors, strict=True)]
            if self.calls.cache is not None:
                self.calls.cache.put_embeddings(self.identity, entries)
            found.update({key: (vector, 0) for key, vector, _ in entries})
        return Embedded([found[key][0] for key in keys], TokenUsage(0, 0), 0.0)

    def plan(self, metric: str, tokens: int, texts: int) -> None:
        """In a dry run, count ``texts`` for the local model."""
        self.calls.budget.plan_local(metric, texts)

    async def aclose(self) -> None:
        """Nothing to release: the model stays loaded for the process."""


async def run_locally(
    calls: CallContext,
    batcher: Batcher[X, Y],
    inputs: list[X],
    *,
    identity: str,
    metric: str,
    texts: int,
) -> list[Y]:
    """Run ``inputs`` (``texts`` distinct texts) through a local model's batcher, counted in
    the run's statistics. A dry run counts them instead and raises
    :class:`~graphrag_eval.errors.NotCalled`; a failure of the model raises
    :class:`~graphrag_eval.errors.CallFailed`."""
    if calls.budget.dry_run:
        calls.budget.plan_local(metric, texts)
        raise NotCalled("dry run: nothing was computed")
    try:
        results = await batcher.run(inputs)
    except Exception as exc:
        calls.stats.record_failure(metric)
        raise CallFailed(f"the local model {identity} failed: {exc!r}") from None
    calls.stats.record_local(metric, texts)
    return results
