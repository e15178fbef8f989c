"""The RAGAS family of the metrics reference (SPEC §6), each 0-100.

Contexts are the response's ``retrieved_contexts``, else the contexts of its successful
retrieval steps (:func:`~graphrag_eval.metrics.judging.contexts_of`). A response with neither
is not scored by the context metrics (the reference's NaN: the system retrieved nothing at
all); a retrieval that returned no contexts scores 0 where the reference says so.

* ``ragas_faithfulness``: the judge lists the answer's atomic claims, then says which the
  contexts support; supported / claims × 100 (100 for an answer with no claims).
* ``ragas_context_precision``: a relevance verdict per context; relevant / contexts × 100.
* ``ragas_context_recall``: the judge lists the reference answer's statements, then says
  which can be attributed to the contexts; attributed / statements × 100 (100 when the
  reference has no statements). The statement list depends on the question and reference
  only, so every system evaluated against the same reference shares it through the cache.
* ``ragas_answer_relevance``: the questions the answer responds to, compared with the question
  by embedding similarity (as ``answer_relevance``, × 100; the two share the judge call).
* ``ragas_score``: the weighted mean of the components an item has, the weights
  (``ragas.weights``) renormalised over them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from graphrag_eval.errors import LLMError, NotCalled
from graphrag_eval.llm.engine import Judged, LLMEngine, ReplyError
from graphrag_eval.llm.prompts import prompt
from graphrag_eval.llm.replies import json_reply
from graphrag_eval.metrics.answer_relevance import question_similarity
from graphrag_eval.metrics.base import (
    Aggregation,
    DerivedMetric,
    Failed,
    ItemContext,
    ItemMetric,
    Outcome,
    OutputKey,
    Scored,
    Skipped,
)
from graphrag_eval.metrics.judging import (
    NO_JUDGE,
    contexts_of,
    engine_of,
    format_contexts,
    json_list,
    messages,
)

__all__ = [
    "RagasAnswerRelevance",
    "RagasContextPrecision",
    "RagasContextRecall",
    "RagasFaithfulness",
    "RagasScore",
    "ragas_score",
]

NO_CONTEXTS = "the response has no retrieved contexts (retrieved_contexts or retrieval steps)"


class ClaimList(BaseModel):
    """The answer's atomic claims."""

    claims: list[str]


class ClaimVerdict(BaseModel):
    claim: int
    supported: bool
    reason: str


class ClaimVerdicts(BaseModel):
    """Whether the contexts support each claim, in order."""

    verdicts: list[ClaimVerdict]


class StatementList(BaseModel):
    """The reference answer's statements."""

    statements: list[str]


class StatementVerdict(BaseModel):
    statement: int
    attributed: bool
    reason: str


class StatementVerdicts(BaseModel):
    """Whether each statement can be attributed to the contexts, in order."""

    verdicts: list[StatementVerdict]


class ContextRelevance(BaseModel):
    context: int
    relevant: bool
    score: float
    reason: str


class ContextRelevances(BaseModel):
    """A relevance verdict per context, in rank order."""

    contexts: list[ContextRelevance]


def _numbered(count: int, numbers: list[int], what: str) -> None:
    if len(numbers) != count:
        raise ReplyError(f"expected {count} verdicts (one per {what}), got {len(numbers)}")
    if numbers != list(range(1, count + 1)):
        raise ReplyError(f"verdicts must be for {what}s 1 to {count} in order, got {numbers}")


def _claims_check(reply: ClaimVerdicts, count: int) -> None:
    _numbered(count, [verdict.claim for verdict in reply.verdicts], "claim")


def _statements_check(reply: StatementVerdicts, count: int) -> None:
    _numbered(count, [verdict.statement for verdict in reply.verdicts], "statement")


def _relevance_check(reply: ContextRelevances, count: int) -> None:
    _numbered(count, [verdict.context for verdict in reply.contexts], "context")
    for verdict in reply.contexts:
        if not 0 <= verdict.score <= 100:
            raise ReplyError(
                f"context {verdict.context}: score must be from 0 to 100, got {verdict.score:g}"
            )


def _nonblank(items: list[str]) -> list[str]:
    return [item.strip() for item in items if item.strip()]


async def _ask(
    engine: LLMEngine,
    template: str,
    schema: type[Any],
    metric: str,
    check: Callable[[Any], None] | None = None,
    **fields: str,
) -> Judged[Any]:
    return await engine.judge(
        messages(prompt(template).format(**fields)),
        json_reply(schema, check),
        metric=metric,
        schema=schema,
    )


