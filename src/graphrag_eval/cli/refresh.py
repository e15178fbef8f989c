"""``graphrag-eval refresh``: execute every reference query against the knowledge graph, write
the reference with fresh outputs and report the drift (docs/knowledge-graph.md, "Refreshing
references: drift")."""

from __future__ import annotations

from pathlib import Path

import click
from rich import box
from rich.table import Table
from rich.text import Text

from graphrag_eval.cli.console import as_text, emit, stdout
from graphrag_eval.cli.errors import exit_on_failures
from graphrag_eval.cli.options import (
    FilePath,
    config_option,
    debug_option,
    input_file_arguments,
    max_expanded_size_option,
    output_file_option,
    store_options,
    with_store,
)
from graphrag_eval.config import EvaluationConfig
from graphrag_eval.errors import ConfigError
from graphrag_eval.evaluation.runner import run_sync
from graphrag_eval.files.documents import remove_stale_temporaries, write_text_atomic
from graphrag_eval.formatting import plural, visible_text
from graphrag_eval.graph.drift import DRIFTED, Drift, DriftReport
from graphrag_eval.graph.execution import GraphStore
from graphrag_eval.graph.refresh import (
    ReferenceFile,
    Refreshed,
    read_reference_file,
    refresh_reference,
)
from graphrag_eval.graph.stores import open_store
from graphrag_eval.metrics.loading import load_config

__all__ = ["refresh"]

_SHOWN = 10
"""How many drifted steps the console lists."""


@click.command("refresh")
@debug_option
@input_file_arguments("reference")
@output_file_option(
    "Write the reference with fresh outputs to this file (the same format, order and layout "
    "as REFERENCE; only outputs change). Without it (or --in-place) nothing is written but "
    "the drift report."
)
@click.option("--in-place", is_flag=True, help="Write the fresh outputs into REFERENCE itself.")
@store_options
@config_option("YAML config file (its sparql: section names the store).")
@max_expanded_size_option
@click.option(
    "--drift-report",
    type=FilePath(),
    metavar="FILE",
    help="Write the drift per question and template to FILE (.json: JSON, else YAML).",
)
@click.option(
    "--fail-on-drift",
    is_flag=True,
    help="Exit 1 when an output changed, became empty or now fails (for CI).",
)
def refresh(
    reference: Path,
    output: Path | None,
    in_place: bool,
    endpoint: str | None,
    data_files: tuple[Path, ...],
    config_path: Path | None,
    drift_report: Path | None,
    fail_on_drift: bool,
) -> None:
    """Execute every sparql_query step's query of the REFERENCE dataset against the knowledge
    graph (--endpoint, --data or the config's sparql: section) and report how its stored
    output drifted: unchanged, changed (rows added and removed), now empty, now failing, no
    query. With -o, write the reference with fresh outputs: an output that changed or became
    empty is replaced, in the form it had; one whose query now fails keeps its old output.

    \b
    Exit codes: 0 ok, 1 drift with --fail-on-drift, 2 bad input, config or option,
    3 the store became unusable (the steps it left are reported as now failing).

    \b
    Example:
      graphrag-eval refresh reference.yaml --data graph.ttl -o reference.new.yaml
      graphrag-eval refresh reference.yaml --endpoint http://localhost:7878/query \\
          --drift-report drift.yaml --fail-on-drift
    """
    target = _target(reference, output, in_place)
    _check_destinations(reference, target, drift_report)
    config = with_store(load_config(config_path), endpoint, data_files)
    file = read_reference_file(reference)  # a bad reference stops before the store is loaded
    store = _store(config)
    refreshed = run_sync(lambda: _refresh(file, store))
    _print_summary(reference, refreshed, store)
    if target is not None and (refreshed.refreshed or target != reference):
        remove_stale_temporaries(target.parent, target.name)
        write_text_atomic(target, refreshed.text)
        stdout().print(f"wrote {target} ({plural(refreshed.refreshed, 'output')} refreshed)")
    elif target is not None:
        stdout().print(f"{target}: no output drifted, left as it is")
    if drift_report is not None:
        report_format = "json" if drift_report.suffix.lower() == ".json" else "yaml"
        emit(as_text(refreshed.report.as_record(), report_format), drift_report)
        stdout().print(f"wrote {drift_report}")
    drifted = refreshed.report.drifted
    failures = [f"drift: {plural(drifted, 'reference output')} drifted"] if drifted else []
    incomplete = None
    if refreshed.unusable is not None:
        incomplete = (
            f"refresh incomplete: the SPARQL store {store.identity.label} became unusable "
            f"({refreshed.unusable}); the queries executed after that are reported as now "
            "failing and kept their old outputs: run refresh again when the store is usable"
        )
    exit_on_failures(failures if fail_on_drift else [], incomplete)


