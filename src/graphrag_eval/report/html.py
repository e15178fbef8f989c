"""The self-contained HTML report of a run, and the HTML page of a comparison of two runs.

Pages are rendered from Jinja templates (``report/templates``) with autoescaping on: every
text that comes from the user's files (questions, answers, template ids, judge reasons,
config values) is escaped. The page loads nothing: styles are inline, charts are inline SVG,
there is no script, and a Content-Security-Policy forbids scripts and outside requests even if
something slipped through.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from graphrag_eval import __version__
from graphrag_eval.aggregation import item_values
from graphrag_eval.compare import Comparison, MetricChange, format_interval, format_signed
from graphrag_eval.files import dump_yaml, write_text_atomic
from graphrag_eval.metrics.base import Aggregation, OutputKey, declared_outputs
from graphrag_eval.report import charts
from graphrag_eval.report.console import format_dollars, format_number, plural
from graphrag_eval.runs import SavedRun

__all__ = ["render_comparison", "render_report", "write_comparison", "write_report"]

DEFAULT_WORST = 20
_TEXT_LIMIT = 4_000  # characters of an answer or step output shown per item
_TEMPLATE_CHART_LIMIT = 40  # templates per "mean per template" chart (the lowest ones)

_environment = jinja2.Environment(
    loader=jinja2.PackageLoader("graphrag_eval.report", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def _format_value(value: Any, name: str) -> str:
    """A value of the key ``name``: dollars with significant digits for a ``_cost`` key (never
    ``0.000`` for $0.00005), else :func:`format_number`."""
    if name.endswith("_cost") and isinstance(value, int | float) and not isinstance(value, bool):
        return format_dollars(value)
    return format_number(value)


_environment.filters["num"] = format_number
_environment.filters["dollars"] = format_dollars
_environment.filters["signed"] = format_signed
_environment.filters["value"] = _format_value
_environment.filters["plural"] = plural


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


@dataclass(frozen=True, slots=True)
class StepView:
    label: str
    name: str
    args: str
    status: str
    detail: str


@dataclass(slots=True)
class ItemView:
    """One question in the drill-down list."""

    question_id: str
    template_id: str
    status: str
    score: float | None
    """The mean of its headline scores as a fraction of their best values."""
    question: str
    reference: str
    actual: str
    error: str
    scores: list[tuple[str, str]] = field(default_factory=list)
    reasons: list[tuple[str, str]] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    reference_steps: list[StepView] = field(default_factory=list)
    actual_steps: list[StepView] = field(default_factory=list)


def render_report(run: SavedRun, worst: int = DEFAULT_WORST) -> str:
    """The HTML report of a run: settings, coverage, metrics overall and per template,
    charts, step statistics, judge cost, and the ``worst`` lowest-scoring questions."""
    keys = _keys(run)
    micro = run.aggregates["micro"]
    macro = run.aggregates["macro"]
    values = item_values(run.results, run.config)
    overall = _metric_rows(micro, keys, macro)
    histograms = []
    for row in overall:
        if row.best is None or not row.headline:
            continue  # the others' spread is in the table
        column = [item[row.name] for item in values.values if row.name in item]
        if column:
            histograms.append(charts.histogram(row.name, column, row.best))
    per_template = run.aggregates["per_template"]
    template_means = _template_means(per_template, [row for row in overall if row.headline])
    ranked: list[tuple[float, int]] = []
    failed: list[int] = []
    for index, (result, scores) in enumerate(zip(run.results, values.values, strict=True)):
        if result.get("status") == "error":
            failed.append(index)
        score = _headline_score(scores, keys)
        if score is not None:
            ranked.append((score, index))
    ranked.sort()

    def view(index: int, score: float | None = None) -> ItemView:
        return _item_view(run.results[index], values.values[index], keys, score)

    info = run.info
    return _page(
        "report.html.j2",
        f"graphrag-eval report: {run.label}",
        run=run,
        info=info,
        settings=_settings(run),
        config_yaml=dump_yaml(info["config"]) if isinstance(info.get("config"), Mapping) else "",
        notices=[str(notice) for notice in info.get("notices") or ()][:50],
        notice_count=len(info.get("notices") or ()),
        problems=[str(problem) for problem in run.problems],
        counts=_counts(micro),
        overall=overall,
        labels=_label_rows(micro, keys),
        coverage=_coverage(micro),
        histograms=histograms,
        template_means=template_means,
        templates=[
            _template_view(template_id, stats, keys) for template_id, stats in per_template.items()
        ],
        steps=_step_rows(micro.get("steps", {})),
        judge=_judge(info, micro),
        worst=[view(index, score) for score, index in ranked[:worst]],
        worst_limit=worst,
        scored_items=len(ranked),
        failed=[view(index) for index in failed[:worst]],
        failed_count=len(failed),
    )


def _page(template: str, title: str, **context: Any) -> str:
    """Render a page template with what every page shows (title, version, date)."""
    return _environment.get_template(template).render(
        title=title,
        version=__version__,
        created=dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        **context,
    )


def write_report(run: SavedRun, path: str | Path, worst: int = DEFAULT_WORST) -> Path:
    """Write the HTML report of a run to ``path`` (atomically) and return the path."""
    path = Path(path)
    write_text_atomic(path, render_report(run, worst))
    return path


def _template_means(
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


def _keys(run: SavedRun) -> dict[str, OutputKey]:
    declared = {name: spec for name, (spec, _) in declared_outputs().items()}
    keys: dict[str, OutputKey] = {}
    for name, value in run.aggregates["micro"].items():
        if name in declared:
            keys[name] = declared[name]
        elif isinstance(value, Mapping) and "mean" in value:
            keys[name] = OutputKey(name)
    return keys


def _counts(stats: Mapping[str, Any]) -> dict[str, int]:
    errors = stats["number_of_error_samples"]
    missing = stats["number_of_missing_samples"]
    return {
        "questions": stats["number_of_success_samples"] + errors,
        "success": stats["number_of_success_samples"],
        "errors": errors - missing,
        "missing": missing,
    }


def _metric_rows(
    stats: Mapping[str, Any], keys: Mapping[str, OutputKey], macro: Mapping[str, Any] | None = None
) -> list[MetricRow]:
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
            )
        )
    # Headline scores first, other scores next, then costs, tokens and seconds.
    return sorted(rows, key=lambda row: (not row.headline, row.best is None))


def _label_rows(stats: Mapping[str, Any], keys: Mapping[str, OutputKey]) -> list[LabelRow]:
    return [
        LabelRow(name, list(stats[name].items()))
        for name, spec in keys.items()
        if spec.aggregation is Aggregation.LABEL and isinstance(stats.get(name), Mapping)
    ]


def _coverage(stats: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Scored, failed and skipped per key; a ``_cost`` key is covered as its metric is."""
    return [
        {"name": name, **counts}
        for name, counts in stats.get("coverage", {}).items()
        if not name.endswith("_cost")
    ]