class _Ragas(ItemMetric):
    """What the judged RAGAS metrics share."""

    uses_llm = True
    default = False
    needs = frozenset({"judge"})

    def _outputs(self) -> tuple[OutputKey, ...]:
        return (
            OutputKey(self.name, zero_for_error_samples=True, headline=True),
            OutputKey(f"{self.name}_reason", Aggregation.NONE),
            OutputKey(f"{self.name}_cost"),
        )

    def _scored(self, score: float, reason: str, cost: float) -> Scored:
        return Scored({self.name: score, f"{self.name}_reason": reason, f"{self.name}_cost": cost})


class RagasFaithfulness(_Ragas):
    """``ragas_faithfulness``: the share of the answer's claims the contexts support."""

    name = "ragas_faithfulness"
    error_keys = ("ragas_faithfulness_error",)

    def __init__(self) -> None:
        self.outputs = self._outputs()

    async def score(self, context: ItemContext) -> Outcome:
        answer = context.response.actual_answer
        if answer is None:
            return Skipped("needs actual_answer")
        contexts = contexts_of(context.response)
        if contexts is None:
            return Skipped(NO_CONTEXTS)
        engine = engine_of(context)
        if engine is None or not engine.can_judge:
            return Skipped(NO_JUDGE)
        if not answer.strip():
            return self._scored(100.0, "the answer is blank: it makes no claims", 0.0)
        try:
            try:
                extracted = await _ask(
                    engine,
                    "ragas_claims",
                    ClaimList,
                    self.name,
                    question=context.question.question_text,
                    answer=answer,
                )
            except NotCalled:
                if contexts:  # a dry run: the verification call would follow
                    follow_up = prompt("ragas_faithfulness").format(
                        contexts=format_contexts(contexts), claims=answer
                    )
                    engine.plan_follow_up(self.name, follow_up)
                raise
            claims = _nonblank(extracted.value.claims)
            if not claims:
                return self._scored(100.0, "the answer makes no claims", extracted.cost_usd)
            if not contexts:
                reason = "\n".join(f"[not supported] {claim}" for claim in claims)
                return self._scored(
                    0.0, reason + "\n(no contexts were retrieved)", extracted.cost_usd
                )
            verified = await _ask(
                engine,
                "ragas_faithfulness",
                ClaimVerdicts,
                self.name,
                lambda reply: _claims_check(reply, len(claims)),
                contexts=format_contexts(contexts),
                claims=json_list(claims),
            )
        except LLMError as exc:
            return Failed(str(exc))
        verdicts = verified.value.verdicts
        supported = sum(verdict.supported for verdict in verdicts)
        reason = "\n".join(
            f"[{'supported' if v.supported else 'not supported'}] {claim}: {v.reason}"
            for claim, v in zip(claims, verdicts, strict=True)
        )
        return self._scored(
            100.0 * supported / len(claims), reason, extracted.cost_usd + verified.cost_usd
        )


class RagasContextPrecision(_Ragas):
    """``ragas_context_precision``: the share of the retrieved contexts that are relevant."""

    name = "ragas_context_precision"
    error_keys = ("ragas_context_precision_error",)

    def __init__(self) -> None:
        self.outputs = self._outputs()

    async def score(self, context: ItemContext) -> Outcome:
        contexts = contexts_of(context.response)
        if contexts is None:
            return Skipped(NO_CONTEXTS)
        engine = engine_of(context)
        if engine is None or not engine.can_judge:
            return Skipped(NO_JUDGE)
        if not contexts:
            return self._scored(0.0, "no contexts were retrieved", 0.0)
        question = context.question.question_text
        if not question.strip():
            return Failed("question_text is blank; not sent to the judge")
        reference = context.question.reference_answer
        try:
            judged = await _ask(
                engine,
                "ragas_context_precision",
                ContextRelevances,
                self.name,
                lambda reply: _relevance_check(reply, len(contexts)),
                question=question,
                reference_answer=reference if reference and reference.strip() else "(not given)",
                contexts=format_contexts(contexts),
            )
        except LLMError as exc:
            return Failed(str(exc))
        verdicts = judged.value.contexts
        relevant = sum(verdict.relevant for verdict in verdicts)
        reason = "\n".join(
            f"[{v.context}] {'relevant' if v.relevant else 'not relevant'} "
            f"({v.score:g}): {v.reason}"
            for v in verdicts
        )
        return self._scored(100.0 * relevant / len(verdicts), reason, judged.cost_usd)


