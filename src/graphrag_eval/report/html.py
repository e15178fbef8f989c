"""The self-contained HTML report of a run, and the page environment the comparison's page
(:mod:`graphrag_eval.comparison.page`) is rendered with too.

Pages are rendered from Jinja templates (``report/templates``) with autoescaping on: every
text that comes from the user's files (questions, answers, template ids, judge reasons,
config values) is escaped. The page loads nothing: styles are inline, charts are inline SVG,
there is no script, and a Content-Security-Policy forbids scripts and outside requests even if
something slipped through. What the pages show is built by :mod:`~graphrag_eval.report.run_views`
(tables from the aggregates), :mod:`~graphrag_eval.report.run_info` (settings and judge cost)
and :mod:`~graphrag_eval.report.item_views` (the questions listed); see docs/report.md.
"""

from __future__ import annotations

import datetime as dt
import heapq
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from graphrag_eval.agreement.labels import LabelSet
from graphrag_eval.collector import collection_paused
from graphrag_eval.files.documents import dump_yaml, write_text_atomic
from graphrag_eval.formatting import (
    format_dollars,
    format_number,
    format_signed,
    format_value,
    plural,
    visible_text,
)
from graphrag_eval.metrics.base import OutputKey
from graphrag_eval.report import charts
from graphrag_eval.report.agreement_section import agreement_section
from graphrag_eval.report.injection import addresses_the_grader, injection_notes
from graphrag_eval.report.item_views import (
    ItemView,
    headline_keys,
    headline_scores,
    item_view,
)
from graphrag_eval.report.run_info import judge_summary, settings_rows
from graphrag_eval.report.run_views import (
    MetricRow,
    TemplateView,
    coverage_rows,
    diagnosis_counts,
    label_rows,
    metric_rows,
    output_keys,
    sample_counts,
    skip_reasons,
    step_rows,
    template_means,
    template_view,
)
from graphrag_eval.results.aggregates import GroupAggregates
from graphrag_eval.results.item_values import ItemValues, item_values
from graphrag_eval.results.model import QuestionResult, ResultLayout, RunResult
from graphrag_eval.results.read_run import SavedRun
from graphrag_eval.version import __version__

__all__ = ["DEFAULT_WORST", "page_environment", "render_page", "render_report", "write_report"]

DEFAULT_WORST = 20
_INJECTED_LISTED = 20  # questions whose answers address the grader, listed in the overview


def _shown(value: Any) -> Any:
    """Every text a page shows, with its control and bidirectional characters escaped so
    they are visible (docs/security.md); markup the code built (charts, macros) is kept."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible_text(value)
    return value


_environment = jinja2.Environment(
    loader=jinja2.PackageLoader("graphrag_eval.report", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    finalize=_shown,
)
_environment.filters["num"] = format_number
_environment.filters["dollars"] = format_dollars
_environment.filters["signed"] = format_signed
_environment.filters["value"] = format_value
_environment.filters["plural"] = plural
_environment.filters["breakable"] = lambda name: Markup("_<wbr>").join(
    escape(part) for part in visible_text(str(name)).split("_")
)  # a metric name may wrap after its underscores


def render_report(
    run: SavedRun, worst: int = DEFAULT_WORST, labels: Sequence[LabelSet] | None = None
) -> str:
    """The HTML report of a run: settings, coverage, metrics overall and per template,
    charts, step statistics, judge cost, and the ``worst`` lowest-scoring questions; with
    human ``labels`` (by default its reference's, if any), the judge's agreement with them."""
    # Nothing built for the page holds a cycle; collections would only rescan the run.
    with collection_paused():
        return _render(run, worst, labels)


def _render(run: SavedRun, worst: int, labels: Sequence[LabelSet] | None = None) -> str:
    keys = output_keys(run)
    layout = run.layout
    aggregates = run.aggregates
    micro = aggregates.micro
    noting = _NotingInjected(run.results.results)
    values = item_values(RunResult(noting, run.results.layout), run.config)
    overall = metric_rows(
        micro, keys, aggregates.macro, skip_reasons(values, layout, coverage=micro.coverage)
    )
    lowest, scored_items, failed = _ranked(values, keys, worst)
    results = run.results.results

    def view(index: int, score: float | None = None) -> ItemView:
        return item_view(results[index], values.values[index], keys, score)

    injected = noting.injected if noting.injected is not None else _injected(results)
    info = run.info
    notices = info.get("notices")
    notices = notices if isinstance(notices, list) else []
    return render_page(
        "report.html.j2",
        f"graphrag-eval report: {run.label}",
        run=run,
        info=info,
        settings=settings_rows(run),
        config_yaml=dump_yaml(info["config"]) if isinstance(info.get("config"), Mapping) else "",
        notices=[str(notice) for notice in notices][:50],
        notice_count=len(notices),
        problems=[str(problem) for problem in run.problems],
        counts=sample_counts(micro),
        overall=overall,
        labels=label_rows(micro, keys),
        coverage=coverage_rows(micro, keys),
        histograms=_histograms(overall, values),
        template_means=template_means(
            aggregates.per_template, [row for row in overall if row.headline]
        ),
        templates=_template_views(aggregates.per_template, values, layout, keys),
        steps=step_rows(micro.steps),
        diagnosis=diagnosis_counts(micro),
        judge=judge_summary(info, micro, layout),
        worst=[view(index, score) for score, index in lowest],
        worst_limit=worst,
        scored_items=scored_items,
        failed=[view(index) for index in failed[:worst]],
        failed_count=len(failed),
        injected=injected[:_INJECTED_LISTED],
        injected_count=len(injected),
        agreement=agreement_section(run, labels),
    )


def _template_views(
    per_template: Mapping[str, GroupAggregates],
    values: ItemValues,
    layout: ResultLayout,
    keys: Mapping[str, OutputKey],
) -> list[TemplateView]:
    """Each template's table, its skips counted over its own questions."""
    by_template: dict[str, list[int]] = {}
    for index, (question, skipped) in enumerate(zip(values.questions, values.skipped, strict=True)):
        if skipped or question.status == "error":  # most skip nothing: nothing to count
            by_template.setdefault(question.template_id, []).append(index)
    return [
        template_view(
            template_id,
            group,
            keys,
            skip_reasons(values, layout, by_template.get(template_id, ()), group.coverage),
        )
        for template_id, group in per_template.items()
    ]


class _NotingInjected(Sequence[QuestionResult]):
    """``results`` whose pass (item_values') also notes the questions that address the
    grader, as :func:`_injected` does: the report reads a run's results, from the file
    ``evaluate`` wrote, once and not twice."""

    def __init__(self, results: Sequence[QuestionResult]) -> None:
        self.results = results
        self.injected: list[tuple[str, list[str]]] | None = None
        """Once a pass is done."""

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, index: Any) -> Any:  # an item, or a slice: as ``results`` gives it
        return self.results[index]

    def __iter__(self) -> Iterator[QuestionResult]:
        injected: list[tuple[str, list[str]]] = []
        for result in self.results:
            if addresses_the_grader(result.fields):
                injected.append((str(result.question_id), injection_notes(result.fields)))
            yield result
        self.injected = injected