def _step_rows(steps: Mapping[str, Mapping[str, int]]) -> list[StepRow]:
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


def _template_view(
    template_id: str, stats: Mapping[str, Any], keys: Mapping[str, OutputKey]
) -> TemplateView:
    counts = _counts(stats)
    return TemplateView(
        template_id=template_id,
        success=counts["success"],
        errors=counts["errors"],
        missing=counts["missing"],
        metrics=_metric_rows(stats, keys),
        labels=_label_rows(stats, keys),
        steps=_step_rows(stats.get("steps", {})),
    )


def _settings(run: SavedRun) -> list[tuple[str, str]]:
    info = run.info
    rows = [("results", str(run.results_path))]
    for key, label in (
        ("reference", "reference"),
        ("responses", "responses"),
        ("config_file", "config file"),
        ("graphrag_eval_version", "evaluated with graphrag-eval"),
        ("elapsed_sec", "run time (s)"),
    ):
        value = info.get(key)
        if value is not None:
            rows.append((label, str(value)))
    llm = info.get("llm")
    if isinstance(llm, Mapping):
        for key, label in (("judge_model", "judge model"), ("embedding_model", "embedding model")):
            if llm.get(key):
                rows.append((label, str(llm[key])))
    config = info.get("config")
    if isinstance(config, Mapping):
        selected = config.get("metrics")
        rows.append(
            (
                "metrics",
                ", ".join(selected) if isinstance(selected, list) else str(selected or "default"),
            )
        )
        aggregation = config.get("aggregation")
        if isinstance(aggregation, Mapping) and "error_samples" in aggregation:
            rows.append(("error samples", str(aggregation["error_samples"])))
    resumed = info.get("resumed")
    if isinstance(resumed, Mapping):
        kept = resumed.get("kept")
        rows.append(("resumed", f"kept {plural(kept, 'item')}" if isinstance(kept, int) else "yes"))
    return rows


