"""The RAGAS family of the metrics reference (docs/metrics.md), each 0-100.

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
            OutputKey(self.name, zero_for_error_samples=True, headline=True, maximum=100),
            OutputKey(f"{self.name}_reason", Aggregation.NONE),
            OutputKey(f"{self.name}_cost", lower_is_better=True),
        )

    def _scored(self, score: float, reason: str, cost: float) -> Scored:
        return Scored({self.name: score, f"{self.name}_reason": reason, f"{self.name}_cost": cost})


class _ExtractThenVerify(_Ragas):
    """A metric of two judge calls: one lists the items of a text (the answer's claims, the
    reference answer's statements), the other says which of them the contexts back; the
    score is the share that are backed, × 100."""

    extract: str
    """The prompt listing the items (its reply has a list ``items_field``)."""
    extract_schema: type[BaseModel]
    items_field: str
    verify: str
    """The prompt judging the items against the contexts (placeholder ``items_field``)."""
    verify_schema: type[BaseModel]
    verdict_field: str
    """The verdict's flag (``supported``, ``attributed``)."""
    check: Callable[[Any, int], None]
    none_reason: str
    """The reason when the text has no items (scored 100, as the reference says)."""

    def __init__(self) -> None:
        self.outputs = self._outputs()

    async def _score(
        self, engine: LLMEngine, contexts: list[str], fields: dict[str, str], text: str
    ) -> Outcome:
        """Score ``text`` (the one ``fields`` show the extraction prompt)."""
        yes, no = self.verdict_field, f"not {self.verdict_field}"
        try:
            try:
                extracted = await _ask(
                    engine, self.extract, self.extract_schema, self.name, None, **fields
                )
            except NotCalled:
                if contexts:  # a dry run: the verification call would follow
                    follow_up = prompt(self.verify).format(
                        contexts=format_contexts(contexts), **{self.items_field: text}
                    )
                    engine.plan_follow_up(self.name, follow_up)
                raise
            items = _nonblank(getattr(extracted.value, self.items_field))
            if not items:
                return self._scored(100.0, self.none_reason, extracted.cost_usd)
            if not contexts:
                reason = "\n".join(f"[{no}] {item}" for item in items)
                return self._scored(
                    0.0, reason + "\n(no contexts were retrieved)", extracted.cost_usd
                )
            verified = await _ask(
                engine,
                self.verify,
                self.verify_schema,
                self.name,
                lambda reply: self.check(reply, len(items)),
                contexts=format_contexts(contexts),
                **{self.items_field: json_list(items)},
            )
        except LLMError as exc:
            return Failed(str(exc))
        verdicts = verified.value.verdicts
        backed = [bool(getattr(verdict, self.verdict_field)) for verdict in verdicts]
        reason = "\n".join(
            f"[{yes if ok else no}] {item}: {verdict.reason}"
            for item, ok, verdict in zip(items, backed, verdicts, strict=True)
        )
        cost = extracted.cost_usd + verified.cost_usd
        return self._scored(100.0 * sum(backed) / len(items), reason, cost)


class RagasFaithfulness(_ExtractThenVerify):
    """``ragas_faithfulness``: the share of the answer's claims the contexts support."""

    name = "ragas_faithfulness"
    error_keys = ("ragas_faithfulness_error",)
    extract, extract_schema, items_field = "ragas_claims", ClaimList, "claims"
    verify, verify_schema, verdict_field = "ragas_faithfulness", ClaimVerdicts, "supported"
    check = staticmethod(_claims_check)
    none_reason = "the answer makes no claims"

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
        fields = {"question": context.question.question_text, "answer": answer}
        return await self._score(engine, contexts, fields, answer)


class RagasContextRecall(_ExtractThenVerify):
    """``ragas_context_recall``: the share of the reference answer's statements the
    contexts contain."""

    name = "ragas_context_recall"
    error_keys = ("ragas_context_recall_error",)
    extract, extract_schema, items_field = "ragas_statements", StatementList, "statements"
    verify, verify_schema, verdict_field = "ragas_attribution", StatementVerdicts, "attributed"
    check = staticmethod(_statements_check)
    none_reason = "the reference answer has no statements"

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
        fields = {"question": context.question.question_text, "reference_answer": reference}
        return await self._score(engine, contexts, fields, reference)


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
    outputs = (OutputKey("ragas_score", zero_for_error_samples=True, headline=True, maximum=100),)
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