def _injected(results: Sequence[QuestionResult]) -> list[tuple[str, list[str]]]:
    """The questions whose answer or step outputs address the grader, with where and what."""
    return [
        (str(result.question_id), injection_notes(result.fields))
        for result in results
        if addresses_the_grader(result.fields)
    ]


def _histograms(overall: Sequence[MetricRow], values: ItemValues) -> list[Markup]:
    """The spread of each bounded headline score over the questions scored."""
    histograms = []
    for row in overall:
        if row.best is None or not row.headline:
            continue  # the others' spread is in the table
        name = row.name
        column = [item[name] for item in values.values if name in item]
        if column:
            histograms.append(charts.histogram(row.name, column, row.best))
    return histograms


def _ranked(
    values: ItemValues, keys: Mapping[str, OutputKey], worst: int
) -> tuple[list[tuple[float, int]], int, list[int]]:
    """The ``worst`` lowest-scoring questions as (headline score, index), lowest first (ties
    by index), how many questions have a headline score, and the indices of the failed
    questions."""
    scores: list[float] = []
    indices: list[int] = []
    for index, score in enumerate(headline_scores(values.values, headline_keys(keys))):
        if score is not None:
            scores.append(score)
            indices.append(index)
    # The first ``worst`` positions of a stable sort by score (the order of sorting (score,
    # index) pairs), which nsmallest gives without sorting every position.
    positions = range(len(scores))
    lowest = (
        heapq.nsmallest(worst, positions, key=scores.__getitem__)
        if worst >= 0
        else sorted(positions, key=scores.__getitem__)[:worst]
    )
    failed = [index for index, item in enumerate(values.questions) if item.status == "error"]
    return [(scores[at], indices[at]) for at in lowest], len(scores), failed


def render_page(
    template: str, title: str, environment: jinja2.Environment | None = None, **context: Any
) -> str:
    """Render a page template with what every page shows (title, version, date), in the
    report's environment or one made by :func:`page_environment`."""
    return (
        (environment or _environment)
        .get_template(template)
        .render(
            title=title,
            version=__version__,
            created=dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
            **context,
        )
    )


def page_environment(**filters: Callable[..., Any]) -> jinja2.Environment:
    """The report's page environment (its templates, escaping and filters) with more
    filters, for another page (the comparison's)."""
    environment = _environment.overlay()
    environment.filters.update(filters)
    return environment


def write_report(
    run: SavedRun,
    path: str | Path,
    worst: int = DEFAULT_WORST,
    labels: Sequence[LabelSet] | None = None,
) -> Path:
    """Write the HTML report of a run to ``path`` (atomically) and return the path."""
    path = Path(path)
    write_text_atomic(path, render_report(run, worst, labels))
    return path