def _judge(info: Mapping[str, Any], micro: Mapping[str, Any]) -> dict[str, Any] | None:
    """The judge's calls, tokens and cost: from run.yaml, else summed from the items."""
    llm = info.get("llm")
    item_costs = [
        (name[: -len("_cost")], stats["sum"])
        for name, stats in micro.items()
        if name.endswith("_cost")
        and isinstance(stats, Mapping)
        and "sum" in stats
        and not _sum_of_parts(name, micro)
    ]
    if not isinstance(llm, Mapping):
        if not item_costs:
            return None
        return {"totals": None, "by_metric": [], "item_costs": item_costs}
    totals = [
        ("judge calls made", format_number(llm.get("calls", 0))),
        ("served from the cache", format_number(llm.get("cache_hits", 0))),
        ("retries", format_number(llm.get("retries", 0))),
        ("failed calls", format_number(llm.get("failed_calls", 0))),
        ("input tokens", format_number(llm.get("input_tokens", 0))),
        ("output tokens", format_number(llm.get("output_tokens", 0))),
        ("cost", format_dollars(float(llm.get("cost_usd") or 0))),
    ]
    if llm.get("local_texts"):
        totals.append(("texts encoded by local models", format_number(llm["local_texts"])))
    if llm.get("budget_reached"):
        totals.append(("cost limit", "reached: later calls were not made"))
    by_metric = [
        {"name": name, **values}
        for name, values in (llm.get("by_metric") or {}).items()
        if isinstance(values, Mapping)
    ]
    return {"totals": totals, "by_metric": by_metric, "item_costs": item_costs}


def _sum_of_parts(name: str, micro: Mapping[str, Any]) -> bool:
    """Whether the cost key ``name`` is the sum of two others listed too: an ``X_f1_cost`` is
    ``X_recall_cost`` plus ``X_precision_cost`` (retrieval_answer_f1_cost), and counting it
    beside them would count those calls twice."""
    if not name.endswith("_f1_cost"):
        return False
    stem = name[: -len("_f1_cost")]
    return f"{stem}_recall_cost" in micro and f"{stem}_precision_cost" in micro


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        text = value
    elif isinstance(value, Mapping):  # tool arguments: one per line, strings as they are
        text = "\n".join(
            f"{key}: {item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)}"
            for key, item in value.items()
        )
    else:
        text = json.dumps(value, ensure_ascii=False, indent=1)
    if len(text) > _TEXT_LIMIT:
        return text[:_TEXT_LIMIT] + f"... ({len(text) - _TEXT_LIMIT:,} more characters)"
    return text


def _headline_score(scores: Mapping[str, float], keys: Mapping[str, OutputKey]) -> float | None:
    """The mean of an item's headline scores, each as a fraction of its best value."""
    fractions = [
        value / spec.maximum
        for name, value in scores.items()
        if (spec := keys.get(name)) is not None and spec.headline and spec.maximum
    ]
    return math.fsum(fractions) / len(fractions) if fractions else None


