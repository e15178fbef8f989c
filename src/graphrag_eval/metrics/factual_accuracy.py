"""G-Eval factual accuracy of the metrics reference (docs/metrics.md, "Factual accuracy").

One judge call scores the candidate answer against the reference answer on three criteria,
each 0-100 with the reference's rubric: correctness, completeness and consistency.
``factual_accuracy_percentage`` is their weighted mean (0.5, 0.3 and 0.2 by default,
``factual_accuracy.weights``), computed here rather than taken from the judge;
``factual_accuracy_grade`` is A (>= 80), B (>= 60), C (>= 40), D (>= 20) or E. A reply off
the scale is malformed (re-asked once, then ``factual_accuracy_error``): a score outside
0-100, or three scores all at most 1 and not all 0 (a judge answering on a 0-1 scale).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from graphrag_eval.config.base import Section, Weights
from graphrag_eval.llm.engine import ReplyError
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

__all__ = ["CRITERIA", "FactualAccuracy", "FactualAccuracyReply", "grade"]


class FactualAccuracyWeights(Weights):
    """Weights of the G-Eval criteria in ``factual_accuracy_percentage``."""

    correctness: float = Field(default=0.5, ge=0.0)
    completeness: float = Field(default=0.3, ge=0.0)
    consistency: float = Field(default=0.2, ge=0.0)


class FactualAccuracyConfig(Section):
    """G-Eval factual accuracy: three criteria scored by the judge, weighted."""

    weights: FactualAccuracyWeights = FactualAccuracyWeights()
    """Criterion weights (divided by their sum)."""


CRITERIA = ("correctness", "completeness", "consistency")

GRADES = ((80.0, "A"), (60.0, "B"), (40.0, "C"), (20.0, "D"))


def grade(percentage: float) -> str:
    """The letter grade of a factual accuracy percentage: A >= 80, B >= 60, C >= 40,
    D >= 20, else E."""
    for threshold, letter in GRADES:
        if percentage >= threshold:
            return letter
    return "E"


class Criterion(BaseModel):
    score: float
    reasoning: str


class FactualAccuracyReply(BaseModel):
    """The judge's scores of the three criteria."""

    correctness: Criterion
    completeness: Criterion
    consistency: Criterion
    overall_reasoning: str
    confidence: float


def _check(reply: FactualAccuracyReply) -> None:
    """A reply off the 0-100 scale is malformed: a score outside 0-100, or scores that are
    all at most 1 and not all 0 (a 0-1 scale, such as 0.058 and 0.974)."""
    scores = {name: getattr(reply, name).score for name in CRITERIA}
    for name, score in scores.items():
        if not 0 <= score <= 100:
            raise ReplyError(f"{name}.score must be from 0 to 100, got {score:g}")
    if all(score <= 1 for score in scores.values()) and any(scores.values()):
        given = ", ".join(f"{name} {score:g}" for name, score in scores.items())
        raise ReplyError(
            f"the scores ({given}) are all at most 1, a 0-1 scale: "
            "each score must be an integer from 0 to 100"
        )


class FactualAccuracy(JudgedAnswer):
    """``factual_accuracy_percentage`` and ``factual_accuracy_grade``."""

    name = "factual_accuracy"
    section = "factual_accuracy"
    settings_model = FactualAccuracyConfig
    outputs = (
        OutputKey(
            "factual_accuracy_percentage", zero_for_error_samples=True, headline=True, maximum=100
        ),
        OutputKey(
            "factual_accuracy_grade",
            Aggregation.LABEL,
            unit=Unit.LABEL,
            labels=("A", "B", "C", "D", "E"),
        ),
        *(OutputKey(f"factual_accuracy_{name}", maximum=100) for name in CRITERIA),
        OutputKey.detail("factual_accuracy_reason"),
        OutputKey.cost("factual_accuracy_cost"),
    )
    error_keys = ("factual_accuracy_error",)

    async def score(self, context: ItemContext) -> Outcome:
        fields = answer_fields(context)
        if not fields["reference_answer"].strip():
            return not_sent("reference_answer")
        if not fields["actual_answer"].strip():
            return Scored(
                {
                    "factual_accuracy_percentage": 0.0,
                    "factual_accuracy_grade": "E",
                    **{f"factual_accuracy_{name}": 0.0 for name in CRITERIA},
                    "factual_accuracy_reason": "the answer is blank",
                    "factual_accuracy_cost": 0.0,
                }
            )
        judged = await self._judge(
            context, "factual_accuracy", FactualAccuracyReply, fields, _check
        )
        if isinstance(judged, Failed):
            return judged
        reply = judged.value
        weights = context.config.section(self.section, FactualAccuracyConfig).weights.model_dump()
        total = sum(weights.values())
        scores = {name: float(getattr(reply, name).score) for name in CRITERIA}
        # Rounded so that floating point cannot put an exact threshold (60.0) a hair below.
        percentage = round(sum(scores[name] * weights[name] for name in CRITERIA) / total, 9)
        reason = "\n".join(
            [
                reply.overall_reasoning.strip(),
                *(
                    f"{name} {scores[name]:g}: {getattr(reply, name).reasoning}"
                    for name in CRITERIA
                ),
            ]
        )
        return Scored(
            {
                "factual_accuracy_percentage": percentage,
                "factual_accuracy_grade": grade(percentage),
                **{f"factual_accuracy_{name}": scores[name] for name in CRITERIA},
                "factual_accuracy_reason": reason,
                "factual_accuracy_cost": judged.cost_usd,
            }
        )
