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

from pydantic import BaseModel, Field

from graphrag_eval.config.base import Section
from graphrag_eval.metrics.base import (
    Aggregation,
    Failed,
    ItemContext,
    Outcome,
    OutputKey,
    Scored,
    Unit,
)
from graphrag_eval.metrics.judging import JudgedAnswer, answer_fields, not_sent

__all__ = ["AnswerClassification", "Classification", "uncertainty"]

DEFAULT_UNCERTAINTY_PHRASES = (
    "i don't know",
    "i do not know",
    "unknown",
    "not sure",
    "cannot determine",
    "no information",
    "insufficient data",
    "unable to answer",
    "cannot answer",
    "don't have enough information",
    "not available",
    "no data",
)
"""The metrics reference's list of phrases that make an answer a DON'T KNOW."""

DEFAULT_NON_ANSWERS = ("unknown", "n/a", "none", "null")
"""Whole answers that are a DON'T KNOW (the reference's short non-answers)."""


class AnswerClassificationConfig(Section):
    """``answer_classification``: CORRECT, WRONG or DON'T KNOW."""

    uncertainty_phrases: list[str] = Field(
        default_factory=lambda: list(DEFAULT_UNCERTAINTY_PHRASES)
    )
    """An answer containing one of these phrases (as whole words, ignoring case) is a DON'T
    KNOW, without a judge call."""

    non_answers: list[str] = Field(default_factory=lambda: list(DEFAULT_NON_ANSWERS))
    """An answer that is only one of these (ignoring case and punctuation around it) is a
    DON'T KNOW."""


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


class AnswerClassification(JudgedAnswer):
    """``answer_classification``: CORRECT, WRONG or DON'T KNOW. It needs the judge (as every
    :class:`JudgedAnswer`) even for the answers the phrases decide: counts without any WRONG
    would mislead."""

    name = "answer_classification"
    section = "answer_classification"
    settings_model = AnswerClassificationConfig
    outputs = (
        OutputKey(
            "answer_classification",
            Aggregation.LABEL,
            unit=Unit.LABEL,
            headline=True,
            labels=(CORRECT, WRONG, DONT_KNOW),
            passing=(CORRECT,),
            counts=(
                (CORRECT, "correct_answers_count"),
                (WRONG, "wrong_answers_count"),
                (DONT_KNOW, "dont_know_answers_count"),
            ),
        ),
        OutputKey.detail("answer_classification_reason"),
        OutputKey.cost("answer_classification_cost"),
    )
    error_keys = ("answer_classification_error",)

    async def score(self, context: ItemContext) -> Outcome:
        fields = answer_fields(context)
        answer = fields["actual_answer"]
        settings = context.config.section(self.section, AnswerClassificationConfig)
        phrase = uncertainty(answer, settings.uncertainty_phrases, settings.non_answers)
        if phrase is not None:
            return self._scored(DONT_KNOW, f"the answer says '{phrase}'", 0.0)
        if not answer.strip():
            return self._scored(WRONG, "the answer is blank", 0.0)
        if not fields["reference_answer"].strip():
            return not_sent("reference_answer")
        judged = await self._judge(context, "answer_classification", Classification, fields)
        if isinstance(judged, Failed):
            return judged
        return self._scored(judged.value.classification, judged.value.reason, judged.cost_usd)

    def _scored(self, label: str, reason: str, cost: float) -> Scored:
        return Scored(
            {
                "answer_classification": label,
                "answer_classification_reason": reason,
                "answer_classification_cost": cost,
            }
        )
