"""``graphrag-eval aggregate``: the aggregates of saved per-question results (docs/report.md)."""

from __future__ import annotations

from pathlib import Path

import click

from graphrag_eval.cli.console import as_text, emit
from graphrag_eval.cli.options import (
    debug_option,
    max_expanded_size_option,
    output_file_option,
    saved_run_arguments,
)
from graphrag_eval.cli.view_options import filter_options
from graphrag_eval.results.aggregation import compute_aggregates, load_results
from graphrag_eval.results.read_run import find_results, run_config
from graphrag_eval.results.selection import QuestionFilter

__all__ = ["aggregate"]


@click.command("aggregate")
@debug_option
@saved_run_arguments
@max_expanded_size_option
@output_file_option("Write the aggregates here instead of standard output.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["yaml", "json"]),
    default=None,
    help="Output format (default: json for an -o FILE named .json, else yaml).",
)
@filter_options
def aggregate(
    results: Path,
    config_path: Path | None,
    output: Path | None,
    output_format: str | None,
    selection: QuestionFilter,
) -> None:
    """Compute aggregates from saved per-question RESULTS: a run's output directory or its
    results file (JSONL, JSON or YAML).

    The aggregation settings are the run's (from the run.yaml beside the results), or the
    config's with -c.

    \b
    Example:
      graphrag-eval aggregate out/
      graphrag-eval aggregate out/results.jsonl -c config.yaml -o aggregates.yaml
      graphrag-eval aggregate out/ --template t1 --template t2
    """
    results_path = find_results(results)
    config = run_config(results_path, config_path)
    records = selection.restrict_records(load_results(results_path), file=str(results_path))
    aggregates = compute_aggregates(records, config)
    if output_format is None:  # -o aggregates.json: JSON, as its name says
        is_json = output is not None and output.suffix.lower() == ".json"
        output_format = "json" if is_json else "yaml"
    emit(as_text(aggregates, output_format), output)
