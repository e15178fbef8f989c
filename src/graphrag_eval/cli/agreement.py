"""``graphrag-eval agreement``: how well a run's judge agrees with human labels, per metric,
with the gate ``--fail-under agreement.METRIC=VALUE`` (docs/report.md, "Agreement with human
labels")."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from graphrag_eval.agreement.console import print_agreement, print_problems
from graphrag_eval.agreement.gates import AgreementGate, check_gates, parse_gate
from graphrag_eval.agreement.labels import (
    LabelSet,
    read_labels_file,
    reference_labels,
    run_reference,
)
from graphrag_eval.agreement.model import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Agreement,
)
from graphrag_eval.agreement.scales import metric_scales
from graphrag_eval.cli.console import LOG_WIDTH, as_text, emit, stderr, stdout
from graphrag_eval.cli.errors import exit_on_failures
from graphrag_eval.cli.options import (
    confidence_option,
    debug_option,
    max_expanded_size_option,
    output_file_option,
    saved_run_arguments,
)
from graphrag_eval.cli.report import load_saved_run
from graphrag_eval.errors import InputError
from graphrag_eval.results.read_run import SavedRun

__all__ = ["agreement", "label_sources", "labels_option"]


def _gates(
    ctx: click.Context, param: click.Parameter, values: Sequence[str]
) -> list[AgreementGate]:
    gates = []
    for value in values:
        try:
            gates.append(parse_gate(value))
        except ValueError as exc:
            raise click.BadParameter(
                str(exc), ctx=ctx, param=param, param_hint=f"--fail-under {value}"
            ) from None
    return gates


def labels_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--labels FILE`` (for ``agreement`` and ``report``)."""
    return click.option(
        "--labels",
        "labels_path",
        type=click.Path(dir_okay=False, path_type=Path),
        help=help_text,
    )


@click.command("agreement", context_settings={"show_default": True})
@debug_option
@saved_run_arguments
@max_expanded_size_option
@labels_option(
    "Human labels: a .csv or .jsonl file of question_id, metric, value, annotator (default: "
    "the human_labels of the run's reference)."
)
@click.option(
    "--reference",
    "reference_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Reference dataset whose human_labels to read (default: the one the run names, "
    "when no --labels is given).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the agreement as JSON.")
@output_file_option("Write the agreement to this file instead of standard output.")
@click.option("--seed", type=int, default=DEFAULT_SEED, help="Seed of the bootstrap.")
@click.option(
    "--resamples",
    type=click.IntRange(min=100, max=100_000),
    default=DEFAULT_RESAMPLES,
    help="Bootstrap resamples per interval.",
)
@confidence_option(DEFAULT_CONFIDENCE)
@click.option(
    "--fail-under",
    "gates",
    multiple=True,
    metavar="agreement.METRIC=VALUE",
    callback=_gates,
    help="Exit 1 when METRIC's agreement with the humans is under VALUE: Cohen's kappa "
    "(categories, pass/fail), weighted kappa (grades) or Spearman's rho (scores); a metric "
    "with too few labels fails it (repeatable).",
)
def agreement(
    results: Path,
    config_path: Path | None,
    labels_path: Path | None,
    reference_path: Path | None,
    as_json: bool,
    output: Path | None,
    seed: int,
    resamples: int,
    confidence: float,
    gates: Sequence[AgreementGate],
) -> None:
    """How well the judge of saved RESULTS agrees with human labels, per metric.

    RESULTS is an output directory of evaluate (or its results file). Each human label is
    paired with the run's value of its metric on its question: Cohen's kappa (quadratic
    weighted for grades A-E) and a confusion matrix for labels and pass/fail, Spearman's rho
    and the mean offset (judge - human) for scores, Krippendorff's alpha among the
    annotators and with the judge as one more; each with a seeded bootstrap interval over
    questions. A metric with fewer than 5 labelled questions says so instead of a number.
    Exit codes: 0 ok, 1 a gate failed, 2 bad input.

    \b
    Example:
      graphrag-eval agreement out/ --labels labels.csv
      graphrag-eval agreement out/ --json -o agreement.json
      graphrag-eval agreement out/ --labels labels.jsonl \\
          --fail-under agreement.factual_accuracy_grade=0.6
    """
    run = load_saved_run(results, config_path)
    sources = label_sources(run, labels_path, reference_path)
    # Imported here: it brings numpy and the statistics libraries, which no other command needs.
    from graphrag_eval.agreement.compute import compute_agreement

    found = compute_agreement(run, sources, seed=seed, resamples=resamples, confidence=confidence)
    if not found.metrics:
        raise InputError(
            f"none of the {found.labels_read:,} human labels could be used; the first: "
            f"{found.problems[0] if found.problems else 'no label'}"
        )
    failures = check_gates(found, gates, metric_scales(run))
    _show(found, as_json, output)
    exit_on_failures(failures)


def _show(found: Agreement, as_json: bool, output: Path | None) -> None:
    if as_json:
        emit(as_text(found.as_dict(), "json"), output)
        return
    if output is None:
        print_agreement(stdout(), found)
    else:
        buffer = io.StringIO()
        print_agreement(Console(file=buffer, width=LOG_WIDTH, color_system=None), found)
        emit(buffer.getvalue(), output)
    print_problems(stderr(), found.problems, found.unlisted)


def label_sources(
    run: SavedRun, labels_path: Path | None, reference_path: Path | None
) -> list[LabelSet]:
    """Where the labels are: ``--labels``, ``--reference``, or the run's reference."""
    sources: list[LabelSet] = []
    if labels_path is not None:
        sources.append(read_labels_file(labels_path))
    if reference_path is None and labels_path is None:
        reference_path = run_reference(run.info, run.results_path.parent)
        if reference_path is None:
            raise InputError(
                "no human labels: give --labels FILE (CSV or JSONL of question_id, metric, "
                "value, annotator), or --reference FILE with human_labels (the run's own "
                "reference is not found)",
                file=str(run.results_path.parent),
            )
    if reference_path is not None:
        sources.append(reference_labels(reference_path))
    if not any(source.labels for source in sources):
        problems = [problem for source in sources for problem in source.problems]
        detail = f": every row was left out, the first: {problems[0]}" if problems else ""
        names = " and ".join(source.source for source in sources)
        raise InputError(f"no human labels in {names}{detail}")
    return sources
