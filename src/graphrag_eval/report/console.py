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
    plural,
    visible_text,
)
from graphrag_eval.inputs import Notice, count_kinds
from graphrag_eval.llm.engine import CallStats
from graphrag_eval.llm.pricing import batch_prices_text
from graphrag_eval.metrics.base import Aggregation, KeyKind, OutputKey
from graphrag_eval.metrics.registry import declared_outputs
from graphrag_eval.report.noise_views import noise_text
from graphrag_eval.results.aggregates import Aggregates, GroupAggregates, Statistics
from graphrag_eval.results.model import ResultLayout

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


def _declared(layout: ResultLayout | None) -> dict[str, OutputKey]:
    """Key -> declaration: of the run's metrics (``layout``), else of the registered ones."""
    if layout is not None:
        return {name: spec for name, (spec, _) in layout.outputs().items()}
    return {name: spec for name, (spec, _) in declared_outputs().items()}


def _spec(name: str, declared: Mapping[str, OutputKey]) -> OutputKey:
    """A key's declaration; a key no metric declares is a score (docs/outputs.md)."""
    return declared.get(name) or OutputKey(name)


def _metric_keys(micro: GroupAggregates, declared: Mapping[str, OutputKey]) -> list[str]:
    """Numeric keys of the aggregates: headline metrics, other metrics, then usage."""
    # Judge costs are summed up in the judge summary, not listed as metrics.
    numeric = [
        key
        for key, value in micro.keys.items()
        if isinstance(value, Statistics) and _spec(key, declared).kind is not KeyKind.COST
    ]
    # A numeric metric attempted and failed on every question has no statistics: still a row.
    numeric += [
        key
        for key, counts in micro.coverage.items()
        if key not in micro.keys
        and counts.failed
        and _spec(key, declared).kind is not KeyKind.COST
        and _spec(key, declared).aggregation is Aggregation.NUMERIC
    ]

    def rank(key: str) -> int:
        spec = _spec(key, declared)
        if spec.kind is KeyKind.USAGE:
            return 2
        return 0 if spec.headline else 1

    return sorted(numeric, key=rank)


def print_summary(
    console: Console, aggregates: Aggregates, layout: ResultLayout | None = None
) -> None:
    """Print the overall metric table and the per-template table; ``layout``: the run's
    metrics (by default the registered ones), which say what each key is."""
    declared = _declared(layout)
    micro = aggregates.micro
    keys = _metric_keys(micro, declared)
    _print_overall(console, micro, aggregates.macro, keys, declared)
    _print_label_counts(console, micro, declared)
    _print_templates(console, aggregates.per_template, micro, keys, declared)


def _print_overall(
    console: Console,
    micro: GroupAggregates,
    macro: Mapping[str, float],
    keys: Sequence[str],
    declared: Mapping[str, OutputKey],
) -> None:
    """The table of every numeric key over all questions."""
    questions = micro.questions
    # On a narrow terminal keep the columns that matter most; the rest is in aggregates.yaml.
    if console.width >= _WIDE:
        columns: tuple[str, ...] = ("mean", "median", "min", "max", "macro mean", "scored")
    elif console.width >= _NARROW:
        columns = ("mean", "min", "max", "scored")
    else:
        columns = ("mean", "scored")
    if micro.repeats:  # a run with llm.repeats: each metric's noise next to its mean
        columns = (columns[0], "judge noise", *columns[1:])
    overall = Table(title="Metrics over all questions", title_justify="left", box=box.SIMPLE_HEAD)
    # Metric names are the keys people grep for: keep them whole where the terminal allows.
    longest = max((len(key) for key in keys), default=6)
    overall.add_column("metric", overflow="fold", min_width=min(longest, console.width - 30))
    for column in columns:
        overall.add_column(column, justify="right")
    for key in keys:
        stats = micro.statistics(key)
        unit = _spec(key, declared).unit
        counts = micro.counts(key)
        scored = f"{counts.scored}/{questions}"
        if counts.failed:
            scored += f" ({counts.failed} failed)"
        cells = {
            "mean": format_value(stats.mean if stats else None, unit),
            "median": format_value(stats.median if stats else None, unit),
            "min": format_value(stats.min if stats else None, unit),
            "max": format_value(stats.max if stats else None, unit),
            "macro mean": format_value(macro[key], unit) if key in macro else "",
            "scored": scored,
            "judge noise": noise_text(micro.repeats.get(key), unit),
        }
        overall.add_row(Text(visible_text(key)), *(cells[column] for column in columns))
    console.print(overall)
    _print_failures(console, micro, declared)