def _item_view(
    result: Mapping[str, Any],
    scores: Mapping[str, float],
    keys: Mapping[str, OutputKey],
    score: float | None,
) -> ItemView:
    """The texts shown for one question (made only for the questions listed)."""
    item = ItemView(
        question_id=str(result.get("question_id")),
        template_id=str(result.get("template_id")),
        status=str(result.get("status")),
        score=score,
        question=_text(result.get("question_text")),
        reference=_text(result.get("reference_answer")),
        actual=_text(result.get("actual_answer")),
        error=_text(result.get("error")),
    )
    item.scores = [
        (name, format_number(value)) for name, value in scores.items() if not name.endswith("_cost")
    ]
    for name, value in result.items():
        if name.endswith("_reason") and value:
            item.reasons.append((name, _text(value)))
        elif name.endswith("_error") and value:
            item.errors.append((name, _text(value)))
        elif name in keys and keys[name].aggregation is Aggregation.LABEL:
            item.scores.append((name, _text(value)))
    for problem in result.get("input_errors") or ():
        item.errors.append(("input_errors", _text(problem)))
    matched: dict[str, str] = {}
    for g, group in enumerate(result.get("reference_steps") or ()):
        for i, step in enumerate(group if isinstance(group, list) else ()):
            if not isinstance(step, Mapping):
                continue
            target = step.get("matches")
            if target is not None:
                matched[str(target)] = f"matches reference step {g + 1}.{i + 1}"
            item.reference_steps.append(
                StepView(
                    label=f"{g + 1}.{i + 1}",
                    name=str(step.get("name")),
                    args=_text(step.get("args")),
                    status="matched" if target is not None else "not matched",
                    detail=(
                        f"by actual step {target}"
                        if target is not None
                        else _text(step.get("input_error"))
                    ),
                )
            )
    for number, step in enumerate(result.get("actual_steps") or (), start=1):
        if not isinstance(step, Mapping):
            continue
        label = str(step.get("id", number))
        step_scores = ", ".join(
            f"{name} {_format_value(value, name)}"
            for name, value in step.items()
            if name in keys and isinstance(value, int | float) and not isinstance(value, bool)
        )
        problems = "; ".join(
            _text(step[name]) for name in ("error", "input_error", "output_error") if step.get(name)
        )
        item.actual_steps.append(
            StepView(
                label=label,
                name=str(step.get("name")),
                args=_text(step.get("args")),
                status=str(step.get("status", "")),
                detail="; ".join(
                    part for part in (matched.get(label, ""), step_scores, problems) if part
                ),
            )
        )
    return item


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
        for result in run.results if run is not None else ():
            questions.setdefault(str(result.get("question_id")), _text(result.get("question_text")))
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
    return _page(
        "compare.html.j2",
        f"graphrag-eval comparison: {comparison.run_b} vs {comparison.run_a}",
        comparison=comparison,
        rows=[_change_row(change) for change in comparison.overall.values()],
        chart=charts.difference_chart(scaled) if scaled else None,
        templates=[
            (template_id, [_change_row(change) for change in changes.values()])
            for template_id, changes in comparison.per_template.items()
        ],
        changed=[
            (change, questions)
            for change in comparison.overall.values()
            if change.better_items or change.worse_items
        ],
        questions=questions,
        confidence=f"{comparison.confidence:.0%}",
    )


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


def _change_row(change: MetricChange) -> dict[str, Any]:
    return {
        "metric": change.metric,
        "pairs": change.pairs,
        "mean_a": "-" if change.mean_a is None else _format_value(change.mean_a, change.metric),
        "mean_b": "-" if change.mean_b is None else _format_value(change.mean_b, change.metric),
        "difference": "-" if change.difference is None else format_signed(change.difference),
        "interval": format_interval(change.ci_low, change.ci_high),
        "verdict": change.verdict,
        "improved": change.improved,
        "regressed": change.regressed,
        "unchanged": change.unchanged,
        "only_a": change.scored_only_in_a,
        "only_b": change.scored_only_in_b,
    }
