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

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from graphrag_eval.config.base import Section, Weights
from graphrag_eval.llm.engine import FollowUp, LLMEngine
from graphrag_eval.llm.prompts import prompt
from graphrag_eval.metrics.answer_relevance import INPUTS, NEEDS, question_similarity
from graphrag_eval.metrics.base import (
    DerivedMetric,
    Failed,
    Input,
    ItemContext,
    ItemMetric,
    Outcome,
    OutputKey,
    Scored,
    Skipped,
)
from graphrag_eval.metrics.judging import (
    answer_fields,
    ask,
    contexts_of,
    format_contexts,
    not_sent,
    or_failed,
)
from graphrag_eval.metrics.ragas_replies import (
    CLAIM_VERDICTS,
    CONTEXT_RELEVANCES,
    STATEMENT_VERDICTS,
    ClaimList,
    StatementList,
)
from graphrag_eval.metrics.services import need
from graphrag_eval.metrics.verdicts import VerdictList, judge_items, numbered, ranked

__all__ = [
    "RagasAnswerRelevance",
    "RagasContextPrecision",
    "RagasContextRecall",
    "RagasFaithfulness",
    "RagasScore",
    "ragas_score",
]


class RagasWeights(Weights):
    """Weights of the RAGAS components in ``ragas_score`` (renormalised over the components
    an item has)."""

    faithfulness: float = Field(default=0.30, ge=0.0)
    context_precision: float = Field(default=0.20, ge=0.0)
    context_recall: float = Field(default=0.20, ge=0.0)
    answer_relevance: float = Field(default=0.30, ge=0.0)


class RagasConfig(Section):
    """The RAGAS family: ``ragas_faithfulness``, ``ragas_context_precision``,
    ``ragas_context_recall``, ``ragas_answer_relevance`` and their composite ``ragas_score``."""

    weights: RagasWeights = RagasWeights()
    """Weights of the components in ``ragas_score``."""

    questions: int = Field(default=3, ge=1, le=10)
    """How many questions the judge writes for ``ragas_answer_relevance``."""


def _nonblank(items: list[str]) -> list[str]:
    return [item.strip() for item in items if item.strip()]


class _Ragas(ItemMetric):
    """What the judged RAGAS metrics share."""

    uses_llm = True
    default = False
    needs = frozenset({"judge"})
    section = "ragas"
    settings_model = RagasConfig

    def __init__(self) -> None:
        self.outputs = (
            OutputKey(self.name, zero_for_error_samples=True, headline=True, maximum=100),
            OutputKey.detail(f"{self.name}_reason"),
            OutputKey.cost(f"{self.name}_cost"),
        )
        self.error_keys = (f"{self.name}_error",)

    def _scored(self, score: float, reason: str, cost: float) -> Scored:
        return Scored({self.name: score, f"{self.name}_reason": reason, f"{self.name}_cost": cost})


class _ExtractThenVerify(_Ragas):
    """A metric of two judge calls: one lists the items of a text (the answer's claims, the
    reference answer's statements), the other says which of them the contexts back; the
    score is the share that are backed, × 100."""

    text: Input
    """The item's text whose items are listed (the answer, the reference answer)."""
    placeholder: str
    """The text's placeholder in the extraction prompt."""
    blank_reason: str | None = None
    """The reason when the text is blank, scored 100 (no items); ``None``: a blank text is
    not sent to the judge (a failure)."""
    extract: str
    """The prompt listing the items (its reply has a list ``items_field``)."""
    extract_schema: type[Any]
    items_field: str
    verify: str
    """The prompt judging the items against the contexts (placeholder ``items_field``)."""
    verdicts: VerdictList[Any]
    """The verification reply."""
    verdict_field: str
    """The verdict's flag (``supported``, ``attributed``)."""
    none_reason: str
    """The reason when the text has no items (scored 100, as the reference says)."""

    def __init__(self) -> None:
        super().__init__()
        self.inputs = (self.text, Input.CONTEXTS)

    async def score(self, context: ItemContext) -> Outcome:
        text = answer_fields(context)[self.text.value]
        if not text.strip():
            if self.blank_reason is not None:
                return self._scored(100.0, self.blank_reason, 0.0)
            return not_sent(self.text.value)
        fields = {"question": context.question.question_text, self.placeholder: text}
        contexts = contexts_of(context.response)
        return await self._score(need(context.services.judge, "judge"), contexts, fields, text)

    async def _score(
        self, engine: LLMEngine, contexts: list[str], fields: dict[str, str], text: str
    ) -> Outcome:
        """Score ``text`` (the one ``fields`` show the extraction prompt)."""
        yes, no = self.verdict_field, f"not {self.verdict_field}"
        # With contexts, the verification call follows (a dry run counts it: its prompt
        # lists the extracted items, approximated by the whole text).
        verification = (
            FollowUp(
                judge_prompt=prompt(self.verify).format(
                    contexts=format_contexts(contexts), **{self.items_field: text}
                )
            )
            if contexts
            else None
        )
        extracted = await or_failed(
            ask(
                engine,
                self.extract,
                self.extract_schema,
                self.name,
                fields,
                follow_up=verification,
            )
        )
        if isinstance(extracted, Failed):
            return extracted
        items = _nonblank(getattr(extracted.value, self.items_field))
        if not items:
            return self._scored(100.0, self.none_reason, extracted.cost_usd)
        if not contexts:
            reason = "\n".join(f"[{no}] {item}" for item in items)
            return self._scored(0.0, reason + "\n(no contexts were retrieved)", extracted.cost_usd)
        verified = await judge_items(
            engine,
            self.verdicts,
            self.verify,
            self.name,
            lambda numbers: {
                "contexts": format_contexts(contexts),
                self.items_field: numbered(items, numbers),
            },
            len(items),
        )
        if isinstance(verified, Failed):
            return verified
        found = verified.found
        backed = {number: bool(getattr(v, self.verdict_field)) for number, v in found.items()}
        lines = [
            f"[{yes if backed[number] else no}] {item}: {found[number].reason}"
            if number in found
            else f"[not judged] {item}"
            for number, item in enumerate(items, start=1)
        ]
        note = verified.note(self.verdicts.what)
        reason = "\n".join([*lines, note] if note else lines)
        cost = extracted.cost_usd + verified.cost_usd
        return self._scored(100.0 * sum(backed.values()) / len(found), reason, cost)


