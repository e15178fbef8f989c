"""The report's "Agreement with human labels" section (docs/report.md): shown when the run's
reference has ``human_labels`` or ``graphrag-eval report --labels FILE`` gives labels. It
shows what ``graphrag-eval agreement`` prints (:mod:`graphrag_eval.agreement`) in the
report's own table styles (``templates/agreement.html.j2``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from graphrag_eval.agreement.console import annotators_text, estimate_text, judge_text
from graphrag_eval.agreement.labels import (
    LabelSet,
    may_have_labels,
    reference_labels,
    run_reference,
)
from graphrag_eval.agreement.model import Agreement
from graphrag_eval.errors import GraphragEvalError
from graphrag_eval.results.read_run import SavedRun

__all__ = ["AgreementSection", "agreement_section"]

_SHOWN_PROBLEMS = 20


@dataclass(frozen=True, slots=True)
class AgreementSection:
    """What the section shows: a row per metric, its confusion matrices, the labels left
    out; or only ``note`` (why there are no statistics)."""

    rows: list[dict[str, str]] = field(default_factory=list)
    confusions: list[tuple[str, list[str], list[tuple[str, list[int]]]]] = field(
        default_factory=list
    )
    summary: str = ""
    problems: list[str] = field(default_factory=list)
    problem_count: int = 0
    note: str | None = None


def agreement_section(
    run: SavedRun, labels: Sequence[LabelSet] | None = None
) -> AgreementSection | None:
    """The section of ``run`` with ``labels`` (by default the human labels of the run's
    reference, when it has any); ``None`` when there are no labels."""
    try:
        if labels is None:
            labels = _reference_labels(run)
        if not labels or not any(source.labels for source in labels):
            return None
        from graphrag_eval.agreement.compute import compute_agreement

        return _section(compute_agreement(run, labels))
    except GraphragEvalError as exc:  # a missing extra, a reference no longer readable
        return AgreementSection(note=str(exc))


def _reference_labels(run: SavedRun) -> list[LabelSet] | None:
    path = run_reference(run.info, run.results_path.parent)
    if path is None or not may_have_labels(path):
        return None
    return [reference_labels(path)]


def _section(found: Agreement) -> AgreementSection:
    rows = [
        {
            "metric": metric.metric,
            "scale": metric.scale.value,
            "questions": f"{metric.questions:,}",
            "labels": f"{metric.labels:,}",
            "annotators": annotators_text(metric.annotators),
            "judge": judge_text(metric),
            "offset": estimate_text(metric.offset, signed=True),
            "alpha_humans": estimate_text(metric.alpha_humans),
            "alpha_with_judge": estimate_text(metric.alpha_with_judge),
        }
        for metric in found.metrics.values()
    ]
    confusions = [
        (
            metric.metric,
            list(metric.confusion.labels),
            list(zip(metric.confusion.labels, metric.confusion.counts, strict=True)),
        )
        for metric in found.metrics.values()
        if metric.confusion is not None
    ]
    summary = (
        f"{found.labels_used:,} of {found.labels_read:,} human labels used, from "
        f"{', '.join(found.sources)}; {found.confidence:.0%} intervals: bootstrap over "
        f"questions ({found.resamples:,} resamples, seed {found.seed})."
    )
    return AgreementSection(
        rows,
        confusions,
        summary,
        found.problems[:_SHOWN_PROBLEMS],
        len(found.problems) + found.unlisted,
        None if rows else "No human label could be used.",
    )
