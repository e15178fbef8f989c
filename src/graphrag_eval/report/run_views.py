"""The tables and charts of the HTML report that come from a run's aggregates: metric rows
overall and per template, label counts, coverage, step counts and the mean per template
(docs/outputs.md, docs/report.md)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from graphrag_eval.formatting import Unit, format_number
from graphrag_eval.metrics.base import Aggregation, KeyKind, OutputKey
from graphrag_eval.report.noise_views import noise_text
from graphrag_eval.results.aggregates import Coverage, GroupAggregates, StepCounts
from graphrag_eval.results.item_values import ItemValues
from graphrag_eval.results.model import ResultLayout
from graphrag_eval.results.read_run import SavedRun

__all__ = [
    "CoverageRow",
    "DiagnosisCounts",
    "LabelRow",
    "MetricRow",
    "StepRow",
    "TemplateMeans",
    "TemplateView",
    "coverage_rows",
    "diagnosis_counts",
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
    mean: float | None
    """``None`` (with the median, minimum and maximum) when it failed on every question."""
    median: float | None
    minimum: float | None
    maximum: float | None
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
    unit: Unit = Unit.SCORE
    noise: str = ""
    """The judge's noise next to the mean, in a run with ``llm.repeats`` (docs/llm.md)."""


@dataclass(frozen=True, slots=True)
class LabelRow:
    name: str
    counts: list[tuple[str, int]]
    noise: str = ""
    """The judge's noise (pass^k and pass@k), in a run with ``llm.repeats``."""


@dataclass(frozen=True, slots=True)
class StepRow:
    name: str
    total: int
    once_per_sample: int
    errors: int
    empty_results: int


@dataclass(frozen=True, slots=True)
class CoverageRow:
    name: str
    scored: int
    failed: int
    skipped: int
    failed_reason: str | None
    failed_repeats: int = 0
    """Under ``llm.repeats``: the repeats that failed on the questions still scored."""


@dataclass(frozen=True, slots=True)
class TemplateMeans:
    """The headline means per template, as bar cells (value, width) or ``None``."""

    columns: list[str]
    rows: list[tuple[str, list[tuple[str, str] | None]]]
    total: int


@dataclass(frozen=True, slots=True)
class DiagnosisCounts:
    """How many diagnosed SPARQL reference steps have each ``query_diagnosis`` label
    (docs/knowledge-graph.md), the commonest first, with the share of the diagnosed steps."""

    diagnosed: int
    rows: list[tuple[str, int, str]]
    """(label, steps, share as text)."""


def diagnosis_counts(group: GroupAggregates) -> DiagnosisCounts | None:
    """The query diagnosis counts of a group, or ``None`` when no step was diagnosed."""
    if not group.diagnosed_steps:
        return None
    total = group.diagnosed_steps
    rows = [
        (label, count, f"{count / total:.0%}") for label, count in group.query_diagnosis.items()
    ]
    return DiagnosisCounts(total, rows)


@dataclass(frozen=True, slots=True)
class TemplateView:
    template_id: str
    success: int
    errors: int
    missing: int
    metrics: list[MetricRow]
    labels: list[LabelRow]
    steps: list[StepRow]
    diagnosis: DiagnosisCounts | None = None


def template_means(
    per_template: Mapping[str, GroupAggregates], headline: Sequence[MetricRow]
) -> TemplateMeans | None:
    """Headline means per template, lowest first by the first headline metric, as cells with
    the fraction of the metric's best value that their bar fills."""
    if len(per_template) < 2 or not headline:
        return None
    columns = [row for row in headline if row.best]
    if not columns:
        return None
    rows: list[tuple[float, str, list[tuple[str, str] | None]]] = []
    for template_id, group in per_template.items():
        cells: list[tuple[str, str] | None] = []
        first = math.inf  # templates without the first metric go last
        for column in columns:
            stats = group.statistics(column.name)
            if stats is not None and group.counts(column.name).scored:
                fraction = max(0.0, min(1.0, stats.mean / (column.best or 1)))
                cells.append((format_number(stats.mean), f"{fraction * 100:.1f}%"))
                if column is columns[0]:
                    first = stats.mean
            else:
                cells.append(None)
        rows.append((first, template_id, cells))
    rows.sort(key=lambda row: row[0])
    return TemplateMeans(
        [column.name for column in columns],
        [(template_id, cells) for _, template_id, cells in rows[:_TEMPLATE_CHART_LIMIT]],
        len(rows),
    )


def output_keys(run: SavedRun) -> dict[str, OutputKey]:
    """The keys of a run's aggregates with their declarations (from the metrics its results
    are read with), and the numeric keys attempted that failed on every question."""
    declared = {name: spec for name, (spec, _) in run.layout.outputs().items()}
    micro = run.aggregates.micro
    keys: dict[str, OutputKey] = {}
    for name in [*micro.keys, *micro.coverage]:
        spec = declared.get(name)
        if spec is not None and name not in keys:
            keys[name] = spec
    return keys


