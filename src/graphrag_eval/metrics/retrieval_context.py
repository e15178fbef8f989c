"""Deterministic retrieval-context metrics of actual ``retrieval`` steps (docs/metrics.md).

On every successful actual retrieval step of an item whose reference has retrieval steps:

* ``retrieval_context_recall``: share of the reference contexts found among the retrieved.
* ``retrieval_context_precision``: average precision of the retrieved list, a retrieved
  context being relevant when it matches a reference context (each reference context makes
  at most one retrieved context relevant).
* ``retrieval_context_f1``: their harmonic mean.
* ``retrieval_context_ids_average_precision``: average precision of the retrieved context
  ids against the reference ids (a context without id is identified by its text).

Contexts match by id when both have one, else by normalised text similarity at or above
``retrieval_context.similarity_threshold`` (default 0.5). No LLM is involved.

Which reference step an actual retrieval step is compared with: the one the step matching
paired it with; for an unmatched retrieval step (its recall@k was 0, so a failure that must
show), the reference retrieval step it scores best against (the last one on ties).
"""

from __future__ import annotations

from pydantic import Field

from graphrag_eval.config.base import Section
from graphrag_eval.config.model import EvaluationConfig
from graphrag_eval.inputs import ActualStep, ReferenceStep
from graphrag_eval.metrics.base import (
    Failed,
    FailureKind,
    ItemContext,
    Outcome,
    OutputKey,
    Scored,
    StepMetric,
)
from graphrag_eval.steps.retrieval import (
    Context,
    ContextScores,
    average_precision,
    context_key,
    parse_contexts,
    score_contexts,
)

_ERRORS = ("retrieval_context_recall_error", "retrieval_context_precision_error")


def _reference_retrieval_steps(context: ItemContext) -> list[tuple[int, int, ReferenceStep]]:
    groups = context.question.reference_steps or ()
    return [
        (g, i, step)
        for g, group in enumerate(groups)
        for i, step in enumerate(group)
        if step.name == "retrieval" and step.output is not None and step.problem is None
    ]


class RetrievalContextConfig(Section):
    """The deterministic ``retrieval_context_*`` metrics of retrieval steps."""

    enabled: bool = True
    """Compute ``retrieval_context_recall``/``_precision``/``_f1`` and
    ``retrieval_context_ids_average_precision`` on actual retrieval steps."""

    similarity_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    """Two contexts without ids on both sides match when the normalised similarity of their
    texts (0-1, rapidfuzz ratio after case and whitespace folding) reaches this value."""


class RetrievalContext(StepMetric):
    """``retrieval_context_recall``/``_precision``/``_f1`` and
    ``retrieval_context_ids_average_precision`` on actual retrieval steps."""

    name = "retrieval_context"
    section = "retrieval_context"
    settings_model = RetrievalContextConfig
    outputs = (
        OutputKey("retrieval_context_recall", maximum=1),
        OutputKey("retrieval_context_precision", maximum=1),
        OutputKey("retrieval_context_f1", headline=True, maximum=1),
        OutputKey("retrieval_context_ids_average_precision", maximum=1),
    )
    error_keys = _ERRORS

    def enabled(self, config: EvaluationConfig) -> bool:
        return config.section(self.section, RetrievalContextConfig).enabled

    def applies_to(self, context: ItemContext, step: ActualStep) -> bool:
        return (
            step.succeeded
            and step.name == "retrieval"
            and bool(_reference_retrieval_steps(context))
        )

    async def score_step(self, context: ItemContext, step: ActualStep) -> Outcome:
        try:
            retrieved = parse_contexts(step.output)
        except ValueError as exc:
            return Failed(f"the retrieval output cannot be read: {exc}", FailureKind.INPUT)
        settings = context.config.section(self.section, RetrievalContextConfig)
        threshold = settings.similarity_threshold
        candidates = _reference_retrieval_steps(context)
        paired = context.steps.reference_for(step.index) if context.steps else None
        best: tuple[ContextScores, list[Context]] | None = None
        for g, i, reference_step in candidates:
            reference = list(parse_contexts(reference_step.output))
            if not reference:
                continue
            scores = score_contexts(reference, retrieved, threshold)
            if paired == (g, i):
                best = (scores, reference)
                break
            if best is None or scores.f1 >= best[0].f1:
                best = (scores, reference)
        if best is None:
            return Failed("the reference retrieval steps list no contexts", FailureKind.INPUT)
        scores, reference = best
        return Scored(
            {
                "retrieval_context_recall": scores.recall,
                "retrieval_context_precision": scores.precision,
                "retrieval_context_f1": scores.f1,
                "retrieval_context_ids_average_precision": average_precision(
                    [context_key(c) for c in reference], [context_key(c) for c in retrieved]
                ),
            }
        )
