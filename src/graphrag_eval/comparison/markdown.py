"""A comparison of two runs as GitHub-flavoured Markdown: the summary ``compare`` appends to a
CI job's page (``$GITHUB_STEP_SUMMARY``) or writes with ``--summary-md`` (docs/integrations.md,
"CI"): the runs, the overall table, the questions that got worse; every text from the
runs escaped by :func:`graphrag_eval.report.markdown.md_text`."""

from __future__ import annotations

from collections.abc import Mapping

from graphrag_eval.comparison.console import failure_lines, input_lines
from graphrag_eval.comparison.model import Comparison, MetricChange
from graphrag_eval.comparison.units import (
    format_amount,
    format_amount_change,
    format_amount_interval,
)
from graphrag_eval.formatting import plural
from graphrag_eval.report.markdown import ID_CHARS, Redact, md_table, md_text

__all__ = ["comparison_markdown", "worse_items_markdown"]

_VERDICT = {"better": "🟢 better", "worse": "🔴 worse", "lower": "lower", "higher": "higher"}


def comparison_markdown(comparison: Comparison, redact: Redact | None = None) -> str:
    """The comparison's summary: the runs, how many questions they share, the scores' table,
    the costs, tokens and time, what failed or changed in the inputs, and the questions that
    got worse."""
    header = [
        "## graphrag-eval compare",
        f"A: {md_text(comparison.run_a, redact)}<br>B: {md_text(comparison.run_b, redact)}",
        _counts_line(comparison),
    ]
    scores = {name: change for name, change in comparison.overall.items() if change.is_score}
    parts = header
    if scores:
        parts.append(_table(scores, comparison.confidence, "better/worse/same"))
    resources = comparison.resources()
    if resources:
        parts.append(
            "Costs, tokens and time (not part of the verdict):\n\n"
            + _table(resources, comparison.confidence, "lower/higher/same")
        )
    lines = [*failure_lines(comparison), *input_lines(comparison)]
    parts += [md_text(line, redact) for line in lines]
    worse = worse_items_markdown(comparison, redact)
    if worse:
        parts.append(worse)
    return "\n\n".join(parts)


def _counts_line(comparison: Comparison) -> str:
    worse = len(comparison.significant_scores("worse"))
    better = len(comparison.significant_scores("better"))
    line = f"{plural(comparison.paired, 'question')} in both runs"
    if comparison.only_in_a:
        line += f", {len(comparison.only_in_a):,} only in A"
    if comparison.only_in_b:
        line += f", {len(comparison.only_in_b):,} only in B"
    return (
        f"{line}; scores: {better:,} significantly better, {worse:,} significantly worse "
        f"({comparison.confidence:.0%} paired bootstrap intervals, {comparison.resamples:,} "
        f"resamples, seed {comparison.seed})"
    )


def _table(changes: Mapping[str, MetricChange], confidence: float, counts: str) -> str:
    rows = []
    for name, change in changes.items():
        rows.append(
            (
                md_text(name),
                f"{change.pairs:,}",
                md_text(format_amount(change.mean_a, change.unit)),
                md_text(format_amount(change.mean_b, change.unit)),
                md_text(format_amount_change(change.difference, change.unit)),
                md_text(format_amount_interval(change.ci_low, change.ci_high, change.unit)),
                _VERDICT.get(change.direction, change.direction),
                f"{change.improved:,}/{change.regressed:,}/{change.unchanged:,}",
            )
        )
    header = (
        "metric",
        "pairs",
        "A",
        "B",
        "B - A",
        f"{confidence:.0%} interval",
        "change",
        counts,
    )
    return md_table(header, rows, "lrrrrrlr")


def worse_items_markdown(comparison: Comparison, redact: Redact | None = None) -> str:
    """The questions that fell, per metric, largest fall first, as many as the comparison
    lists (its ``top``): every score's, and a cost's, token count's or time's only when it
    got significantly worse overall (as the terminal shows them). Empty when none fell."""
    rows = []
    more = []
    for name, change in comparison.overall.items():
        if not change.worse_items or (change.lower_is_better and change.verdict != "worse"):
            continue
        for item in change.worse_items:
            rows.append(
                (
                    md_text(name),
                    md_text(item.question_id, redact, ID_CHARS),
                    md_text(item.template_id, redact, ID_CHARS),
                    md_text(format_amount(item.a, change.unit)),
                    md_text(format_amount(item.b, change.unit)),
                    md_text(comparison.cause(item.question_id)),
                )
            )
        if change.regressed > len(change.worse_items):
            hidden = change.regressed - len(change.worse_items)
            more.append(f"{md_text(name)}: {hidden:,} more (compare --top 0 lists them all)")
    if not rows:
        return ""
    table = md_table(("metric", "question", "template", "A", "B", "what changed"), rows, "lllrrl")
    return "\n\n".join(["### Questions that got worse", table, *more])
