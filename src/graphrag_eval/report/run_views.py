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
from graphrag_eval.results.item_values import ItemValues
from graphrag_eval.results.model import ResultLayout
from graphrag_eval.results.read_run import SavedRun

__all__ = [
    "LabelRow",
    "MetricRow",
    "StepRow",
    "TemplateView",
    "coverage_rows",
    "label_rows",
    "metric_rows",
    "output_keys",
    "sample_counts",
    "skip_reasons",
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
    """Questions it was skipped on (its metric did not apply, or an error response), as the
    coverage counts them."""
    skip_reason: str = ""
    """The most common reason it was skipped, where one is known."""


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


ERROR_RESPONSE = "error or missing response"
"""The reason a key is skipped on an error sample (which no metric is run on)."""


NO_STEP = "no step it applies to"
"""The reason a key of a metric on steps is skipped on a question without such a step (its
result records no reason: docs/outputs.md, ``skipped``)."""


def skip_reasons(
    values: ItemValues,
    layout: ResultLayout,
    indices: Iterable[int] | None = None,
    coverage: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, str]:
    """Per output key: the most common reason it was skipped on the questions at ``indices``
    (all by default): its metric's reason from the result's ``skipped`` (each of the metric's
    keys gets it), or :data:`ERROR_RESPONSE` on an error sample that has no value for it.
    With the group's ``coverage``, skips those leave unexplained (a metric on steps records
    none) count as :data:`NO_STEP`, so a minority reason is not shown for all of them."""
    reasons: dict[str, Counter[str]] = {}
    skipped = values.skipped
    for index in range(len(values.questions)) if indices is None else indices:
        if values.questions[index].status == "error":
            row = values.values[index]
            for name in values.keys:
                if name not in row:
                    reasons.setdefault(name, Counter())[ERROR_RESPONSE] += 1
            continue
        for metric, reason in skipped[index].items():  # (most skip nothing)
            known = layout.metrics.get(metric)
            for output in known.outputs if known is not None else ():
                reasons.setdefault(output.name, Counter())[reason] += 1
    for name, counts in (coverage or {}).items():
        unexplained = counts.get("skipped", 0) - sum(reasons.get(name, Counter()).values())
        if unexplained > 0:
            reasons.setdefault(name, Counter())[NO_STEP] += unexplained
    return {name: counted.most_common(1)[0][0] for name, counted in reasons.items()}


def metric_rows(
    stats: Mapping[str, Any],
    keys: Mapping[str, OutputKey],
    macro: Mapping[str, Any] | None = None,
    reasons: Mapping[str, str] | None = None,
) -> list[MetricRow]:
    """The numeric keys of a group as table rows, headline scores first, with the group's
    coverage counts (scored, failed, skipped) and ``reasons``: key -> why it was skipped
    (:func:`skip_reasons`)."""
    total = stats["number_of_success_samples"] + stats["number_of_error_samples"]
    coverage = stats.get("coverage", {})
    rows = []
    for name, spec in keys.items():
        value = stats.get(name)
        if spec.aggregation is not Aggregation.NUMERIC or not isinstance(value, Mapping):
            continue
        counts = coverage.get(name, {})
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
                skipped=counts.get("skipped", 0),
                skip_reason=(reasons or {}).get(name, "") if counts.get("skipped") else "",
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
    reasons: Mapping[str, str] | None = None,
) -> TemplateView:
    """One template's block of the report."""
    counts = sample_counts(stats)
    return TemplateView(
        template_id=template_id,
        success=counts["success"],
        errors=counts["errors"],
        missing=counts["missing"],
        metrics=metric_rows(stats, keys, reasons=reasons),
        labels=label_rows(stats, keys),
        steps=step_rows(stats.get("steps", {})),
    )
