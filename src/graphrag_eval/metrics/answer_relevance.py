"""Answer relevance (docs/metrics.md; RAGAS answer relevancy), in [0, 1].

The judge writes ``answer_relevance.questions`` (default 3) questions the answer would
respond to, and says whether the answer is non-committal. The score is the mean cosine
similarity of the generated questions' embeddings with the question's embedding (negative
similarities count as 0), or 0 for a non-committal answer. A reply with fewer questions
than asked is used as it is (the reason says "2 of 3 questions written"), one with more is
cut to the number asked; a reply with none (and not non-committal) is re-asked once, then
the failure. ``answer_relevance_reason`` lists
the generated questions; ``answer_relevance_cost`` is the judge call plus the embeddings.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, Field

from graphrag_eval.config.base import Section
from graphrag_eval.config.model import EvaluationConfig
from graphrag_eval.llm.engine import FollowUp, ListShape, ReplyError, estimate_tokens
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
from graphrag_eval.metrics.judging import ask, not_sent, or_failed
from graphrag_eval.metrics.services import need

__all__ = ["AnswerRelevance", "GeneratedQuestions", "cosine", "question_similarity"]


class AnswerRelevanceConfig(Section):
    """Answer relevance (RAGAS): questions the answer would respond to, compared with the
    question by embedding similarity."""

    enabled: bool = True
    """Run it (when both the LLM and the embedding model are configured)."""

    questions: int = Field(default=3, ge=1, le=10)
    """How many questions the judge writes for each answer."""


INPUTS = (Input.ACTUAL_ANSWER,)
NEEDS = frozenset({"judge", "embeddings"})
"""What :func:`question_similarity` needs (``answer_relevance`` and ``ragas_answer_relevance``)."""


class GeneratedQuestions(BaseModel):
    """The judge's reply: questions the answer responds to, and whether it is evasive."""

    questions: list[str]
    noncommittal: bool


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0 when either vector is zero."""
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return dot / norm if norm else 0.0


async def question_similarity(
    context: ItemContext, count: int, metric: str
) -> tuple[float, str, float] | Failed:
    """RAGAS answer relevancy of the item, in [0, 1]: the judge writes ``count`` questions
    the answer responds to; the score is their mean cosine similarity with the question
    (negatives count as 0), or 0 when the judge finds the answer non-committal. Returns
    ``(score, reason, cost)``. The metric declares the actual answer, the judge and
    embeddings (:data:`NEEDS`, :data:`INPUTS`)."""
    question = context.question.question_text
    answer = context.response.actual_answer or ""
    if not answer.strip() or not question.strip():
        return not_sent("question_text or actual_answer")

    def check(reply: GeneratedQuestions) -> None:
        if not reply.noncommittal and not any(q.strip() for q in reply.questions):
            raise ReplyError(f"expected {count} questions, got none")

    engine = need(context.services.judge, "judge")
    # The embeddings of the generated questions follow the judge call (a dry run counts them).
    embeddings = FollowUp(
        embedding_tokens=estimate_tokens(question) * (count + 1), embedding_texts=count + 1
    )
    judged = await or_failed(
        ask(
            engine,
            "answer_relevance",
            GeneratedQuestions,
            metric,
            {"count": count, "answer": answer},
            check,
            follow_up=embeddings,
            shape=ListShape("questions", count=count),
        )
    )
    if isinstance(judged, Failed):
        return judged
    reply = judged.value
    # The questions it got, up to the number asked (docs/llm.md, "Replies that don't fit").
    generated = [q.strip() for q in reply.questions if q.strip()][:count]
    reason = "\n".join(generated)
    if len(generated) < count and not reply.noncommittal:
        reason += f"\n({len(generated)} of {count} questions written)"
    if reply.noncommittal:
        note = (reason + "\n" if reason else "") + "(the answer is non-committal)"
        return 0.0, note, judged.cost_usd
    embedded = await or_failed(
        need(context.services.embedder, "embeddings").embed([question, *generated], metric=metric)
    )
    if isinstance(embedded, Failed):
        return embedded
    original, *others = embedded.vectors
    similarity = sum(max(0.0, cosine(original, other)) for other in others) / len(others)
    return min(1.0, similarity), reason, judged.cost_usd + embedded.cost_usd


class AnswerRelevance(ItemMetric):
    """``answer_relevance``: how well the answer addresses the question."""

    name = "answer_relevance"
    section = "answer_relevance"
    settings_model = AnswerRelevanceConfig
    uses_llm = True
    inputs = INPUTS
    needs = NEEDS
    placement = Placement.BEFORE_STEPS
    outputs = (
        OutputKey("answer_relevance", zero_for_error_samples=True, headline=True, maximum=1),
        OutputKey.detail("answer_relevance_reason"),
        OutputKey.cost("answer_relevance_cost"),
    )
    error_keys = ("answer_relevance_error",)

    def enabled(self, config: EvaluationConfig) -> bool:
        return config.section(self.section, AnswerRelevanceConfig).enabled

    async def score(self, context: ItemContext) -> Outcome:
        count = context.config.section(self.section, AnswerRelevanceConfig).questions
        found = await question_similarity(context, count, self.name)
        if isinstance(found, Failed):
            return found
        score, reason, cost = found
        return Scored(
            {
                "answer_relevance": score,
                "answer_relevance_reason": reason,
                "answer_relevance_cost": cost,
            }
        )
