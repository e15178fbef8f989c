"""The comparison of two runs on the terminal or in a CI log: the overall table, the
significant per-template changes, and the questions that got worse (docs/report.md,
"Comparing two runs")."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from graphrag_eval.comparison.model import Comparison, MetricChange
from graphrag_eval.comparison.noise_view import noise_header, noise_table
from graphrag_eval.comparison.units import (
    format_amount,
    format_amount_change,
    format_amount_interval,
)
from graphrag_eval.formatting import format_interval, format_signed, plural, visible_text

__all__ = ["failure_lines", "input_lines", "print_comparison"]

_VERDICT_STYLE = {
    "better": "green",
    "worse": "red",
    "lower": "",
    "higher": "",
    "unchanged": "",
    "too few pairs": "dim",
    "no pairs": "dim",
}
_ERROR_SAMPLES = {
    "zero": "Means with --error-samples zero: an error response counts as 0 on the scores it "
    "would have had, so they differ from evaluate's means, which leave error responses out "
    "unless aggregation.error_samples is zero.",
    "exclude": "Means with --error-samples exclude: error responses are left out of the pairs, "
    "as evaluate's means leave them out by default.",
}
_LOG_TABLE_WIDTH = 10_000  # room enough for any table: a log line is never wrapped


def _verdict(change: MetricChange) -> Text:
    return Text(change.direction, style=_VERDICT_STYLE[change.direction])


def _print_table(console: Console, table: Table) -> None:
    """Print ``table``; where the output is not a terminal (a CI log, a file), at the width
    it needs and without styles, so that no metric name or template id is wrapped or cut and
    no ANSI code is written, whatever width the console has."""
    if console.is_terminal:
        console.print(table)
        return
    buffer = io.StringIO()
    sized = Console(file=buffer, width=_LOG_TABLE_WIDTH, color_system=None, force_terminal=False)
    sized.print(table)
    console.out("\n".join(line.rstrip() for line in buffer.getvalue().splitlines()))


def _compared_value(change: MetricChange, value: float | None) -> str:
    """A mean in the comparison: a score as the reports write it, else in its unit."""
    return format_amount(value, change.unit)


def print_comparison(console: Console, comparison: Comparison) -> None:
    """Print a comparison: the scores' table (with how many got significantly better and
    worse), the costs, tokens and time in their units, significant per-template changes of
    scores, and for each score the questions that got worse (also when the score got better
    overall), as many as the comparison's ``top`` lists. See docs/report.md, "Comparing two
    runs"."""
    _print_header(console, comparison)
    scores = {name: change for name, change in comparison.overall.items() if change.is_score}
    resources = comparison.resources()
    if scores:
        _print_table(console, _overall_table(console, scores))
    _print_noise(console, comparison)
    if resources:
        console.print(
            "Costs, tokens and time (what the runs used, not part of the verdict; lower or "
            "higher where the interval leaves out 0):",
            markup=False,
        )
        _print_table(console, _overall_table(console, resources, resource=True))
    for line in failure_lines(comparison):
        console.print(Text(visible_text(line), style="yellow"), soft_wrap=True)
    for line in input_lines(comparison):
        console.print(Text(visible_text(line), style="yellow"), soft_wrap=True)
    _print_template_changes(console, comparison)
    for name, change in comparison.overall.items():
        # Scores: every question that fell, whatever the overall verdict (a mean that rose
        # can hide falls). Tokens, costs and seconds move with load and prices: their falls
        # are listed only when the metric got significantly worse overall.
        if not change.worse_items or (change.lower_is_better and change.verdict != "worse"):
            continue
        _print_worse_items(console, comparison, name, change)


def _print_noise(console: Console, comparison: Comparison) -> None:
    """Where either run has judge repeats: what the intervals include, and per metric with
    repeats the judge's part of its interval (nothing otherwise)."""
    for line in noise_header(comparison):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    width = console.width if console.is_terminal else _LOG_TABLE_WIDTH
    table = noise_table(console, comparison, width)
    if table is not None:
        _print_table(console, table)


def failure_lines(comparison: Comparison) -> list[str]:
    """One line per metric that failed in either run: on how many questions of each."""
    return [
        f"{name} failed on {plural(count.b, 'question')} of B, {count.a:,} of A"
        for name, count in comparison.failed.items()
    ]


def input_lines(comparison: Comparison) -> list[str]:
    """The warning when the runs were scored against different graphs, and how many
    questions' reference or response changed (docs/knowledge-graph.md)."""
    lines = [f"warning: {comparison.graph_warning}"] if comparison.graph_warning else []
    changed = comparison.changed_inputs
    for part, ids in (("reference", changed.reference), ("response", changed.response)):
        if ids:
            shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
            lines.append(f"{part} changed on {plural(len(ids), 'question')}: {shown}")
    return lines