class RagasContextRecall(_Ragas):
    """``ragas_context_recall``: the share of the reference answer's statements the
    contexts contain."""

    name = "ragas_context_recall"
    error_keys = ("ragas_context_recall_error",)

    def __init__(self) -> None:
        self.outputs = self._outputs()

    async def score(self, context: ItemContext) -> Outcome:
        reference = context.question.reference_answer
        if reference is None:
            return Skipped("needs reference_answer")
        contexts = contexts_of(context.response)
        if contexts is None:
            return Skipped(NO_CONTEXTS)
        engine = engine_of(context)
        if engine is None or not engine.can_judge:
            return Skipped(NO_JUDGE)
        if not reference.strip():
            return Failed("reference_answer is blank; not sent to the judge")
        try:
            try:
                extracted = await _ask(
                    engine,
                    "ragas_statements",
                    StatementList,
                    self.name,
                    question=context.question.question_text,
                    reference_answer=reference,
                )
            except NotCalled:
                if contexts:  # a dry run: the attribution call would follow
                    follow_up = prompt("ragas_attribution").format(
                        contexts=format_contexts(contexts), statements=reference
                    )
                    engine.plan_follow_up(self.name, follow_up)
                raise
            statements = _nonblank(extracted.value.statements)
            if not statements:
                return self._scored(
                    100.0, "the reference answer has no statements", extracted.cost_usd
                )
            if not contexts:
                reason = "\n".join(f"[not attributed] {s}" for s in statements)
                return self._scored(
                    0.0, reason + "\n(no contexts were retrieved)", extracted.cost_usd
                )
            attributed = await _ask(
                engine,
                "ragas_attribution",
                StatementVerdicts,
                self.name,
                lambda reply: _statements_check(reply, len(statements)),
                contexts=format_contexts(contexts),
                statements=json_list(statements),
            )
        except LLMError as exc:
            return Failed(str(exc))
        verdicts = attributed.value.verdicts
        found = sum(verdict.attributed for verdict in verdicts)
        reason = "\n".join(
            f"[{'attributed' if v.attributed else 'not attributed'}] {statement}: {v.reason}"
            for statement, v in zip(statements, verdicts, strict=True)
        )
        return self._scored(
            100.0 * found / len(statements), reason, extracted.cost_usd + attributed.cost_usd
        )


class RagasAnswerRelevance(_Ragas):
    """``ragas_answer_relevance``: ``answer_relevance`` on the reference's 0-100 scale."""

    name = "ragas_answer_relevance"
    needs = frozenset({"judge", "embeddings"})
    error_keys = ("ragas_answer_relevance_error",)

    def __init__(self) -> None:
        self.outputs = self._outputs()

    async def score(self, context: ItemContext) -> Outcome:
        found = await question_similarity(context, context.config.ragas.questions, self.name)
        if isinstance(found, Skipped | Failed):
            return found
        score, reason, cost = found
        return self._scored(100.0 * score, reason, cost)


COMPONENTS = {
    "ragas_faithfulness": "faithfulness",
    "ragas_context_precision": "context_precision",
    "ragas_context_recall": "context_recall",
    "ragas_answer_relevance": "answer_relevance",
}


def ragas_score(components: Mapping[str, float | None], weights: Mapping[str, float]) -> float:
    """The weighted mean of the components that have a value, with the weights renormalised
    over them. ``components`` and ``weights`` are keyed by component (``faithfulness``...).
    Raises ``ValueError`` when no component with a positive weight has a value."""
    present = {
        name: float(value)
        for name, value in components.items()
        if value is not None and value == value and weights.get(name, 0.0) > 0
    }
    total = sum(weights[name] for name in present)
    if not present or total <= 0:
        raise ValueError("no RAGAS component has a value")
    return sum(value * weights[name] / total for name, value in present.items())


class RagasScore(DerivedMetric):
    """``ragas_score``: the weighted composite of the four RAGAS components."""

    name = "ragas_score"
    default = False
    depends_on = tuple(COMPONENTS)
    outputs = (OutputKey("ragas_score", zero_for_error_samples=True, headline=True),)
    error_keys = ()

    async def score(self, context: ItemContext) -> Outcome:
        weights = context.config.ragas.weights.model_dump()
        components = {
            short: context.scores.get(name)
            for name, short in COMPONENTS.items()
            if isinstance(context.scores.get(name), int | float)
        }
        try:
            return Scored({"ragas_score": ragas_score(components, weights)})
        except ValueError:
            return Skipped("no RAGAS component was computed")
