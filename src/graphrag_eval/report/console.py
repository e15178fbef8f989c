"""The terminal summary printed after a run: metrics, templates and what went wrong."""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from graphrag_eval.compare import Comparison, MetricChange, format_interval, format_signed
from graphrag_eval.inputs import Notice, count_kinds
from graphrag_eval.llm.engine import CallStats
from graphrag_eval.metrics.base import Aggregation, declared_outputs
from graphrag_eval.metrics.usage import USAGE_KEYS

__all__ = [
    "format_dollars",
    "format_number",
    "plural",
    "print_comparison",
    "print_dry_run",
    "print_llm_summary",
    "print_notices",
    "print_summary",
]

_NOTICE_LIMIT = 10
_WIDE = 110  # terminal columns from which the summary shows median and macro mean too
_NARROW = 90  # below this, only the mean and the count scored


def format_number(value: Any) -> str:
    """A compact, readable number: thousands separators for large values, 3 decimals for
    scores."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.2f}"
    return f"{value:.3f}"


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """A count and its noun: ``1 question``, ``2 questions``, ``1,000 questions``."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"


def _metric_keys(micro: Mapping[str, Any]) -> list[str]:
    """Numeric keys of the aggregates: headline metrics, other metrics, then usage."""
    declared = declared_outputs()
    # Judge costs are summed up in the judge summary, not listed as metrics.
    numeric = [
        key
        for key, value in micro.items()
        if isinstance(value, Mapping) and "mean" in value and not key.endswith("_cost")
    ]

    def rank(key: str) -> int:
        if key in USAGE_KEYS:
            return 2
        entry = declared.get(key)
        return 0 if entry is not None and entry[0].headline else 1

    return sorted(numeric, key=rank)


def print_summary(console: Console, aggregates: Mapping[str, Any]) -> None:
    """Print the overall metric table and the per-template table."""
    micro = aggregates["micro"]
    macro = aggregates["macro"]
    coverage = micro.get("coverage", {})
    keys = _metric_keys(micro)
    questions = micro["number_of_success_samples"] + micro["number_of_error_samples"]

    # On a narrow terminal keep the columns that matter most; the rest is in aggregates.yaml.
    if console.width >= _WIDE:
        columns: tuple[str, ...] = ("mean", "median", "min", "max", "macro mean", "scored")
    elif console.width >= _NARROW:
        columns = ("mean", "min", "max", "scored")
    else:
        columns = ("mean", "scored")
    overall = Table(title="Metrics over all questions", title_justify="left", box=box.SIMPLE_HEAD)
    # Metric names are the keys people grep for: keep them whole where the terminal allows.
    longest = max((len(key) for key in keys), default=6)
    overall.add_column("metric", overflow="fold", min_width=min(longest, console.width - 30))
    for column in columns:
        overall.add_column(column, justify="right")
    for key in keys:
        stats = micro[key]
        counts = coverage.get(key, {})
        scored = f"{counts.get('scored', 0)}/{questions}"
        if counts.get("failed"):
            scored += f" ({counts['failed']} failed)"
        cells = {
            "mean": format_number(stats["mean"]),
            "median": format_number(stats["median"]),
            "min": format_number(stats["min"]),
            "max": format_number(stats["max"]),
            "macro mean": format_number(macro.get(key, {}).get("mean", "")),
            "scored": scored,
        }
        overall.add_row(key, *(cells[column] for column in columns))
    console.print(overall)
    declared_all = declared_outputs()
    for key, value in micro.items():  # label keys: the classes and grades, counted
        entry = declared_all.get(key)
        if entry is not None and entry[0].aggregation is Aggregation.LABEL:
            counts = ", ".join(f"{label} {count:,}" for label, count in value.items())
            console.print(f"{key}: {counts}", markup=False, highlight=False)

    declared = declared_outputs()
    headline = [key for key in keys if key in declared and declared[key][0].headline]
    # steps_score first: a judge's columns must not push it out of the table.
    headline.sort(key=lambda key: key != "steps_score")
    # Metric names are never wrapped: the last columns that do not fit are left out (output
    # that is not a terminal is wide enough for all of them, see cli._stdout).
    longest_id = max((len(str(t)) for t in aggregates["per_template"]), default=8)
    room = console.width - min(max(longest_id, 8), 24) - 30  # template, ok, errors, missing
    shown: list[str] = []
    for key in headline:
        room -= len(key) + 3
        if shown and room < 0:
            break
        shown.append(key)
    hidden = headline[len(shown) :]
    title = "Per template (means)"
    if hidden:
        title += f"; {', '.join(hidden)} in aggregates.yaml"
    templates = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    templates.add_column("template", overflow="fold", min_width=min(longest_id, 24))
    for column in ("ok", "errors", "missing"):
        templates.add_column(column, justify="right", no_wrap=True)
    for column in shown:
        templates.add_column(column, justify="right", no_wrap=True)
    headline = shown
    rows = [(Text(str(t)), stats) for t, stats in aggregates["per_template"].items()]
    rows.append((Text("all", style="bold"), micro))
    for label, stats in rows:  # template ids are user text: never read as markup
        templates.add_row(
            label,
            str(stats["number_of_success_samples"]),
            str(stats["number_of_error_samples"] - stats["number_of_missing_samples"]),
            str(stats["number_of_missing_samples"]),
            *(format_number(stats[key]["mean"]) if key in stats else "-" for key in headline),
        )
    console.print(templates)