def _print_header(console: Console, comparison: Comparison) -> None:
    """The runs, how many questions they share, and what the intervals are."""
    for label, run in (("A", comparison.run_a), ("B", comparison.run_b)):
        console.print(
            f"{label}: {visible_text(str(run))}", markup=False, highlight=False, soft_wrap=True
        )
    console.print(
        f"{plural(comparison.paired, 'question')} in both runs"
        + (f", {len(comparison.only_in_a):,} only in A" if comparison.only_in_a else "")
        + (f", {len(comparison.only_in_b):,} only in B" if comparison.only_in_b else ""),
        markup=False,
    )
    for status, ids in comparison.status_changes.items():
        console.print(f"  {plural(len(ids), 'question')} {status}", markup=False)
    level = f"{comparison.confidence:.0%}"
    console.print(
        f"B - A per metric, {level} paired bootstrap interval ({comparison.resamples:,} "
        f"resamples, seed {comparison.seed})",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    console.print(_ERROR_SAMPLES[comparison.error_samples], markup=False, soft_wrap=True)
    better = len(comparison.significant_scores("better"))
    worse = len(comparison.significant_scores("worse"))
    console.print(
        f"Scores: {better:,} significantly better, {worse:,} significantly worse",
        markup=False,
        highlight=False,
    )


def _overall_table(
    console: Console, changes: dict[str, MetricChange], resource: bool = False
) -> Table:
    """One row per metric: pairs, means, difference, interval and verdict (a resource's
    means and differences in its unit, its change lower or higher)."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    # A log (not a terminal) has room for every column and whole metric names.
    width = console.width if console.is_terminal else _LOG_TABLE_WIDTH
    longest = max((len(name) for name in changes), default=6)
    table.add_column("metric", overflow="fold", min_width=min(longest, 28))
    # Narrow terminals keep the verdict and drop the means (they are in --json and --html).
    columns = ["pairs", "A", "B", "B - A", "interval", "change", "better/worse/same"]
    if resource:
        columns[-1] = "lower/higher/same"
    if width < 130:
        columns.pop()
    if width < 100:
        columns.remove("A")
        columns.remove("B")
    for column in columns:
        table.add_column(column, justify="left" if column == "change" else "right", no_wrap=True)
    for name, change in changes.items():
        counts = f"{change.improved:,}/{change.regressed:,}/{change.unchanged:,}"
        cells: dict[str, str | Text] = {
            "pairs": f"{change.pairs:,}",
            "A": _compared_value(change, change.mean_a),
            "B": _compared_value(change, change.mean_b),
            "B - A": format_amount_change(change.difference, change.unit),
            "interval": format_amount_interval(change.ci_low, change.ci_high, change.unit),
            "change": _verdict(change),
            "better/worse/same": counts,
            "lower/higher/same": counts,
        }
        table.add_row(Text(visible_text(name)), *(cells[column] for column in columns))
    return table


def _print_template_changes(console: Console, comparison: Comparison) -> None:
    """The per-template changes whose interval excludes 0, one line each."""
    significant = [
        (template, change)
        for template, changes in comparison.per_template.items()
        for change in changes.values()
        if change.is_score and change.verdict in ("better", "worse")
    ]
    if not significant:
        return
    console.print("Significant changes per template:", markup=False)
    for template, change in significant:
        line = Text(visible_text(f"  {template}: {change.metric} "))
        line.append(change.verdict, style=_VERDICT_STYLE[change.verdict])
        line.append(
            f" {format_signed(change.difference or 0.0)} "
            f"{format_interval(change.ci_low, change.ci_high)} "
            f"over {plural(change.pairs, 'question')}"
        )
        console.print(line, soft_wrap=True)


def _print_worse_items(
    console: Console, comparison: Comparison, name: str, change: MetricChange
) -> None:
    """The questions that fell on ``name``, largest fall first, as many as were listed."""
    overall = {"better": ", better overall", "worse": ", worse overall"}
    console.print(
        f"Questions worse on {visible_text(name)} ({change.regressed:,} of {change.pairs:,}"
        f"{overall.get(change.verdict, '')}; largest fall first):",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    for item in change.worse_items:
        cause = comparison.cause(item.question_id)
        console.print(
            visible_text(f"  {item.question_id} ({item.template_id}): ")
            + f"{_compared_value(change, item.a)} "
            f"-> {_compared_value(change, item.b)}" + (f" ({cause})" if cause else ""),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    if change.regressed > len(change.worse_items):
        console.print(
            f"  ... and {change.regressed - len(change.worse_items):,} more (--top 0 lists "
            "them all)",
            markup=False,
        )
