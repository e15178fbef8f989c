"""Answer relevance (docs/metrics.md; RAGAS answer relevancy), in [0, 1].

The judge writes ``answer_relevance.questions`` (default 3) questions the answer would
respond to, and says whether the answer is non-committal. The score is the mean cosine
similarity of the generated questions' embeddings with the question's embedding (negative
similarities count as 0), or 0 for a non-committal answer. ``answer_relevance_reason`` lists
the generated questions; ``answer_relevance_cost`` is the judge call plus the embeddings.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel

from graphrag_eval.config import EvaluationConfig
from graphrag_eval.errors import LLMError, NotCalled
from graphrag_eval.llm.engine import ReplyError, estimate_tokens
from graphrag_eval.llm.prompts import prompt
from graphrag_eval.llm.replies import json_reply
from graphrag_eval.metrics.base import (
    Aggregation,
    Failed,
    ItemContext,
    ItemMetric,
    Outcome,
    OutputKey,
    Placement,
    Scored,
    Skipped,
)
from graphrag_eval.metrics.judging import NO_EMBEDDING, NO_JUDGE, engine_of, messages

__all__ = ["AnswerRelevance", "GeneratedQuestions", "cosine", "question_similarity"]


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
) -> tuple[float, str, float] | Skipped | Failed:
    """RAGAS answer relevancy of the item, in [0, 1]: the judge writes ``count`` questions
    the answer responds to; the score is their mean cosine similarity with the question
    (negatives count as 0), or 0 when the judge finds the answer non-committal. Returns
    ``(score, reason, cost)``."""
    question = context.question.question_text
    answer = context.response.actual_answer
    if answer is None:
        return Skipped("needs actual_answer")
    engine = engine_of(context)
    if engine is None or not engine.can_judge:
        return Skipped(NO_JUDGE)
    if not engine.can_embed:
        return Skipped(NO_EMBEDDING)
    if not answer.strip() or not question.strip():
        return Failed("question_text or actual_answer is blank; not sent to the judge")

    def check(reply: GeneratedQuestions) -> None:
        usable = [q for q in reply.questions if q.strip()]
        if not reply.noncommittal and len(usable) != count:
            raise ReplyError(f"expected {count} questions, got {len(usable)}")

    try:
        judged = await engine.judge(
            messages(prompt("answer_relevance").format(count=count, answer=answer)),
            json_reply(GeneratedQuestions, check),
            metric=metric,
            schema=GeneratedQuestions,
        )
    except NotCalled:
        # A dry run: count the embeddings that would follow the judge call too.
        engine.plan_embedding(metric, estimate_tokens(question) * (count + 1), count + 1)
        return Failed("dry run")
    except LLMError as exc:
        return Failed(str(exc))
    reply = judged.value
    generated = [q.strip() for q in reply.questions if q.strip()]
    reason = "\n".join(generated)
    if reply.noncommittal:
        note = (reason + "\n" if reason else "") + "(the answer is non-committal)"
        return 0.0, note, judged.cost_usd
    try:
        embedded = await engine.embed([question, *generated], metric=metric)
    except LLMError as exc:
        return Failed(str(exc))
    original, *others = embedded.vectors
    similarity = sum(max(0.0, cosine(original, other)) for other in others) / len(others)
    return min(1.0, similarity), reason, judged.cost_usd + embedded.cost_usd


class AnswerRelevance(ItemMetric):
    """``answer_relevance``: how well the answer addresses the question."""

    name = "answer_relevance"
    uses_llm = True
    needs = frozenset({"judge", "embeddings"})
    placement = Placement.BEFORE_STEPS
    outputs = (
        OutputKey("answer_relevance", zero_for_error_samples=True, headline=True, maximum=1),
        OutputKey("answer_relevance_reason", Aggregation.NONE),
        OutputKey("answer_relevance_cost", lower_is_better=True),
    )
    error_keys = ("answer_relevance_error",)

    def enabled(self, config: EvaluationConfig) -> bool:
        return config.answer_relevance.enabled

    async def score(self, context: ItemContext) -> Outcome:
        count = context.config.answer_relevance.questions
        found = await question_similarity(context, count, self.name)
        if isinstance(found, Skipped | Failed):
            return found
        score, reason, cost = found
        return Scored(
            {
                "answer_relevance": score,
                "answer_relevance_reason": reason,
                "answer_relevance_cost": cost,
            }
        )
