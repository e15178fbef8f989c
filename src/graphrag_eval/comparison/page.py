"""The HTML page of a comparison of two runs: overall and per-template differences with their
confidence intervals, a chart of the bounded scores' differences, and the questions that got
better or worse (docs/report.md, "Comparing two runs"). It is rendered in the report's page
environment (:mod:`graphrag_eval.report.html`: escaping, no script, its templates)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from graphrag_eval.comparison.console import failure_lines, input_lines
from graphrag_eval.comparison.model import Comparison, MetricChange
from graphrag_eval.comparison.noise_view import noise_header, noise_rows
from graphrag_eval.comparison.units import (
    format_amount,
    format_amount_change,
    format_amount_interval,
)
from graphrag_eval.files.documents import write_text_atomic
from graphrag_eval.report import charts
from graphrag_eval.report.html import page_environment, render_page
from graphrag_eval.report.item_views import clip_text
from graphrag_eval.results.read_run import SavedRun

__all__ = ["ChangeRow", "ChangeRows", "render_comparison", "write_comparison"]

_environment = page_environment(amount=format_amount, amount_change=format_amount_change)


@dataclass(frozen=True, slots=True)
class ChangeRow:
    """One metric's row of a table of changes, its amounts written in its unit."""

    metric: str
    pairs: int
    mean_a: str
    mean_b: str
    difference: str
    interval: str
    verdict: str
    improved: int
    regressed: int
    unchanged: int
    only_a: int
    only_b: int

    @classmethod
    def of(cls, change: MetricChange) -> ChangeRow:
        return cls(
            metric=change.metric,
            pairs=change.pairs,
            mean_a=format_amount(change.mean_a, change.unit),
            mean_b=format_amount(change.mean_b, change.unit),
            difference=format_amount_change(change.difference, change.unit),
            interval=format_amount_interval(change.ci_low, change.ci_high, change.unit),
            verdict=change.direction,
            improved=change.improved,
            regressed=change.regressed,
            unchanged=change.unchanged,
            only_a=change.scored_only_in_a,
            only_b=change.scored_only_in_b,
        )


@dataclass(frozen=True, slots=True)
class ChangeRows:
    """The rows of a table of changes: ``scores``, and ``resources`` (costs, tokens and
    seconds, in their units)."""

    scores: list[ChangeRow]
    resources: list[ChangeRow]


def render_comparison(
    comparison: Comparison,
    run_a: SavedRun | None = None,
    run_b: SavedRun | None = None,
) -> str:
    """The HTML page of a comparison: overall and per-template differences with their
    confidence intervals, and the questions that got better or worse (with their texts when
    the runs are given)."""
    questions: dict[str, str] = {}
    for run in (run_a, run_b):
        for result in run.results.results if run is not None else ():
            questions.setdefault(
                str(result.question_id), clip_text(result.fields.get("question_text"))
            )
    scaled = _scaled_differences(comparison)
    return render_page(
        "compare.html.j2",
        f"graphrag-eval comparison: {comparison.run_b} vs {comparison.run_a}",
        _environment,
        comparison=comparison,
        rows=_change_rows(comparison.overall.values()),
        chart=charts.difference_chart(scaled) if scaled else None,
        templates=[
            (template_id, _change_rows(changes.values()))
            for template_id, changes in comparison.per_template.items()
        ],
        changed=[
            (change, questions)
            for change in comparison.overall.values()
            if change.better_items or change.worse_items
        ],
        questions=questions,
        confidence=f"{comparison.confidence:.0%}",
        failures=failure_lines(comparison),
        input_lines=input_lines(comparison),
        noise_header=noise_header(comparison),
        noise_rows=noise_rows(comparison),
    )


def _scaled_differences(comparison: Comparison) -> list[tuple[str, float, float, float]]:
    """Each bounded metric's difference and interval in percent of its best value."""
    scaled = []
    for name, change in comparison.overall.items():
        best = comparison.keys[name].maximum
        if best and change.difference is not None:
            factor = 100 / best
            scaled.append(
                (
                    name,
                    change.difference * factor,
                    (change.ci_low or 0) * factor,
                    (change.ci_high or 0) * factor,
                )
            )
    return scaled


def write_comparison(
    comparison: Comparison,
    path: str | Path,
    run_a: SavedRun | None = None,
    run_b: SavedRun | None = None,
) -> Path:
    """Write the HTML page of a comparison to ``path`` and return the path."""
    path = Path(path)
    write_text_atomic(path, render_comparison(comparison, run_a, run_b))
    return path


def _change_rows(changes: Iterable[MetricChange]) -> ChangeRows:
    rows = ChangeRows([], [])
    for change in changes:
        (rows.scores if change.is_score else rows.resources).append(ChangeRow.of(change))
    return rows
