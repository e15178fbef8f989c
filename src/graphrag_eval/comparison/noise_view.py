"""The judge's noise in a comparison, as the terminal and the comparison page show it: per
metric with judge repeats, the two-level interval beside the questions-only one, the judge's
share of the variance, what would narrow the interval most and the smallest difference the
runs could detect (docs/report.md, "Judge noise in a comparison")."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console
from rich.table import Table
from rich.text import Text

from graphrag_eval.comparison.model import Comparison, MetricChange, NoiseSummary
from graphrag_eval.comparison.units import format_amount, format_amount_interval
from graphrag_eval.formatting import visible_text

__all__ = ["NoiseRow", "noise_header", "noise_rows", "noise_table"]

_MORE = {
    "questions": "more questions",
    "repeats": "more repeats",
}


@dataclass(frozen=True, slots=True)
class NoiseRow:
    """One metric's judge noise, its amounts written as the comparison writes them."""

    metric: str
    repeats: str
    """Valid repeats per question on average, ``A / B``."""
    interval: str
    """The two-level interval (the one the verdict reads)."""
    one_level: str
    """The interval resampling the questions only, the values taken as exact."""
    without_judge: str
    """The interval with the judge's noise taken out."""
    judge_share: str
    narrows_most: str
    detectable: str

    @classmethod
    def of(cls, change: MetricChange, noise: NoiseSummary) -> NoiseRow:
        unit = change.unit
        return cls(
            metric=change.metric,
            repeats=f"{noise.repeats_a:.3g} / {noise.repeats_b:.3g}",
            interval=format_amount_interval(change.ci_low, change.ci_high, unit),
            one_level=format_amount_interval(noise.one_level_ci_low, noise.one_level_ci_high, unit),
            without_judge=format_amount_interval(
                noise.without_judge_ci_low, noise.without_judge_ci_high, unit
            ),
            judge_share=f"{noise.judge_share:.0%}",
            narrows_most=_MORE[noise.narrows_most],
            detectable=format_amount(noise.detectable_difference, unit),
        )


def noise_rows(comparison: Comparison) -> list[NoiseRow]:
    """A row per metric whose overall change has judge noise."""
    return [
        NoiseRow.of(change, change.noise)
        for change in comparison.overall.values()
        if change.noise is not None
    ]


def noise_header(comparison: Comparison) -> list[str]:
    """What the intervals include, and what is assumed of a run without repeats; empty
    without repeats."""
    if comparison.repeats is None:
        return []
    level = f"{comparison.confidence:.0%}"
    return [
        f"Judge repeats per question: up to {comparison.repeats.a} in A, "
        f"{comparison.repeats.b} in B; {comparison.repeats.note}.",
        "A change is significant only when its two-level interval leaves out 0. Judge share: "
        "the judge's part of the variance of B - A; detectable: the smallest difference "
        f"these runs would find at {level} with 80% power.",
    ]


def noise_table(console: Console, comparison: Comparison, width: int) -> Table | None:
    """The terminal's table of the judge's noise per metric, or None without repeats."""
    rows = noise_rows(comparison)
    if not rows:
        return None
    table = Table(box=None, pad_edge=False)
    table.add_column("metric", overflow="fold")
    columns = [
        ("repeats A / B", "repeats"),
        ("interval", "interval"),
        ("questions only", "one_level"),
        ("without judge", "without_judge"),
        ("judge share", "judge_share"),
        ("narrows most", "narrows_most"),
        ("detectable", "detectable"),
    ]
    if width < 120:  # a narrow terminal keeps the verdict's inputs
        columns = [column for column in columns if column[1] not in ("one_level", "without_judge")]
    for title, _ in columns:
        table.add_column(title, justify="right", no_wrap=True)
    for row in rows:
        table.add_row(
            Text(visible_text(row.metric)), *(str(getattr(row, name)) for _, name in columns)
        )
    return table
