"""A run as GitHub-flavoured Markdown: the summary ``evaluate`` appends to a CI job's page
(``$GITHUB_STEP_SUMMARY``) or writes with ``--summary-md`` (docs/integrations.md, "CI").

Every text that comes from the inputs (template ids, question ids, metric names, failure
reasons, paths) goes through :func:`md_text`, so no file can add a row, a column, a link, an
image or HTML to the page: pipes and Markdown punctuation are escaped, HTML is written as
text, a line break is a ``<br>``, and control and bidirectional characters are shown as their
escapes (:func:`graphrag_eval.formatting.visible_text`).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from graphrag_eval.formatting import format_value, plural, visible_text
from graphrag_eval.metrics.base import OutputKey
from graphrag_eval.report.console import _declared, _fitting_headline, _metric_keys, _spec
from graphrag_eval.results.aggregates import Aggregates, GroupAggregates
from graphrag_eval.results.model import ResultLayout

__all__ = [
    "ID_CHARS",
    "TEMPLATE_ROWS",
    "GateRow",
    "gates_markdown",
    "md_table",
    "md_text",
    "run_markdown",
]

Redact = Callable[[str], str]

# Markdown punctuation that can start emphasis, a code span, a link, an image or (``$``)
# GitHub's math, or end a table cell; ``_`` only where it can emphasise (GFM never does
# inside a word: steps_score).
_PUNCTUATION = re.compile(r"[\\`*\[\]|~!#$]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# What GitHub's autolinks start from: ``://`` (https://...), ``www.``, and ``@`` (e-mail).
_AUTOLINK = re.compile(r"(?<=:)(?=//)|(?i:(?<=www))(?=\.)|(?=@)")
_PASS, _FAIL = "✅ pass", "❌ FAIL"
TEMPLATE_ROWS = 100
"""Templates the summary's table shows (the others are counted): GitHub takes at most 1 MiB
of summary per step."""
ID_CHARS = 200
"""Characters of a template or question id a summary shows."""


def md_text(text: str, redact: Redact | None = None, limit: int | None = None) -> str:
    """``text`` safe in a Markdown table cell or paragraph: secrets redacted (``redact``),
    cut to ``limit`` characters (with ``...``), hidden characters shown as escapes, Markdown
    punctuation and pipes escaped, what GitHub would link by itself (``https://``, ``www.``,
    ``@``) broken with a ``\\``, HTML written as text, each line break a ``<br>``."""
    if redact is not None:
        text = redact(text)
    if limit is not None and len(text) > limit:
        text = text[:limit] + "..."
    text = visible_text(text).replace("\t", " ")
    text = _PUNCTUATION.sub(lambda match: "\\" + match.group(), text)
    text = _AUTOLINK.sub("\\\\", text)  # a bare URL or address: text, not a link
    text = html.escape(text, quote=False)
    return _LINE_BREAK.sub("<br>", text)


def md_table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str = "") -> str:
    """A table of cells already escaped (:func:`md_text`); ``align`` has an ``l`` or ``r``
    per column (``r``: right-aligned, for numbers), by default the first column on the left
    and the others on the right."""
    align = align or "l" + "r" * (len(header) - 1)
    rules = ["--:" if side == "r" else "---" for side in align]
    lines = [f"| {' | '.join(header)} |", f"| {' | '.join(rules)} |"]
    lines += [f"| {' | '.join(row)} |" for row in rows]
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class GateRow:
    """A gate, as the summary shows it: the option as given, and the failures it caused
    (none: it passed)."""

    gate: str
    failures: tuple[str, ...] = ()


def gates_markdown(rows: Sequence[GateRow], redact: Redact | None = None) -> str:
    """The gates and their verdicts (empty without gates)."""
    if not rows:
        return ""
    cells = [
        (
            md_text(row.gate, redact),
            _FAIL if row.failures else _PASS,
            md_text("\n".join(row.failures), redact) if row.failures else "",
        )
        for row in rows
    ]
    failed = sum(bool(row.failures) for row in rows)
    verdict = f"{failed:,} of {plural(len(rows), 'gate')} failed" if failed else "all passed"
    return f"### Gates: {verdict}\n\n" + md_table(("gate", "verdict", "why"), cells, "lll")


def run_markdown(
    title: str,
    aggregates: Aggregates,
    layout: ResultLayout | None,
    lines: Sequence[str] = (),
    redact: Redact | None = None,
) -> str:
    """The metrics over all questions and the per-template means (as ``evaluate`` prints
    them), under ``title``, with ``lines`` (what else the run says) after the tables."""
    declared = _declared(layout)
    micro = aggregates.micro
    keys = _metric_keys(micro, declared)
    parts = [f"## {md_text(title, redact)}", _overall(micro, aggregates.macro, keys, declared)]
    templates = _templates(aggregates.per_template, micro, keys, declared, redact)
    if templates:
        parts.append(templates)
    parts += [md_text(line, redact) for line in lines]
    return "\n\n".join(parts)


def _overall(
    micro: GroupAggregates,
    macro: Mapping[str, float],
    keys: Sequence[str],
    declared: Mapping[str, OutputKey],
) -> str:
    rows = []
    for key in keys:
        stats, unit, counts = micro.statistics(key), _spec(key, declared).unit, micro.counts(key)
        scored = f"{counts.scored:,}/{micro.questions:,}"
        if counts.failed:
            scored += f" ({counts.failed:,} failed)"
        rows.append(
            (
                md_text(key),
                *(
                    md_text(format_value(getattr(stats, name) if stats else None, unit))
                    for name in ("mean", "median", "min", "max")
                ),
                md_text(format_value(macro[key], unit)) if key in macro else "",
                scored,
            )
        )
    header = ("metric", "mean", "median", "min", "max", "macro mean", "scored")
    questions = plural(micro.questions, "question")
    return f"Metrics over all {questions}:\n\n" + md_table(header, rows)


def _templates(
    per_template: Mapping[str, GroupAggregates],
    micro: GroupAggregates,
    keys: Sequence[str],
    declared: Mapping[str, OutputKey],
    redact: Redact | None,
) -> str:
    """The counts and headline means per template, and over all of them."""
    if not per_template:
        return ""
    shown, _ = _fitting_headline(keys, 10_000, declared)
    rows = []
    groups = [
        (md_text(str(t), redact, ID_CHARS), group)
        for t, group in list(per_template.items())[:TEMPLATE_ROWS]
    ]
    for label, group in [*groups, ("**all**", micro)]:
        means = [(group.statistics(key), _spec(key, declared).unit) for key in shown]
        rows.append(
            (
                label,
                f"{group.success_samples:,}",
                f"{group.error_samples - group.missing_samples:,}",
                f"{group.missing_samples:,}",
                *(md_text(format_value(s.mean if s else None, unit)) for s, unit in means),
            )
        )
    header = ("template", "ok", "errors", "missing", *(md_text(key) for key in shown))
    table = "Per template (means):\n\n" + md_table(header, rows)
    if len(per_template) > TEMPLATE_ROWS:
        more = plural(len(per_template) - TEMPLATE_ROWS, "more template")
        table += f"\n\n{more} in aggregates.yaml"
    return table