class RagasFaithfulness(_ExtractThenVerify):
    """``ragas_faithfulness``: the share of the answer's claims the contexts support."""

    name = "ragas_faithfulness"
    text, placeholder = Input.ACTUAL_ANSWER, "answer"
    extract, extract_schema, items_field = "ragas_claims", ClaimList, "claims"
    verify, verdicts, verdict_field = "ragas_faithfulness", CLAIM_VERDICTS, "supported"
    none_reason = "the answer makes no claims"
    blank_reason = "the answer is blank: it makes no claims"


class RagasContextRecall(_ExtractThenVerify):
    """``ragas_context_recall``: the share of the reference answer's statements the
    contexts contain."""

    name = "ragas_context_recall"
    text, placeholder = Input.REFERENCE_ANSWER, "reference_answer"
    extract, extract_schema, items_field = "ragas_statements", StatementList, "statements"
    verify, verdicts, verdict_field = "ragas_attribution", STATEMENT_VERDICTS, "attributed"
    none_reason = "the reference answer has no statements"


class RagasContextPrecision(_Ragas):
    """``ragas_context_precision``: the share of the retrieved contexts that are relevant."""

    name = "ragas_context_precision"
    inputs = (Input.CONTEXTS,)

    async def score(self, context: ItemContext) -> Outcome:
        contexts = contexts_of(context.response)
        if not contexts:
            return self._scored(0.0, "no contexts were retrieved", 0.0)
        question = context.question.question_text
        if not question.strip():
            return not_sent("question_text")
        reference = context.question.reference_answer
        shown_reference = reference if reference and reference.strip() else "(not given)"
        judged = await judge_items(
            need(context.services.judge, "judge"),
            CONTEXT_RELEVANCES,
            "ragas_context_precision",
            self.name,
            lambda ranks: {
                "question": question,
                "reference_answer": shown_reference,
                "contexts": ranked(contexts, ranks),
            },
            len(contexts),
        )
        if isinstance(judged, Failed):
            return judged
        verdicts = list(judged.found.values())
        relevant = sum(verdict.relevant for verdict in verdicts)
        lines = [
            f"[{v.context}] {'relevant' if v.relevant else 'not relevant'} "
            f"({v.score:g}): {v.reason}"
            for v in verdicts
        ]
        note = judged.note("context")
        reason = "\n".join([*lines, note] if note else lines)
        return self._scored(100.0 * relevant / len(verdicts), reason, judged.cost_usd)


class RagasAnswerRelevance(_Ragas):
    """``ragas_answer_relevance``: ``answer_relevance`` on the reference's 0-100 scale."""

    name = "ragas_answer_relevance"
    inputs = INPUTS
    needs = NEEDS

    async def score(self, context: ItemContext) -> Outcome:
        count = context.config.section("ragas", RagasConfig).questions
        found = await question_similarity(context, count, self.name)
        if isinstance(found, Failed):
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
    section = "ragas"
    settings_model = RagasConfig
    depends_on = tuple(COMPONENTS)
    outputs = (OutputKey("ragas_score", zero_for_error_samples=True, headline=True, maximum=100),)
    error_keys = ()

    async def score(self, context: ItemContext) -> Outcome:
        weights = context.config.section("ragas", RagasConfig).weights.model_dump()
        components = {
            short: context.scores.get(name)
            for name, short in COMPONENTS.items()
            if isinstance(context.scores.get(name), int | float)
        }
        try:
            return Scored({"ragas_score": ragas_score(components, weights)})
        except ValueError:
            return Skipped("no RAGAS component was computed")
