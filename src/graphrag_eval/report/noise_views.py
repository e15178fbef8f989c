"""How a judged key's noise under ``llm.repeats`` is written next to its mean, in the terminal
summary and the HTML report (docs/llm.md, "Repeats and judge noise"): only a run with
repeats has any."""

from __future__ import annotations

from graphrag_eval.formatting import Unit, format_value
from graphrag_eval.results.aggregates import RepeatSpread

__all__ = ["noise_text"]


def noise_text(spread: RepeatSpread | None, unit: Unit = Unit.SCORE) -> str:
    """``±2.1 judge (35% of the variance)``, with ``pass^3 40%, pass@3 70%`` for a pass/fail
    key and the failed repeats; empty without repeats."""
    if spread is None:
        return ""
    parts: list[str] = []
    if spread.judge_std is not None:
        noise = f"±{format_value(spread.judge_std, unit)} judge"
        if spread.noise_share is not None:
            noise += f" ({spread.noise_share:.0%} of the variance)"
        parts.append(noise)
    if spread.pass_hat_k is not None and spread.pass_at_k is not None:
        k = spread.repeats
        parts.append(f"pass^{k} {spread.pass_hat_k:.0%}, pass@{k} {spread.pass_at_k:.0%}")
    if spread.failed_repeats:
        asked = spread.judged_repeats + spread.failed_repeats  # over every question
        parts.append(f"{spread.failed_repeats:,} of {asked:,} repeats failed")
    if not parts:
        parts.append(f"{spread.unanimous:.0%} unanimous over {spread.repeats} repeats")
    return "; ".join(parts)
