"""The agreement of a run with human labels on the terminal or in a CI log (docs/report.md,
"Agreement with human labels"): a table of the metrics, a confusion matrix per metric of
labels, and the labels left out."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich import box
from rich.console import Console
from rich.table import Table

from graphrag_eval.agreement.model import Agreement, Estimate, MetricAgreement
from graphrag_eval.formatting import plural, visible_text

__all__ = [
    "annotators_text",
    "estimate_text",
    "judge_text",
    "print_agreement",
    "print_problems",
]

SHOWN_PROBLEMS = 20


def estimate_text(estimate: Estimate | None, signed: bool = False) -> str:
    """``0.62 [0.41, 0.80]``, or why there is no value."""
    if estimate is None:
        return "-"
    if estimate.value is None:
        return estimate.note or "-"
    form = "{:+.3f}" if signed else "{:.3f}"
    shown = form.format(estimate.value)
    if estimate.low is None or estimate.high is None:
        return f"{shown} [no interval]"
    return f"{shown} [{form.format(estimate.low)}, {form.format(estimate.high)}]"


def judge_text(metric: MetricAgreement) -> str:
    """``kappa 0.62 [0.41, 0.80]``: the judge's statistic against the humans."""
    name = {"kappa": "kappa", "weighted_kappa": "weighted kappa", "rho": "rho"}[metric.statistic]
    return (
        f"{name} {estimate_text(metric.judge)}"
        if metric.judge.value is not None
        else (f"{name}: {estimate_text(metric.judge)}")
    )


def print_agreement(console: Console, agreement: Agreement) -> None:
    """The tables of ``agreement`` (the labels it left out: :func:`print_problems`)."""
    level = f"{agreement.confidence:.0%}"
    sources = ", ".join(map(visible_text, agreement.sources))
    console.print(
        f"Agreement of {visible_text(agreement.run)} with "
        f"{plural(agreement.labels_used, 'human label')} "
        f"(of {agreement.labels_read:,} read from {sources});"
        f" {level} intervals: bootstrap over questions, {agreement.resamples:,} resamples, "
        f"seed {agreement.seed}",
        markup=False,
    )
    if agreement.metrics:
        table = Table(box=box.SIMPLE_HEAD)
        for column in (
            "metric",
            "scale",
            "questions",
            "labels",
            "annotators",
            "judge vs humans",
            "mean offset (judge - human)",
            "alpha (annotators)",
            "alpha (with judge)",
        ):
            table.add_column(
                column, justify="right" if column in ("questions", "labels") else "left"
            )
        for metric in agreement.metrics.values():
            table.add_row(
                visible_text(metric.metric),
                metric.scale.value,
                f"{metric.questions:,}",
                f"{metric.labels:,}",
                annotators_text(metric.annotators, visible_text),
                judge_text(metric),
                estimate_text(metric.offset, signed=True),
                estimate_text(metric.alpha_humans),
                estimate_text(metric.alpha_with_judge),
            )
        console.print(table)
        for metric in agreement.metrics.values():
            _print_confusion(console, metric)
            if metric.unjudged:
                console.print(
                    f"{visible_text(metric.metric)}: {plural(metric.unjudged, 'label')} of "
                    "questions without a judge value (failed, skipped or an error response) "
                    "left out",
                    markup=False,
                )
    else:
        console.print("No human label could be used.", markup=False)


SHOWN_ANNOTATORS = 5
"""Annotators named in a table's cell; the others are counted (``--json`` lists all)."""


def annotators_text(annotators: Sequence[str], shown: Callable[[str], str] = str) -> str:
    """The first :data:`SHOWN_ANNOTATORS` annotators, and how many more."""
    text = ", ".join(map(shown, annotators[:SHOWN_ANNOTATORS]))
    more = len(annotators) - SHOWN_ANNOTATORS
    return f"{text} and {more:,} more" if more > 0 else text


def _print_confusion(console: Console, metric: MetricAgreement) -> None:
    if metric.confusion is None:
        return
    labels = [visible_text(label) for label in metric.confusion.labels]
    table = Table(
        title=f"{visible_text(metric.metric)}: human (rows) by judge (columns)",
        box=box.SIMPLE_HEAD,
        title_justify="left",
    )
    table.add_column("human \\ judge")
    for label in labels:
        table.add_column(label, justify="right")
    for label, row in zip(labels, metric.confusion.counts, strict=True):
        table.add_row(label, *(f"{count:,}" for count in row))
    console.print(table)


def print_problems(console: Console, problems: list[str], unlisted: int = 0) -> None:
    """The labels left out, one located line each (the first ``SHOWN_PROBLEMS``), counting
    the ``unlisted`` ones too."""
    if not problems:
        return
    console.print(f"{plural(len(problems) + unlisted, 'label')} left out:", markup=False)
    for problem in problems[:SHOWN_PROBLEMS]:
        console.print(f"  {visible_text(problem)}", markup=False)
    more = len(problems) + unlisted - SHOWN_PROBLEMS
    if more > 0:
        listed = "all" if not unlisted else f"the first {len(problems):,}"
        console.print(f"  ... and {more:,} more (--json lists {listed})", markup=False)
