"""Answer correctness (docs/metrics.md): claims of the reference and actual answers, judged by
the LLM.

One judge call returns four tab-separated values: the claims in the reference answer, the
claims in the actual answer, the matching claims, and an explanation. The counts must be
integers with ``1 <= reference``, ``1 <= actual`` and ``0 <= matching <= both``; anything
else is a malformed reply (one re-ask, then ``answer_eval_error``).

``answer_recall = matching / reference``, ``answer_precision = matching / actual``,
``answer_f1`` their harmonic mean (0 when nothing matches).
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from pydantic import field_validator

from graphrag_eval.config.base import Section
from graphrag_eval.config.model import EvaluationConfig
from graphrag_eval.llm.engine import LLMEngine, ReplyError
from graphrag_eval.llm.prompts import prompt
from graphrag_eval.llm.replies import tab_separated
from graphrag_eval.metrics.base import (
    Failed,
    ItemContext,
    Outcome,
    OutputKey,
    Scored,
    Unit,
)
from graphrag_eval.metrics.judging import JudgedAnswer, answer_fields, messages, not_sent, or_failed
from graphrag_eval.metrics.services import need

__all__ = ["AnswerCorrectness", "ClaimCounts", "judge_correctness", "parse_claim_counts"]

_ANSWER = ("reference_answer",)


ANSWER_CORRECTNESS_PLACEHOLDERS = frozenset({"question", "reference_answer", "actual_answer"})


class AnswerCorrectnessConfig(Section):
    """Answer correctness: claims of the reference and actual answers, judged by the LLM."""

    enabled: bool = True
    """Run it (when the LLM is configured and the item has both answers)."""

    prompt: str | None = None
    """A prompt to use instead of the built-in one. It must contain exactly the placeholders
    ``{question}``, ``{reference_answer}`` and ``{actual_answer}`` (write ``{{``/``}}`` for
    literal braces) and ask for one line of four tab-separated values: reference claims,
    actual claims, matching claims, explanation."""

    @field_validator("prompt")
    @classmethod
    def _check_placeholders(cls, prompt: str | None) -> str | None:
        if prompt is None:
            return None
        try:
            fields = {
                name for _, name, _, _ in string.Formatter().parse(prompt) if name is not None
            }
        except ValueError as exc:
            raise ValueError(f"prompt is not a valid template: {exc}") from None
        expected = ANSWER_CORRECTNESS_PLACEHOLDERS
        if fields != expected:
            missing = ", ".join("{" + name + "}" for name in sorted(expected - fields))
            unknown = ", ".join("{" + name + "}" for name in sorted(fields - expected))
            parts = [
                f"missing {missing}" if missing else "",
                f"unknown {unknown}" if unknown else "",
            ]
            raise ValueError(
                "prompt must use exactly {question}, {reference_answer} and {actual_answer}: "
                + "; ".join(part for part in parts if part)
            )
        try:  # nested fields, conversions and format specs show only when formatting
            prompt.format(question="q", reference_answer="r", actual_answer="a")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"prompt cannot be filled in: {exc!r}") from None
        return prompt


@dataclass(frozen=True, slots=True)
class ClaimCounts:
    reference: int
    actual: int
    matching: int
    reason: str

    @property
    def recall(self) -> float:
        return self.matching / self.reference

    @property
    def precision(self) -> float:
        return self.matching / self.actual

    @property
    def f1(self) -> float:
        total = self.recall + self.precision
        return 2 * self.recall * self.precision / total if total else 0.0


_FOUR_VALUES = tab_separated(4)


def _count(text: str, what: str) -> int:
    try:
        number = float(text)
    except ValueError:
        raise ReplyError(f"the {what} count {text!r} is not a number") from None
    if not number.is_integer():
        raise ReplyError(f"the {what} count {text!r} is not an integer")
    return int(number)


def parse_claim_counts(text: str) -> ClaimCounts:
    """Read the judge's four tab-separated values; :class:`ReplyError` when they are not
    valid counts."""
    reference_text, actual_text, matching_text, reason = _FOUR_VALUES(text)
    reference = _count(reference_text, "reference claims")
    actual = _count(actual_text, "actual claims")
    matching = _count(matching_text, "matching claims")
    if reference < 1 or actual < 1:
        raise ReplyError(f"claim counts must be at least 1, got {reference} and {actual}")
    if not 0 <= matching <= min(reference, actual):
        raise ReplyError(
            f"matching claims ({matching}) must be between 0 and the smaller of the reference "
            f"({reference}) and actual ({actual}) counts"
        )
    return ClaimCounts(reference, actual, matching, reason)


def correctness_prompt(config: EvaluationConfig, question: str, reference: str, actual: str) -> str:
    settings = config.section(AnswerCorrectness.section, AnswerCorrectnessConfig)
    template = settings.prompt or prompt("answer_correctness")
    return template.format(question=question, reference_answer=reference, actual_answer=actual)


class AnswerCorrectness(JudgedAnswer):
    """``answer_recall``/``_precision``/``_f1`` from the judge's claim counts."""

    name = "answer_correctness"
    section = "answer_correctness"
    settings_model = AnswerCorrectnessConfig
    default = True  # the one judged-answer metric that runs by default
    outputs = (
        OutputKey.detail("answer_reference_claims_count", Unit.COUNT),
        OutputKey.detail("answer_actual_claims_count", Unit.COUNT),
        OutputKey.detail("answer_matching_claims_count", Unit.COUNT),
        OutputKey.detail("answer_correctness_reason"),
        OutputKey("answer_recall", zero_for_error_samples=True, requires=_ANSWER, maximum=1),
        OutputKey("answer_precision", zero_for_error_samples=True, requires=_ANSWER, maximum=1),
        OutputKey(
            "answer_f1", zero_for_error_samples=True, requires=_ANSWER, headline=True, maximum=1
        ),
        OutputKey.cost("answer_correctness_cost"),
    )
    error_keys = ("answer_eval_error",)

    def enabled(self, config: EvaluationConfig) -> bool:
        return config.section(self.section, AnswerCorrectnessConfig).enabled

    async def score(self, context: ItemContext) -> Outcome:
        fields = answer_fields(context)
        return await judge_correctness(
            need(context.services.judge, "judge"),
            context.config,
            fields["question"],
            fields["reference_answer"],
            fields["actual_answer"],
        )


async def judge_correctness(
    engine: LLMEngine, config: EvaluationConfig, question: str, reference: str, actual: str
) -> Outcome:
    """Judge one answer against its reference: the metric's keys, or its failure."""
    blank = [
        name
        for name, text in (
            ("question_text", question),
            ("reference_answer", reference),
            ("actual_answer", actual),
        )
        if not text.strip()
    ]
    if blank:
        return not_sent(", ".join(blank))
    judged = await or_failed(
        engine.judge(
            messages(correctness_prompt(config, question, reference, actual)),
            parse_claim_counts,
            metric=AnswerCorrectness.name,
        )
    )
    if isinstance(judged, Failed):
        return judged
    counts = judged.value
    return Scored(
        {
            "answer_reference_claims_count": counts.reference,
            "answer_actual_claims_count": counts.actual,
            "answer_matching_claims_count": counts.matching,
            "answer_correctness_reason": counts.reason,
            "answer_recall": counts.recall,
            "answer_precision": counts.precision,
            "answer_f1": counts.f1,
            "answer_correctness_cost": judged.cost_usd,
        }
    )