def _check_destinations(reference: Path, target: Path | None, drift_report: Path | None) -> None:
    """Refuse a drift report written over an input or output, and a missing directory."""
    if drift_report is not None and any(
        path is not None and _same_file(drift_report, path) for path in (reference, target)
    ):
        raise click.BadParameter("is REFERENCE or the output itself", param_hint="--drift-report")
    for path, option in ((target, "--output"), (drift_report, "--drift-report")):
        if path is not None and not path.parent.is_dir():
            raise click.BadParameter(
                f"the directory {str(path.parent)!r} does not exist", param_hint=option
            )


def _target(reference: Path, output: Path | None, in_place: bool) -> Path | None:
    """Where the refreshed reference goes: ``-o``, or REFERENCE with ``--in-place``."""
    if in_place:
        if output is not None and not _same_file(output, reference):
            raise click.BadParameter("give either -o or --in-place", param_hint="--in-place")
        return reference
    if output is not None and _same_file(output, reference):
        raise click.BadParameter(
            "is REFERENCE itself: give --in-place to overwrite it", param_hint="--output"
        )
    return output


def _same_file(path: Path, other: Path) -> bool:
    try:
        return path.samefile(other)
    except OSError:
        return path.resolve() == other.resolve()


def _store(config: EvaluationConfig) -> GraphStore:
    store = open_store(config.sparql) if config.sparql.configured else None
    if store is None:
        raise ConfigError(
            "refresh needs a store to execute the queries: give --endpoint URL or --data "
            "FILE, or a sparql: section in the config (-c)",
            field="sparql",
        )
    return store


async def _refresh(file: ReferenceFile, store: GraphStore) -> Refreshed:
    try:
        return await refresh_reference(file, store)
    finally:
        await store.aclose()


_LABELS = {drift: drift.value.replace("_", " ") for drift in Drift}


def _print_summary(reference: Path, refreshed: Refreshed, store: GraphStore) -> None:
    report = refreshed.report
    console = stdout()
    steps = sum(report.step_counts().values())
    queries = plural(refreshed.queries, "distinct query", "distinct queries")
    console.print(
        f"{reference}: {plural(len(report.questions), 'question')}, "
        f"{plural(steps, 'sparql_query step')}, {queries} executed against "
        f"{store.identity.label}",
        markup=False,
    )
    counts = ", ".join(
        f"{count:,} {_LABELS[drift]}" for drift, count in report.step_counts().items()
    )
    console.print(f"steps: {counts}", markup=False)
    if refreshed.queries == 0:
        console.print(
            "nothing to refresh: no sparql_query reference step has a query in args.query",
            markup=False,
        )
        return
    console.print(_template_table(report))
    _print_drifted(report)


def _template_table(report: DriftReport) -> Table:
    table = Table(title="Questions by drift", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("template", overflow="fold")
    for drift in Drift:
        table.add_column(_LABELS[drift], justify="right", no_wrap=True)
    rows = list(report.per_template().items())
    rows.append(("all", report.question_counts()))
    for template, counts in rows:
        label = Text(visible_text(template), style="bold" if template == "all" else "")
        table.add_row(label, *(f"{counts[drift]:,}" for drift in Drift))
    return table


def _print_drifted(report: DriftReport) -> None:
    """One line per step that drifted, the first :data:`_SHOWN` of them."""
    lines = []
    for question in report.questions:
        for step in question.steps:
            if step.drift not in DRIFTED:
                continue
            detail = step.error if step.drift is Drift.NOW_FAILING else step.reason
            if step.drift is Drift.CHANGED and (step.added_count or step.removed_count):
                counts = f"{step.added_count:,} rows added, {step.removed_count:,} removed"
                detail = f"{counts}: {detail}"
            text = " ".join(str(detail or "").split())
            text = text if len(text) <= 200 else text[:197] + "..."
            lines.append(
                f"  {_LABELS[step.drift]}: question '{question.question_id}': {step.step}: {text}"
            )
    if not lines:
        return
    console = stdout()
    for line in lines[:_SHOWN]:
        console.print(visible_text(line), markup=False, highlight=False)
    if len(lines) > _SHOWN:
        console.print(f"  ... and {len(lines) - _SHOWN:,} more (all with --drift-report FILE)")