def sample_counts(group: GroupAggregates) -> dict[str, int]:
    """Questions, successes, errors (not missing) and missing responses of a group."""
    return {
        "questions": group.questions,
        "success": group.success_samples,
        "errors": group.error_samples - group.missing_samples,
        "missing": group.missing_samples,
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
    coverage: Mapping[str, Coverage] | None = None,
) -> dict[str, str]:
    """Per output key: the most common reason it was skipped on the questions at ``indices``
    (all by default): its metric's reason from the result's ``skipped`` (each of the metric's
    keys gets it), or :data:`ERROR_RESPONSE` on an error sample that has no value for it.
    With the group's ``coverage``, skips those leave unexplained (a metric on steps records
    none) count as :data:`NO_STEP`, so a minority reason is not shown for all of them."""
    reasons: defaultdict[str, Counter[str]] = defaultdict(Counter)  # (no Counter made per look-up)
    skipped = values.skipped
    for index in range(len(values.questions)) if indices is None else indices:
        if values.questions[index].status == "error":
            row = values.values[index]
            for name in values.keys:
                if name not in row:
                    reasons[name][ERROR_RESPONSE] += 1
            continue
        for metric, reason in skipped[index].items():  # (most skip nothing)
            known = layout.metrics.get(metric)
            for output in known.outputs if known is not None else ():
                reasons[output.name][reason] += 1
    for name, counts in (coverage or {}).items():
        unexplained = counts.skipped - sum(reasons.get(name, Counter()).values())
        if unexplained > 0:
            reasons[name][NO_STEP] += unexplained
    return {name: counted.most_common(1)[0][0] for name, counted in reasons.items()}


def metric_rows(
    group: GroupAggregates,
    keys: Mapping[str, OutputKey],
    macro: Mapping[str, float] | None = None,
    reasons: Mapping[str, str] | None = None,
) -> list[MetricRow]:
    """The numeric keys of a group as table rows, headline scores first, with the group's
    coverage counts (scored, failed, skipped) and ``reasons``: key -> why it was skipped
    (:func:`skip_reasons`). A metric that failed on every question of the group it was tried
    on has a row too, without statistics."""
    rows = []
    for name, spec in keys.items():
        if spec.aggregation is not Aggregation.NUMERIC:
            continue
        stats = group.statistics(name)
        counts = group.counts(name)
        if stats is None and not counts.failed:
            continue
        rows.append(
            MetricRow(
                name=name,
                mean=stats.mean if stats else None,
                median=stats.median if stats else None,
                minimum=stats.min if stats else None,
                maximum=stats.max if stats else None,
                scored=counts.scored,
                failed=counts.failed,
                total=group.questions,
                macro_mean=(macro or {}).get(name),
                best=spec.maximum,
                headline=spec.headline,
                skipped=counts.skipped,
                skip_reason=(reasons or {}).get(name, "") if counts.skipped else "",
                unit=spec.unit,
                noise=noise_text(group.repeats.get(name), spec.unit),
            )
        )
    # Headline scores first, other scores next, then costs, tokens and seconds.
    return sorted(rows, key=lambda row: (not row.headline, row.best is None))


def label_rows(group: GroupAggregates, keys: Mapping[str, OutputKey]) -> list[LabelRow]:
    """The label keys of a group with their counts."""
    rows = []
    for name, spec in keys.items():
        counts = group.label_counts(name) if spec.aggregation is Aggregation.LABEL else None
        if counts is not None:
            rows.append(LabelRow(name, list(counts.items()), noise_text(group.repeats.get(name))))
    return rows


def coverage_rows(group: GroupAggregates, keys: Mapping[str, OutputKey]) -> list[CoverageRow]:
    """Scored, failed and skipped per key; a cost is covered as its metric is."""
    return [
        CoverageRow(
            name,
            counts.scored,
            counts.failed,
            counts.skipped,
            counts.failed_reason,
            counts.failed_repeats,
        )
        for name, counts in group.coverage.items()
        if name not in keys or keys[name].kind is not KeyKind.COST
    ]


def step_rows(steps: StepCounts) -> list[StepRow]:
    """The step counts of a group, one row per step name."""
    return [
        StepRow(
            name=name,
            total=total,
            once_per_sample=steps.once_per_sample.get(name, 0),
            errors=steps.errors.get(name, 0),
            empty_results=steps.empty_results.get(name, 0),
        )
        for name, total in steps.total.items()
    ]


def template_view(
    template_id: str,
    group: GroupAggregates,
    keys: Mapping[str, OutputKey],
    reasons: Mapping[str, str] | None = None,
) -> TemplateView:
    """One template's block of the report."""
    counts = sample_counts(group)
    return TemplateView(
        template_id=template_id,
        success=counts["success"],
        errors=counts["errors"],
        missing=counts["missing"],
        metrics=metric_rows(group, keys, reasons=reasons),
        labels=label_rows(group, keys),
        steps=step_rows(group.steps),
        diagnosis=diagnosis_counts(group),
    )
