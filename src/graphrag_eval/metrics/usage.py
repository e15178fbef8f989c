"""Token usage and elapsed time reported by the system under test, copied from responses.

They are declared like metrics so the aggregator needs no special list: they always appear in
the aggregates (zeros when no response reports them), as the seed does.
"""

from __future__ import annotations

from graphrag_eval.metrics.base import (
    ItemContext,
    ItemMetric,
    KeyKind,
    Outcome,
    OutputKey,
    Scored,
    Skipped,
    Unit,
)

USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens", "elapsed_sec")


class Usage(ItemMetric):
    """Copies ``input_tokens``, ``output_tokens``, ``total_tokens`` and ``elapsed_sec``."""

    name = "usage"
    always = True
    outputs = tuple(
        OutputKey(
            key,
            always=True,
            lower_is_better=True,
            unit=Unit.SECONDS if key == "elapsed_sec" else Unit.TOKENS,
            kind=KeyKind.USAGE,
        )
        for key in USAGE_KEYS
    )
    error_keys = ()

    async def score(self, context: ItemContext) -> Outcome:
        response = context.response
        values = {
            key: value
            for key, value in (
                ("input_tokens", response.input_tokens),
                ("output_tokens", response.output_tokens),
                ("total_tokens", response.total_tokens),
                ("elapsed_sec", response.elapsed_sec),
            )
            if value is not None
        }
        return Scored(values) if values else Skipped("the response reports no usage")