def _print_failures(
    console: Console, micro: GroupAggregates, declared: Mapping[str, OutputKey]
) -> None:
    """One line per failure: the keys that failed the same way, how often, and why
    (``answer_f1 0/30, 30 failed: judge unreachable ...``); under ``llm.repeats`` the failed
    repeats of questions that still scored too (``answer_f1 30/30, 2 of 90 repeats failed``)."""
    questions = micro.questions
    failures: dict[tuple[int, int, str, str], list[str]] = {}
    for key, counts in micro.coverage.items():
        if (counts.failed or counts.failed_repeats) and _spec(
            key, declared
        ).kind is not KeyKind.COST:
            reason = counts.failed_reason or ""
            spread = micro.repeats.get(key)
            repeats = ""
            if spread is not None and spread.failed_repeats:
                asked = spread.judged_repeats + spread.failed_repeats
                repeats = f"{spread.failed_repeats:,} of {asked:,} repeats failed"
            found = (counts.scored, counts.failed, reason, repeats)
            failures.setdefault(found, []).append(key)
    for (scored, failed, reason, repeats), keys in failures.items():
        parts = [f"{', '.join(keys)} {scored:,}/{questions:,}"]
        if repeats:  # the question still scored, from its other repeats
            parts.append(repeats)
        if failed:
            parts.append(f"{failed:,} failed" + (f": {reason}" if reason else ""))
        console.print(Text(visible_text(", ".join(parts)), style="yellow"), soft_wrap=True)


def _print_label_counts(
    console: Console, micro: GroupAggregates, declared: Mapping[str, OutputKey]
) -> None:
    """One line per label key: the classes and grades, counted."""
    for key in micro.keys:
        counts = micro.label_counts(key)
        if counts is not None and _spec(key, declared).aggregation is Aggregation.LABEL:
            shown = ", ".join(f"{label} {count:,}" for label, count in counts.items())
            if key in micro.repeats:
                shown += f" ({noise_text(micro.repeats[key])})"
            line = visible_text(f"{key}: {shown}")  # labels are the judge's text
            console.print(line, markup=False, highlight=False)
    if micro.diagnosed_steps:  # docs/knowledge-graph.md, "Why a query is wrong"
        shown = ", ".join(f"{label} {count:,}" for label, count in micro.query_diagnosis.items())
        line = f"query_diagnosis ({micro.diagnosed_steps:,} SPARQL steps): {shown or 'none'}"
        console.print(visible_text(line), markup=False, highlight=False)


def _print_templates(
    console: Console,
    per_template: Mapping[str, GroupAggregates],
    micro: GroupAggregates,
    keys: Sequence[str],
    declared: Mapping[str, OutputKey],
) -> None:
    """The table of counts and headline means per template, and over all of them."""
    longest_id = max((len(str(t)) for t in per_template), default=8)
    shown, hidden = _fitting_headline(
        keys, console.width - min(max(longest_id, 8), 24) - 30, declared
    )
    title = "Per template (means)"
    if hidden:
        title += visible_text(f"; {', '.join(hidden)} in aggregates.yaml")
    templates = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    templates.add_column("template", overflow="fold", min_width=min(longest_id, 24))
    for column in ("ok", "errors", "missing", *shown):
        templates.add_column(column, justify="right", no_wrap=True)
    rows = [(Text(visible_text(str(t))), group) for t, group in per_template.items()]
    rows.append((Text("all", style="bold"), micro))
    for label, group in rows:  # template ids are user text: never read as markup
        means = [(group.statistics(key), _spec(key, declared).unit) for key in shown]
        templates.add_row(
            label,
            str(group.success_samples),
            str(group.error_samples - group.missing_samples),
            str(group.missing_samples),
            *(format_value(stats.mean if stats else None, unit) for stats, unit in means),
        )
    console.print(templates)


def _fitting_headline(
    keys: Sequence[str], room: int, declared: Mapping[str, OutputKey]
) -> tuple[list[str], list[str]]:
    """The headline keys that fit in ``room`` columns beside the counts, and those left out
    (always at least one shown)."""
    headline = [key for key in keys if key in declared and declared[key].headline]
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
    if stats.batch_prices:
        line += " " + batch_prices_text(stats.batch_prices)
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
    batch = batch_prices_text(plan.get("batch_prices") or {})
    console.print(
        "Tokens are estimated at 4 characters per token; replies at max_tokens, or 300 tokens "
        "when it is not set. Cached calls cost nothing."
        + (f" Judge calls go to the provider's batch API: cost {batch}." if batch else "")
        + (" Local texts run through a local model on this machine, for free." if local else ""),
        markup=False,
    )
    if plan.get("unpriced_models"):
        console.print(
            f"no price known for {', '.join(plan['unpriced_models'])}: counted as $0 "
            "(set llm.prices)",
            markup=False,
        )
