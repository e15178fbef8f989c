"""Embedding similarity metrics of the metrics reference (docs/metrics.md), between the actual and
the reference answer.

* ``semantic_similarity_percentage``: the cosine similarity of the two answers' sentence
  embeddings, clamped at 0, × 100, rounded to 2 decimals; 0 when either is blank. The
  embedding model is ``llm.embedding``, by default the bundled local all-MiniLM-L6-v2.
* ``bert_score_precision``, ``bert_score_recall``, ``bert_score_f1`` (× 100): BERTScore with
  greedy matching of the contextual token embeddings of the local model of
  ``bert_score.model`` (no idf weighting, no baseline rescaling), clamped to 0-100; 0 when
  either answer is blank.
"""

from __future__ import annotations

from abc import abstractmethod

from graphrag_eval.metrics.answer_relevance import cosine
from graphrag_eval.metrics.base import (
    Failed,
    Input,
    ItemContext,
    ItemMetric,
    Outcome,
    OutputKey,
    Placement,
    Scored,
)
from graphrag_eval.metrics.judging import or_failed
from graphrag_eval.metrics.services import need

__all__ = ["BertScore", "SemanticSimilarity"]

_ANSWERS = (Input.REFERENCE_ANSWER, Input.ACTUAL_ANSWER)


def _answers(context: ItemContext) -> tuple[str, str]:
    """The actual and the reference answer (the plan runs these metrics only with both)."""
    return context.response.actual_answer or "", context.question.reference_answer or ""


def _percent(value: float, digits: int = 4) -> float:
    """``value`` × 100, clamped to 0-100 and rounded to ``digits`` decimals (float32
    arithmetic makes identical texts 99.99999 otherwise)."""
    return round(min(100.0, max(0.0, 100.0 * value)), digits)


class _AnswerSimilarity(ItemMetric):
    """What the two similarity metrics share: both answers, a local or remote model, keys
    before the steps, not run by default; every key 0 when either answer is blank, else the
    keys :meth:`_compare` computes (a failed call as :class:`Failed`)."""

    uses_llm = True
    default = False
    inputs = _ANSWERS
    placement = Placement.BEFORE_STEPS

    async def score(self, context: ItemContext) -> Outcome:
        answer, reference = _answers(context)
        if not answer.strip() or not reference.strip():
            return Scored({key.name: 0.0 for key in self.outputs})
        values = await or_failed(self._compare(context, answer, reference))
        if isinstance(values, Failed):
            return values
        return Scored(values)

    @abstractmethod
    async def _compare(self, context: ItemContext, answer: str, reference: str) -> dict[str, float]:
        """The metric's keys for two non-blank answers."""


class SemanticSimilarity(_AnswerSimilarity):
    """``semantic_similarity_percentage``."""

    name = "semantic_similarity"
    needs = frozenset({"embeddings"})
    outputs = (
        OutputKey(
            "semantic_similarity_percentage",
            zero_for_error_samples=True,
            headline=True,
            maximum=100,
        ),
    )
    error_keys = ("semantic_similarity_error",)

    async def _compare(self, context: ItemContext, answer: str, reference: str) -> dict[str, float]:
        embedder = need(context.services.embedder, "embeddings")
        embedded = await embedder.embed([answer, reference], metric=self.name)
        similarity = cosine(*embedded.vectors)
        return {"semantic_similarity_percentage": _percent(similarity, digits=2)}


class BertScore(_AnswerSimilarity):
    """``bert_score_precision``, ``bert_score_recall`` and ``bert_score_f1``."""

    name = "bert_score"
    needs = frozenset({"bert_model"})
    outputs = (
        OutputKey("bert_score_precision", zero_for_error_samples=True, maximum=100),
        OutputKey("bert_score_recall", zero_for_error_samples=True, maximum=100),
        OutputKey("bert_score_f1", zero_for_error_samples=True, headline=True, maximum=100),
    )
    error_keys = ("bert_score_error",)

    async def _compare(self, context: ItemContext, answer: str, reference: str) -> dict[str, float]:
        scorer = need(context.services.bert_scorer, "bert_model")
        [(precision, recall, f1)] = await scorer.scores([(answer, reference)], metric=self.name)
        return {
            "bert_score_precision": _percent(precision),
            "bert_score_recall": _percent(recall),
            "bert_score_f1": _percent(f1),
        }
