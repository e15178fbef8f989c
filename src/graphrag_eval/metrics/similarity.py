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


class SemanticSimilarity(ItemMetric):
    """``semantic_similarity_percentage``."""

    name = "semantic_similarity"
    uses_llm = True
    default = False
    inputs = _ANSWERS
    needs = frozenset({"embeddings"})
    placement = Placement.BEFORE_STEPS
    outputs = (
        OutputKey(
            "semantic_similarity_percentage",
            zero_for_error_samples=True,
            headline=True,
            maximum=100,
        ),
    )
    error_keys = ("semantic_similarity_error",)

    async def score(self, context: ItemContext) -> Outcome:
        answer, reference = _answers(context)
        if not answer.strip() or not reference.strip():
            return Scored({"semantic_similarity_percentage": 0.0})
        embedded = await or_failed(
            need(context.services.embedder, "embeddings").embed(
                [answer, reference], metric=self.name
            )
        )
        if isinstance(embedded, Failed):
            return embedded
        similarity = cosine(*embedded.vectors)
        return Scored({"semantic_similarity_percentage": _percent(similarity, digits=2)})


class BertScore(ItemMetric):
    """``bert_score_precision``, ``bert_score_recall`` and ``bert_score_f1``."""

    name = "bert_score"
    uses_llm = True
    default = False
    inputs = _ANSWERS
    needs = frozenset({"bert_model"})
    placement = Placement.BEFORE_STEPS
    outputs = (
        OutputKey("bert_score_precision", zero_for_error_samples=True, maximum=100),
        OutputKey("bert_score_recall", zero_for_error_samples=True, maximum=100),
        OutputKey("bert_score_f1", zero_for_error_samples=True, headline=True, maximum=100),
    )
    error_keys = ("bert_score_error",)

    async def score(self, context: ItemContext) -> Outcome:
        answer, reference = _answers(context)
        if not answer.strip() or not reference.strip():
            return Scored({key.name: 0.0 for key in self.outputs})
        scores = await or_failed(
            need(context.services.bert_scorer, "bert_model").scores(
                [(answer, reference)], metric=self.name
            )
        )
        if isinstance(scores, Failed):
            return scores
        [(precision, recall, f1)] = scores
        return Scored(
            {
                "bert_score_precision": _percent(precision),
                "bert_score_recall": _percent(recall),
                "bert_score_f1": _percent(f1),
            }
        )