def print_notices(console: Console, notices: Sequence[Notice], where: str | None = None) -> None:
    """Print the notice counts by kind and the first few notices."""
    if not notices:
        return
    summary = ", ".join(
        f"{kind.replace('_', ' ')}: {count}" for kind, count in count_kinds(notices).items()
    )
    console.print(Text(f"{len(notices)} input problem(s)", style="yellow"), f"({summary})")
    for notice in notices[:_NOTICE_LIMIT]:
        console.print(f"  {notice}", markup=False, highlight=False, soft_wrap=True)
    if len(notices) > _NOTICE_LIMIT:
        more = f" (all in {where})" if where else ""
        console.print(f"  ... and {len(notices) - _NOTICE_LIMIT} more{more}", markup=False)


def format_dollars(value: float) -> str:
    """Dollars with enough digits to show small judge costs: 3 significant digits below a
    cent (``$0.00005``, ``$0.000864``), never an exponent."""
    if value == 0 or not math.isfinite(value):
        return "$0" if value == 0 else f"${value}"
    if abs(value) < 0.01:
        decimals = 2 - math.floor(math.log10(abs(value)))
        return f"${value:.{decimals}f}".rstrip("0").rstrip(".")
    return f"${value:,.4f}"


def print_llm_summary(console: Console, stats: CallStats, max_cost_usd: float | None) -> None:
    """Print what the run's judge and embedding calls amounted to."""
    line = (
        f"judge: {plural(stats.calls, 'call')} made, {stats.cache_hits:,} served from the cache, "
        f"{stats.input_tokens:,} tokens in / {stats.output_tokens:,} out, "
        f"{format_dollars(stats.cost_usd)} spent"
    )
    extras = []
    if stats.retries:
        extras.append(plural(stats.retries, "retry", "retries"))
    if stats.failed:
        extras.append(f"{plural(stats.failed, 'call')} failed")
    if stats.calls or stats.failed or stats.cost_usd or not stats.local_texts:
        console.print(line + (f" ({', '.join(extras)})" if extras else ""), markup=False)
    if stats.local_texts:
        console.print(
            f"local models: {plural(stats.local_texts, 'text')} encoded"
            + (
                ""
                if stats.calls
                else f", {plural(stats.cache_hits, 'lookup')} served from the cache"
            ),
            markup=False,
        )
    if stats.unpriced_models:
        console.print(
            f"  no price known for {', '.join(sorted(stats.unpriced_models))}: counted as $0 "
            "(set llm.prices)",
            markup=False,
        )
    if stats.budget_reached and max_cost_usd is not None:
        console.print(
            Text(
                f"cost limit of {format_dollars(max_cost_usd)} reached: no new judge calls were "
                "started after it; the metrics not computed have an _error saying so (raise "
                "the limit and rerun with --resume)",
                style="yellow",
            )
        )


def print_dry_run(console: Console, plan: Mapping[str, Any], questions: int) -> None:
    """Print a dry run's estimate of calls, tokens and cost per metric."""
    table = Table(
        title=f"Dry run: judge calls for {plural(questions, 'question')} (estimates)",
        title_justify="left",
    )
    table.add_column("metric", overflow="fold")
    local = bool(plan.get("local_texts"))
    columns = ["calls", "cached", "tokens in", "tokens out", "cost"]
    for column in [*columns, "local texts"] if local else columns:
        table.add_column(column, justify="right")
    rows = [(Text(name), values) for name, values in plan["by_metric"].items()]
    rows.append((Text("total", style="bold"), plan))
    for label, values in rows:
        cells = [
            f"{values['calls']:,}",
            f"{values['cached']:,}",
            f"{values['input_tokens']:,}",
            f"{values['output_tokens']:,}",
            format_dollars(values["cost_usd"]),
        ]
        if local:
            cells.append(f"{values.get('local_texts', 0):,}")
        table.add_row(label, *cells)
    console.print(table)
    console.print(
        "Tokens are estimated at 4 characters per token; replies at max_tokens, or 300 tokens "
        "when it is not set. Cached calls cost nothing."
        + (" Local texts run through a local model on this machine, for free." if local else ""),
        markup=False,
    )
    if plan.get("unpriced_models"):
        console.print(
            f"no price known for {', '.join(plan['unpriced_models'])}: counted as $0 "
            "(set llm.prices)",
            markup=False,
        )


