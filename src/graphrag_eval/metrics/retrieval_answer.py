"""``retrieval_answer_*`` (docs/metrics.md): the contexts an actual retrieval step returned, judged
against the item's reference answer. Written on each successful actual ``retrieval`` step
whose output has context texts, when the item has a reference answer.

* ``retrieval_answer_recall`` (RAGAS context recall): the judge splits the reference answer
  into statements and says which are attributable to the contexts; the share that are.
  With ``retrieval_answer_recall_reason``.
* ``retrieval_answer_precision`` (RAGAS context precision with reference): a usefulness
  verdict per context, combined as average precision over ranks
  (``sum_k precision@k * useful_k / number useful``; 0 when none is useful), over the
  contexts judged. With ``retrieval_answer_precision_reason`` (the verdicts' reasons, and
  "3 of 4 contexts judged" when the judge left some without a verdict).
* ``retrieval_answer_f1``: their harmonic mean, when both succeed;
  ``retrieval_answer_f1_cost`` is the sum of the two costs.

The two judge calls run concurrently and fail independently (``_recall_error``,
``_precision_error``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel

from graphrag_eval.config.base import Section
from graphrag_eval.config.model import EvaluationConfig
from graphrag_eval.inputs import ActualStep
from graphrag_eval.llm.engine import Judged, LLMEngine, ReplyError
from graphrag_eval.metrics.base import (
    Failed,
    FailureKind,
    ItemContext,
    Outcome,
    OutputKey,
    Scored,
    Skipped,
    StepMetric,
)
from graphrag_eval.metrics.judging import ask, format_contexts, not_sent, or_failed
from graphrag_eval.metrics.services import need
from graphrag_eval.metrics.verdicts import VerdictList, Verdicts, judge_items, ranked
from graphrag_eval.steps.retrieval import parse_contexts

__all__ = ["AttributedStatements", "ContextVerdicts", "RetrievalAnswer", "ranked_precision"]

_RECALL_ERROR = "retrieval_answer_recall_error"
_PRECISION_ERROR = "retrieval_answer_precision_error"


class Statement(BaseModel):
    statement: str
    attributed: bool


class AttributedStatements(BaseModel):
    """The recall reply: the reference answer's statements, each attributed or not."""

    statements: list[Statement]
    reason: str


class Verdict(BaseModel):
    context: int
    useful: bool
    reason: str


class ContextVerdicts(BaseModel):
    """The precision reply: one usefulness verdict per context, each naming its rank."""

    verdicts: list[Verdict]


def ranked_precision(useful: list[bool]) -> float:
    """Average precision of a ranked list of usefulness verdicts (0 when none is useful)."""
    hits, total = 0, 0.0
    for rank, is_useful in enumerate(useful, start=1):
        if is_useful:
            hits += 1
            total += hits / rank
    return total / hits if hits else 0.0


def _check_statements(reply: AttributedStatements) -> None:
    if not reply.statements:
        raise ReplyError("the reference answer has at least one statement; none was listed")


VERDICTS = VerdictList(ContextVerdicts, "verdicts", Verdict, "context", "context")
"""The precision reply, read as far as it goes (:mod:`.verdicts`)."""


class RetrievalAnswerConfig(Section):
    """``retrieval_answer_*``: retrieved contexts judged against the reference answer."""

    enabled: bool = True
    """Run it on actual retrieval steps with context texts, when the item has a reference
    answer and the LLM is configured."""


