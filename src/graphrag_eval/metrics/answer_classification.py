"""Answer classification (docs/metrics.md, "answer_classification"): CORRECT, WRONG or DON'T KNOW.

An answer containing one of ``answer_classification.uncertainty_phrases`` (matched as whole
words, ignoring case and the kind of apostrophe), or consisting only of one of
``answer_classification.non_answers``, is a DON'T KNOW without a judge call. Any other answer
is classified CORRECT or WRONG by one judge call; a blank answer is WRONG without one. The
aggregates count each class per template and overall (``correct_answers_count``,
``wrong_answers_count``, ``dont_know_answers_count``).

Whole-word matching is a deliberate difference from the reference's substring test, which
would make "no database access was needed" a DON'T KNOW ("no data").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from graphrag_eval.errors import LLMError
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
from graphrag_eval.metrics.judging import NO_JUDGE, engine_of, messages

__all__ = ["AnswerClassification", "Classification", "uncertainty"]

CORRECT, WRONG, DONT_KNOW = "CORRECT", "WRONG", "DON'T KNOW"


class Classification(BaseModel):
    """The judge's verdict."""

    classification: Literal["CORRECT", "WRONG"]
    reason: str


def _fold(text: str) -> str:
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    return " ".join(text.split())


@functools.lru_cache(maxsize=32)
def _patterns(phrases: tuple[str, ...]) -> re.Pattern[str] | None:
    parts = [
        r"\s+".join(re.escape(word) for word in _fold(phrase).split())
        for phrase in phrases
        if phrase.strip()
    ]
    if not parts:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(parts) + r")(?!\w)")


def uncertainty(answer: str, phrases: Sequence[str], non_answers: Sequence[str]) -> str | None:
    """The phrase that makes ``answer`` a DON'T KNOW, or ``None``."""
    folded = _fold(answer)
    pattern = _patterns(tuple(phrases))
    found = pattern.search(folded) if pattern is not None else None
    if found:
        return found.group(0)
    bare = folded.strip(" .!?;:,'\"()[]")
    for word in non_answers:
        if bare == _fold(word):
            return word
    return None


class AnswerClassification(ItemMetric):
    """``answer_classification``: CORRECT, WRONG or DON'T KNOW."""

    name = "answer_classification"
    uses_llm = True
    default = False
    needs = frozenset({"judge"})
    placement = Placement.BEFORE_STEPS
    outputs = (
        OutputKey(
            "answer_classification",
            Aggregation.LABEL,
            headline=True,
            labels=(CORRECT, WRONG, DONT_KNOW),
            counts=(
                (CORRECT, "correct_answers_count"),
                (WRONG, "wrong_answers_count"),
                (DONT_KNOW, "dont_know_answers_count"),
            ),
        ),
        OutputKey("answer_classification_reason", Aggregation.NONE),
        OutputKey("answer_classification_cost", lower_is_better=True),
    )
    error_keys = ("answer_classification_error",)

    async def score(self, context: ItemContext) -> Outcome:
        reference = context.question.reference_answer
        answer = context.response.actual_answer
        if reference is None or answer is None:
            return Skipped("needs reference_answer and actual_answer")
        engine = engine_of(context)
        if engine is None or not engine.can_judge:
            return Skipped(NO_JUDGE)  # not even the phrases: counts without WRONG mislead
        settings = context.config.answer_classification
        phrase = uncertainty(answer, settings.uncertainty_phrases, settings.non_answers)
        if phrase is not None:
            return self._scored(DONT_KNOW, f"the answer says '{phrase}'", 0.0)
        if not answer.strip():
            return self._scored(WRONG, "the answer is blank", 0.0)
        if not reference.strip():
            return Failed("reference_answer is blank; not sent to the judge")
        try:
            judged = await engine.judge(
                messages(
                    prompt("answer_classification").format(
                        question=context.question.question_text,
                        reference_answer=reference,
                        actual_answer=answer,
                    )
                ),
                json_reply(Classification),
                metric=self.name,
                schema=Classification,
            )
        except LLMError as exc:
            return Failed(str(exc))
        return self._scored(judged.value.classification, judged.value.reason, judged.cost_usd)

    def _scored(self, label: str, reason: str, cost: float) -> Scored:
        return Scored(
            {
                "answer_classification": label,
                "answer_classification_reason": reason,
                "answer_classification_cost": cost,
            }
        )
