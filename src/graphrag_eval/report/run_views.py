"""The tables and charts of the HTML report that come from a run's aggregates: metric rows
overall and per template, label counts, coverage, step counts and the mean per template
(docs/outputs.md, docs/report.md)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graphrag_eval.formatting import format_number, is_cost_key
from graphrag_eval.metrics.base import Aggregation, OutputKey
from graphrag_eval.result_types import ResultLayout
from graphrag_eval.runs import SavedRun

__all__ = [
    "LabelRow",
    "MetricRow",
    "SkipCount",
    "StepRow",
    "TemplateView",
    "coverage_rows",
    "label_rows",
    "metric_rows",
    "output_keys",
    "sample_counts",
    "skip_counts",
    "step_rows",
    "template_means",
    "template_view",
]

_TEMPLATE_CHART_LIMIT = 40  # templates per "mean per template" chart (the lowest ones)


@dataclass(frozen=True, slots=True)
class MetricRow:
    """One metric's statistics in a group of questions."""

    name: str
    mean: float
    median: float
    minimum: float
    maximum: float
    scored: int
    failed: int
    total: int
    macro_mean: float | None = None
    best: float | None = None
    """The metric's best possible value (1 or 100), or None when unbounded."""
    headline: bool = False
    skipped: int = 0
    """Questions its metric was skipped on (it did not apply), from the results' ``skipped``."""
    skip_reason: str = ""
    """The most common reason it was skipped."""


@dataclass(frozen=True, slots=True)
class SkipCount:
    """How many questions skipped a metric, and the most common reason."""

    count: int
    reason: str


@dataclass(frozen=True, slots=True)
class LabelRow:
    name: str
    counts: list[tuple[str, int]]


@dataclass(frozen=True, slots=True)
class StepRow:
    name: str
    total: int
    once_per_sample: int
    errors: int
    empty_results: int


@dataclass(frozen=True, slots=True)
class TemplateView:
    template_id: str
    success: int
    errors: int
    missing: int
    metrics: list[MetricRow]
    labels: list[LabelRow]
    steps: list[StepRow]


def template_means(
    per_template: Mapping[str, Mapping[str, Any]], headline: Sequence[MetricRow]
) -> dict[str, Any] | None:
    """Headline means per template, lowest first by the first headline metric, as cells with
    the fraction of the metric's best value that their bar fills."""
    if len(per_template) < 2 or not headline:
        return None
    columns = [row for row in headline if row.best]
    if not columns:
        return None
    rows: list[tuple[float, str, list[tuple[str, str] | None]]] = []
    for template_id, stats in per_template.items():
        cells: list[tuple[str, str] | None] = []
        first = math.inf  # templates without the first metric go last
        for column in columns:
            value = stats.get(column.name)
            scored = stats.get("coverage", {}).get(column.name, {}).get("scored")
            if isinstance(value, Mapping) and scored:
                fraction = max(0.0, min(1.0, value["mean"] / (column.best or 1)))
                cells.append((format_number(value["mean"]), f"{fraction * 100:.1f}%"))
                if column is columns[0]:
                    first = value["mean"]
            else:
                cells.append(None)
        rows.append((first, template_id, cells))
    rows.sort(key=lambda row: row[0])
    return {
        "columns": [column.name for column in columns],
        "rows": [(template_id, cells) for _, template_id, cells in rows[:_TEMPLATE_CHART_LIMIT]],
        "total": len(rows),
    }


def output_keys(run: SavedRun) -> dict[str, OutputKey]:
    """The keys of a run's aggregates with their declarations (from the metrics its results
    are read with; a numeric key no metric declares gets a plain one)."""
    declared = {name: spec for name, (spec, _) in run.layout().outputs().items()}
    keys: dict[str, OutputKey] = {}
    for name, value in run.aggregates["micro"].items():
        if name in declared:
            keys[name] = declared[name]
        elif isinstance(value, Mapping) and "mean" in value:
            keys[name] = OutputKey(name)
    return keys