class RetrievalAnswer(StepMetric):
    """``retrieval_answer_recall``/``_precision``/``_f1`` on actual retrieval steps."""

    name = "retrieval_answer"
    section = "retrieval_answer"
    settings_model = RetrievalAnswerConfig
    needs = frozenset({"judge"})
    uses_llm = True
    outputs = (
        OutputKey("retrieval_answer_recall", error_keys=(_RECALL_ERROR,), maximum=1),
        OutputKey.detail("retrieval_answer_recall_reason"),
        OutputKey.cost("retrieval_answer_recall_cost", error_keys=(_RECALL_ERROR,)),
        OutputKey("retrieval_answer_precision", error_keys=(_PRECISION_ERROR,), maximum=1),
        OutputKey.detail("retrieval_answer_precision_reason"),
        OutputKey.cost("retrieval_answer_precision_cost", error_keys=(_PRECISION_ERROR,)),
        OutputKey("retrieval_answer_f1", headline=True, maximum=1),
        OutputKey.cost(
            "retrieval_answer_f1_cost",
            sums=("retrieval_answer_recall_cost", "retrieval_answer_precision_cost"),
        ),
    )
    error_keys = (_RECALL_ERROR, _PRECISION_ERROR)

    def enabled(self, config: EvaluationConfig) -> bool:
        return config.section(self.section, RetrievalAnswerConfig).enabled

    def applies_to(self, context: ItemContext, step: ActualStep) -> bool:
        return (
            step.name == "retrieval"
            and step.succeeded
            and context.question.reference_answer is not None
        )

    async def score_step(self, context: ItemContext, step: ActualStep) -> Outcome:
        try:
            contexts = parse_contexts(step.output)
        except ValueError as exc:
            return Failed(f"the step's output is not a list of contexts: {exc}", FailureKind.INPUT)
        texts = [c.text for c in contexts if c.text is not None and c.text.strip()]
        if not texts:
            return Skipped("the retrieved contexts have no texts")
        reference = context.question.reference_answer or ""
        if not reference.strip():
            return not_sent("reference_answer")
        fields = {
            "question": context.question.question_text,
            "reference_answer": reference,
            "contexts": format_contexts(texts),
        }
        engine = need(context.services.judge, "judge")
        recall, precision = await asyncio.gather(
            self._recall(engine, fields), self._precision(engine, fields, texts)
        )
        values: dict[str, Any] = {}
        failures: dict[str, str] = {}
        if isinstance(recall, Judged):
            statements = recall.value.statements
            values["retrieval_answer_recall"] = sum(s.attributed for s in statements) / len(
                statements
            )
            values["retrieval_answer_recall_reason"] = recall.value.reason
            values["retrieval_answer_recall_cost"] = recall.cost_usd
        else:
            failures[_RECALL_ERROR] = recall.error
        if isinstance(precision, Verdicts):
            verdicts = list(precision.found.values())
            values["retrieval_answer_precision"] = ranked_precision([v.useful for v in verdicts])
            lines = [
                f"[{v.context}] {'useful' if v.useful else 'not useful'}: {v.reason}"
                for v in verdicts
            ]
            note = precision.note("context")
            values["retrieval_answer_precision_reason"] = "\n".join(
                [*lines, note] if note else lines
            )
            values["retrieval_answer_precision_cost"] = precision.cost_usd
        else:
            failures[_PRECISION_ERROR] = precision.error
        if isinstance(recall, Judged) and isinstance(precision, Verdicts):
            r = values["retrieval_answer_recall"]
            p = values["retrieval_answer_precision"]
            values["retrieval_answer_f1"] = 2 * r * p / (r + p) if r + p else 0.0
            values["retrieval_answer_f1_cost"] = recall.cost_usd + precision.cost_usd
        return Scored(values, failures, Scored.kind_of(recall, precision))

    async def _recall(
        self, engine: LLMEngine, fields: dict[str, str]
    ) -> Judged[AttributedStatements] | Failed:
        return await or_failed(
            ask(
                engine,
                "retrieval_answer_recall",
                AttributedStatements,
                "retrieval_answer_recall",
                fields,
                _check_statements,
            )
        )

    async def _precision(
        self, engine: LLMEngine, fields: dict[str, str], texts: list[str]
    ) -> Verdicts[Verdict] | Failed:
        return await judge_items(
            engine,
            VERDICTS,
            "retrieval_answer_precision",
            "retrieval_answer_precision",
            lambda ranks: {**fields, "contexts": ranked(texts, ranks)},
            len(texts),
        )