_VERDICT_STYLE = {
    "better": "green",
    "worse": "red",
    "unchanged": "",
    "too few pairs": "dim",
    "no pairs": "dim",
}
_LOG_TABLE_WIDTH = 10_000  # room enough for any table: a log line is never wrapped


def _verdict(change: MetricChange) -> Text:
    return Text(change.verdict, style=_VERDICT_STYLE[change.verdict])


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


def _compared_value(name: str, value: float | None) -> str:
    """A mean in the comparison table: dollars with their significant digits for costs."""
    if value is None:
        return "-"
    return format_dollars(value) if name.endswith("_cost") else format_number(value)


def _compared_difference(name: str, difference: float | None) -> str:
    if difference is None:
        return "-"
    if name.endswith("_cost"):
        return ("-" if difference < 0 else "+") + format_dollars(abs(difference))
    return format_signed(difference)


def print_comparison(console: Console, comparison: Comparison) -> None:
    """Print a comparison: the overall table, significant per-template changes, and for each
    score the questions that got worse (also when the score got better overall), as many as
    the comparison's ``top`` lists. See docs/report.md, "Comparing two runs"."""
    console.print(f"A: {comparison.run_a}", markup=False, highlight=False, soft_wrap=True)
    console.print(f"B: {comparison.run_b}", markup=False, highlight=False, soft_wrap=True)
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
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    # A log (not a terminal) has room for every column and whole metric names.
    width = console.width if console.is_terminal else _LOG_TABLE_WIDTH
    longest = max((len(name) for name in comparison.overall), default=6)
    table.add_column("metric", overflow="fold", min_width=min(longest, 28))
    # Narrow terminals keep the verdict and drop the means (they are in --json and --html).
    columns = ["pairs", "A", "B", "B - A", "interval", "change", "better/worse/same"]
    if width < 130:
        columns.remove("better/worse/same")
    if width < 100:
        columns.remove("A")
        columns.remove("B")
    for column in columns:
        table.add_column(column, justify="left" if column == "change" else "right", no_wrap=True)
    for name, change in comparison.overall.items():
        cells: dict[str, str | Text] = {
            "pairs": f"{change.pairs:,}",
            "A": _compared_value(name, change.mean_a),
            "B": _compared_value(name, change.mean_b),
            "B - A": _compared_difference(name, change.difference),
            "interval": format_interval(change.ci_low, change.ci_high),
            "change": _verdict(change),
            "better/worse/same": f"{change.improved:,}/{change.regressed:,}/{change.unchanged:,}",
        }
        table.add_row(Text(name), *(cells[column] for column in columns))
    _print_table(console, table)
    significant = [
        (template, change)
        for template, changes in comparison.per_template.items()
        for change in changes.values()
        if change.verdict in ("better", "worse")
    ]
    if significant:
        console.print("Significant changes per template:", markup=False)
        for template, change in significant:
            line = Text(f"  {template}: {change.metric} ")
            line.append(change.verdict, style=_VERDICT_STYLE[change.verdict])
            line.append(
                f" {format_signed(change.difference or 0.0)} "
                f"{format_interval(change.ci_low, change.ci_high)} "
                f"over {plural(change.pairs, 'question')}"
            )
            console.print(line, soft_wrap=True)
    for name, change in comparison.overall.items():
        # Scores: every question that fell, whatever the overall verdict (a mean that rose
        # can hide falls). Tokens, costs and seconds move with load and prices: their falls
        # are listed only when the metric got significantly worse overall.
        if not change.worse_items or (change.lower_is_better and change.verdict != "worse"):
            continue
        overall = {"better": ", better overall", "worse": ", worse overall"}
        console.print(
            f"Questions worse on {name} ({change.regressed:,} of {change.pairs:,}"
            f"{overall.get(change.verdict, '')}; largest fall first):",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        for item in change.worse_items:
            console.print(
                f"  {item.question_id} ({item.template_id}): {_compared_value(name, item.a)} "
                f"-> {_compared_value(name, item.b)}",
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