def sample_counts(stats: Mapping[str, Any]) -> dict[str, int]:
    """Questions, successes, errors (not missing) and missing responses of a group."""
    errors = stats["number_of_error_samples"]
    missing = stats["number_of_missing_samples"]
    return {
        "questions": stats["number_of_success_samples"] + errors,
        "success": stats["number_of_success_samples"],
        "errors": errors - missing,
        "missing": missing,
    }


def skip_counts(skipped: Iterable[Mapping[str, str]], layout: ResultLayout) -> dict[str, SkipCount]:
    """Per output key: how many results skipped its metric, with the most common reason
    (each of the metric's keys gets its metric's count); ``skipped``: each result's metric ->
    reason, as :meth:`~graphrag_eval.result_types.QuestionResult.skipped` gives it."""
    reasons: dict[str, Counter[str]] = {}
    for each in filter(None, skipped):  # (most skip nothing)
        for metric, reason in each.items():
            reasons.setdefault(metric, Counter())[reason] += 1
    counts: dict[str, SkipCount] = {}
    for metric, counted in reasons.items():
        [(reason, _)] = counted.most_common(1)
        known = layout.metrics.get(metric)
        for output in known.outputs if known is not None else ():
            counts[output.name] = SkipCount(sum(counted.values()), reason)
    return counts


def metric_rows(
    stats: Mapping[str, Any],
    keys: Mapping[str, OutputKey],
    macro: Mapping[str, Any] | None = None,
    skips: Mapping[str, SkipCount] | None = None,
) -> list[MetricRow]:
    """The numeric keys of a group as table rows, headline scores first."""
    total = stats["number_of_success_samples"] + stats["number_of_error_samples"]
    coverage = stats.get("coverage", {})
    rows = []
    for name, spec in keys.items():
        value = stats.get(name)
        if spec.aggregation is not Aggregation.NUMERIC or not isinstance(value, Mapping):
            continue
        counts = coverage.get(name, {})
        skip = (skips or {}).get(name)
        rows.append(
            MetricRow(
                name=name,
                mean=value["mean"],
                median=value["median"],
                minimum=value["min"],
                maximum=value["max"],
                scored=counts.get("scored", 0),
                failed=counts.get("failed", 0),
                total=total,
                macro_mean=(macro or {}).get(name, {}).get("mean"),
                best=spec.maximum,
                headline=spec.headline,
                skipped=skip.count if skip is not None else 0,
                skip_reason=skip.reason if skip is not None else "",
            )
        )
    # Headline scores first, other scores next, then costs, tokens and seconds.
    return sorted(rows, key=lambda row: (not row.headline, row.best is None))


def label_rows(stats: Mapping[str, Any], keys: Mapping[str, OutputKey]) -> list[LabelRow]:
    """The label keys of a group with their counts."""
    return [
        LabelRow(name, list(stats[name].items()))
        for name, spec in keys.items()
        if spec.aggregation is Aggregation.LABEL and isinstance(stats.get(name), Mapping)
    ]


def coverage_rows(stats: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Scored, failed and skipped per key; a ``_cost`` key is covered as its metric is."""
    return [
        {"name": name, **counts}
        for name, counts in stats.get("coverage", {}).items()
        if not is_cost_key(name)
    ]


def step_rows(steps: Mapping[str, Mapping[str, int]]) -> list[StepRow]:
    """The step counts of a group, one row per step name."""
    names = list(steps.get("total", {}))
    return [
        StepRow(
            name=name,
            total=steps.get("total", {}).get(name, 0),
            once_per_sample=steps.get("once_per_sample", {}).get(name, 0),
            errors=steps.get("errors", {}).get(name, 0),
            empty_results=steps.get("empty_results", {}).get(name, 0),
        )
        for name in names
    ]


def template_view(
    template_id: str,
    stats: Mapping[str, Any],
    keys: Mapping[str, OutputKey],
    skips: Mapping[str, SkipCount] | None = None,
) -> TemplateView:
    """One template's block of the report."""
    counts = sample_counts(stats)
    return TemplateView(
        template_id=template_id,
        success=counts["success"],
        errors=counts["errors"],
        missing=counts["missing"],
        metrics=metric_rows(stats, keys, skips=skips),
        labels=label_rows(stats, keys),
        steps=step_rows(stats.get("steps", {})),
    )
