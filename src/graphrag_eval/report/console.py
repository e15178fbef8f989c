"""The terminal summary printed after a run: metrics, templates and what went wrong.

The comparison of two runs is printed by :mod:`graphrag_eval.comparison.console`; numbers
are written by :mod:`graphrag_eval.formatting`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from graphrag_eval.formatting import (
    format_dollars,
    format_number,
    format_tokens,
    format_value,
    is_cost_key,
    plural,
    visible_text,
)
from graphrag_eval.inputs import Notice, count_kinds
from graphrag_eval.llm.engine import CallStats
from graphrag_eval.metrics.base import Aggregation
from graphrag_eval.metrics.registry import declared_outputs
from graphrag_eval.metrics.usage import USAGE_KEYS

__all__ = [
    "format_dollars",
    "format_number",
    "plural",
    "print_dry_run",
    "print_llm_summary",
    "print_notices",
    "print_summary",
]

_NOTICE_LIMIT = 10
_WIDE = 110  # terminal columns from which the summary shows median and macro mean too
_NARROW = 90  # below this, only the mean and the count scored


def _metric_keys(micro: Mapping[str, Any]) -> list[str]:
    """Numeric keys of the aggregates: headline metrics, other metrics, then usage."""
    declared = declared_outputs()
    # Judge costs are summed up in the judge summary, not listed as metrics.
    numeric = [
        key
        for key, value in micro.items()
        if isinstance(value, Mapping) and "mean" in value and not is_cost_key(key)
    ]
    # A numeric metric attempted and failed on every question has no statistics: still a row.
    numeric += [
        key
        for key, counts in micro.get("coverage", {}).items()
        if key not in micro
        and counts.get("failed")
        and not is_cost_key(key)
        and (key not in declared or declared[key][0].aggregation is Aggregation.NUMERIC)
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
    keys = _metric_keys(micro)
    _print_overall(console, micro, aggregates["macro"], keys)
    _print_label_counts(console, micro)
    _print_templates(console, aggregates["per_template"], micro, keys)


def _print_overall(
    console: Console, micro: Mapping[str, Any], macro: Mapping[str, Any], keys: Sequence[str]
) -> None:
    """The table of every numeric key over all questions."""
    coverage = micro.get("coverage", {})
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
        stats = micro.get(key) or dict.fromkeys(("mean", "median", "min", "max"), "-")
        counts = coverage.get(key, {})
        scored = f"{counts.get('scored', 0)}/{questions}"
        if counts.get("failed"):
            scored += f" ({counts['failed']} failed)"
        cells = {
            "mean": format_value(stats["mean"], key),
            "median": format_value(stats["median"], key),
            "min": format_value(stats["min"], key),
            "max": format_value(stats["max"], key),
            "macro mean": format_value(macro.get(key, {}).get("mean", ""), key),
            "scored": scored,
        }
        overall.add_row(Text(visible_text(key)), *(cells[column] for column in columns))
    console.print(overall)
    _print_failures(console, coverage, questions)


def _print_failures(console: Console, coverage: Mapping[str, Any], questions: int) -> None:
    """One line per failure: the keys that failed the same way, how often, and why
    (``answer_f1 0/30, 30 failed: judge unreachable ...``)."""
    failures: dict[tuple[int, int, str], list[str]] = {}
    for key, counts in coverage.items():
        if counts.get("failed") and not is_cost_key(key):
            reason = str(counts.get("failed_reason", ""))
            failures.setdefault((counts.get("scored", 0), counts["failed"], reason), []).append(key)
    for (scored, failed, reason), keys in failures.items():
        line = f"{', '.join(keys)} {scored:,}/{questions:,}, {failed:,} failed" + (
            f": {reason}" if reason else ""
        )
        console.print(Text(visible_text(line), style="yellow"), soft_wrap=True)


def _print_label_counts(console: Console, micro: Mapping[str, Any]) -> None:
    """One line per label key: the classes and grades, counted."""
    declared = declared_outputs()
    for key, value in micro.items():
        entry = declared.get(key)
        if entry is not None and entry[0].aggregation is Aggregation.LABEL:
            counts = ", ".join(f"{label} {count:,}" for label, count in value.items())
            line = visible_text(f"{key}: {counts}")  # labels are the judge's text
            console.print(line, markup=False, highlight=False)


def _print_templates(
    console: Console,
    per_template: Mapping[str, Any],
    micro: Mapping[str, Any],
    keys: Sequence[str],
) -> None:
    """The table of counts and headline means per template, and over all of them."""
    longest_id = max((len(str(t)) for t in per_template), default=8)
    shown, hidden = _fitting_headline(keys, console.width - min(max(longest_id, 8), 24) - 30)
    title = "Per template (means)"
    if hidden:
        title += visible_text(f"; {', '.join(hidden)} in aggregates.yaml")
    templates = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    templates.add_column("template", overflow="fold", min_width=min(longest_id, 24))
    for column in ("ok", "errors", "missing", *shown):
        templates.add_column(column, justify="right", no_wrap=True)
    rows = [(Text(visible_text(str(t))), stats) for t, stats in per_template.items()]
    rows.append((Text("all", style="bold"), micro))
    for label, stats in rows:  # template ids are user text: never read as markup
        templates.add_row(
            label,
            str(stats["number_of_success_samples"]),
            str(stats["number_of_error_samples"] - stats["number_of_missing_samples"]),
            str(stats["number_of_missing_samples"]),
            *(format_value(stats[key]["mean"], key) if key in stats else "-" for key in shown),
        )
    console.print(templates)


def _fitting_headline(keys: Sequence[str], room: int) -> tuple[list[str], list[str]]:
    """The headline keys that fit in ``room`` columns beside the counts, and those left out
    (always at least one shown)."""
    declared = declared_outputs()
    headline = [key for key in keys if key in declared and declared[key][0].headline]
    # steps_score first: a judge's columns must not push it out of the table.
    headline.sort(key=lambda key: key != "steps_score")
    # Metric names are never wrapped: the last columns that do not fit are left out (output
    # that is not a terminal is wide enough for all of them, see cli._stdout).
    shown: list[str] = []
    for key in headline:
        room -= len(key) + 3
        if shown and room < 0:
            break
        shown.append(key)
    return shown, headline[len(shown) :]


def print_notices(
    console: Console,
    notices: Sequence[Notice],
    where: str | None = None,
    *,
    show_all: bool = False,
    see_all: str | None = None,
) -> None:
    """Print the notice counts by kind and the first few notices (all with ``show_all``); the
    line that says how many more there are names ``where`` all are, or how to ``see_all``."""
    if not notices:
        return
    summary = ", ".join(
        f"{kind.replace('_', ' ')}: {count}" for kind, count in count_kinds(notices).items()
    )
    console.print(Text(f"{len(notices)} input problem(s)", style="yellow"), f"({summary})")
    shown = notices if show_all else notices[:_NOTICE_LIMIT]
    for notice in shown:
        console.print(visible_text(f"  {notice}"), markup=False, highlight=False, soft_wrap=True)
    if len(notices) > len(shown):
        more = f" (all in {where})" if where else f" ({see_all})" if see_all else ""
        console.print(f"  ... and {len(notices) - len(shown)} more{more}", markup=False)


def print_llm_summary(console: Console, stats: CallStats, max_cost_usd: float | None) -> None:
    """Print what the run's judge and embedding calls amounted to."""
    line = (
        f"judge: {plural(stats.calls, 'call')} made, {stats.cache_hits:,} served from the cache, "
        f"{format_tokens(stats.input_tokens)} tokens in / {format_tokens(stats.output_tokens)} "
        "out, "
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
    if stats.budget_exceeded and max_cost_usd is not None:
        console.print(
            Text(
                f"cost limit of {format_dollars(max_cost_usd)} exceeded: "
                f"{format_dollars(stats.cost_usd)} spent (replies longer than the estimate of "
                "their requests; set llm.generation.max_tokens to bound them)",
                style="yellow",
            )
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
    rows = [(Text(visible_text(name)), values) for name, values in plan["by_metric"].items()]
    rows.append((Text("total", style="bold"), plan))
    for label, values in rows:
        cells = [
            f"{values['calls']:,}",
            f"{values['cached']:,}",
            format_tokens(values["input_tokens"]),
            format_tokens(values["output_tokens"]),
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
