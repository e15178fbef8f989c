"""BERTScore from a local model's token embeddings (``bert_score``): each pair's precision,
recall and F1, as the bert-score package computes them (no idf weighting, no baseline
rescaling), batched into forward passes and cached per pair. See docs/metrics.md
(BERTScore) and docs/llm.md (local models).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from graphrag_eval.config.sections import BertScoreConfig
from graphrag_eval.embeddings.batching import Batcher
from graphrag_eval.embeddings.local import run_locally
from graphrag_eval.embeddings.models import (
    TokenEmbeddings,
    hidden_layers,
    local_model,
    resolve_model,
)
from graphrag_eval.errors import ConfigError
from graphrag_eval.llm.cache import request_key
from graphrag_eval.llm.context import CallContext
from graphrag_eval.llm.pricing import TokenUsage

__all__ = ["BertScorer", "bert_score_of"]

Scores = tuple[float, float, float]


class BertScorer:
    """The token-embedding model of BERTScore, with its settings."""

    def __init__(self, settings: BertScoreConfig, calls: CallContext) -> None:
        """Raises :class:`ConfigError` when the model is not on this machine or has no layer
        ``settings.layer``."""
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
        self.calls = calls
        model = local_model(source, identity)

        def score(pairs: list[tuple[str, str]]) -> list[Scores]:
            texts = list(dict.fromkeys(text for pair in pairs for text in pair))
            vectors = model.token_embeddings(
                texts, settings.batch_size, settings.layer, settings.max_length
            )
            of = dict(zip(texts, vectors, strict=True))
            return [bert_score_of(of[candidate], of[reference]) for candidate, reference in pairs]

        # A pair is two texts: batch as many pairs as fill one forward pass.
        self.batcher: Batcher[tuple[str, str], Scores] = Batcher(
            score, max_batch=max(1, settings.batch_size // 2)
        )

    async def scores(self, pairs: Sequence[tuple[str, str]], *, metric: str) -> list[Scores]:
        """BERTScore (precision, recall, F1; 0-1) of each ``(candidate, reference)`` pair."""
        keys = [self._key(candidate, reference) for candidate, reference in pairs]
        found = self._cached(keys)
        if found:
            self.calls.stats.record_cache_hit(metric)
        todo = {key: pair for key, pair in zip(keys, pairs, strict=True) if key not in found}
        if todo:
            scores = await run_locally(
                self.calls,
                self.batcher,
                list(todo.values()),
                identity=self.identity,
                metric=metric,
                texts=len({text for pair in todo.values() for text in pair}),
            )
            for key, score in zip(todo, scores, strict=True):
                found[key] = score
                if self.calls.cache is not None:
                    self.calls.cache.put_reply(
                        key, self.identity, json.dumps(score), TokenUsage(0, 0)
                    )
        return [found[key] for key in keys]

    def _key(self, candidate: str, reference: str) -> str:
        return request_key(
            {
                "kind": "bert_score",
                # Special tokens became matching candidates (as in the bert-score package):
                # scores cached before that are not reused.
                "matching": "bert-score",
                "model": self.identity,
                "layer": self.settings.layer,
                "max_length": self.settings.max_length,
                "candidate": candidate,
                "reference": reference,
            }
        )

    def _cached(self, keys: Sequence[str]) -> dict[str, Scores]:
        found: dict[str, Scores] = {}
        cache = self.calls.cache
        for key in keys:
            cached = cache.get_reply(key) if cache is not None else None
            if cached is not None:
                p, r, f = json.loads(cached.text)
                found[key] = (float(p), float(r), float(f))
        return found


def bert_score_of(
    candidate: TokenEmbeddings, reference: TokenEmbeddings
) -> tuple[float, float, float]:
    """BERTScore precision, recall and F1 (0-1) of two texts' token embeddings, as the
    bert-score package computes them without idf weighting: each scored candidate token is
    matched to its most similar reference token, special tokens included (precision), and
    each scored reference token to its most similar candidate token (recall). A text with
    no scored token scores 0 (docs/metrics.md, BERTScore)."""
    if not bool(candidate.scored.any()) or not bool(reference.scored.any()):
        return 0.0, 0.0, 0.0
    similarity = candidate.vectors @ reference.vectors.T
    precision = float(similarity.max(dim=1).values[candidate.scored].mean())
    recall = float(similarity.max(dim=0).values[reference.scored].mean())
    total = precision + recall
    f1 = 2 * precision * recall / total if total > 0 else 0.0
    return precision, recall, f1
