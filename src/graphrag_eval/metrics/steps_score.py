"""``steps_score``: how well the actual steps reproduce the reference steps (docs/steps.md)."""

from __future__ import annotations

from graphrag_eval.metrics.base import (
    Failed,
    FailureKind,
    Input,
    ItemContext,
    ItemMetric,
    Outcome,
    OutputKey,
    Scored,
    Skipped,
)


class StepsScore(ItemMetric):
    """Sum of the match scores of the matched reference steps over the group size; the
    matching itself (``ItemContext.steps``) is computed once per item by the runner."""

    name = "steps_score"
    always = True
    inputs = (Input.REFERENCE_STEPS,)
    outputs = (
        OutputKey(
            "steps_score",
            zero_for_error_samples=True,
            requires=("reference_steps",),
            headline=True,
            maximum=1,
        ),
    )
    error_keys = ("steps_score_error",)

    async def score(self, context: ItemContext) -> Outcome:
        if context.steps_error is not None:
            return Failed(context.steps_error, FailureKind.INTERNAL, "steps")
        if context.steps is None:
            return Skipped("the steps were not matched")
        return Scored({"steps_score": context.steps.score})
