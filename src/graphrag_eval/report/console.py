"""The terminal summary printed after a run: metrics, templates and what went wrong."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from graphrag_eval.inputs import Notice, count_kinds
from graphrag_eval.metrics.base import declared_outputs
from graphrag_eval.metrics.usage import USAGE_KEYS

__all__ = ["format_number", "print_notices", "print_summary"]

_NOTICE_LIMIT = 10
_WIDE = 110  # terminal columns from which the summary shows median and macro mean too


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


def _metric_keys(micro: Mapping[str, Any]) -> list[str]:
    """Numeric keys of the aggregates: headline metrics, other metrics, then usage."""
    declared = declared_outputs()
    numeric = [
        key for key, value in micro.items() if isinstance(value, Mapping) and "mean" in value
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
    wide = console.width >= _WIDE
    columns = (
        ("mean", "median", "min", "max", "macro mean", "scored")
        if wide
        else ("mean", "min", "max", "scored")
    )
    overall = Table(title="Metrics over all questions", title_justify="left")
    overall.add_column("metric", overflow="fold")
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

    declared = declared_outputs()
    headline = [key for key in keys if key in declared and declared[key][0].headline]
    templates = Table(title="Per template (means)", title_justify="left")
    templates.add_column("template", overflow="fold", ratio=3)
    for column in ("ok", "errors", "missing", *headline):
        templates.add_column(column, justify="right", ratio=1)
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
