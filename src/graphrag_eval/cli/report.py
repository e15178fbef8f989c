"""``graphrag-eval report``: the HTML report of a saved run (docs/report.md), and reading a
saved run with its skipped records as warnings (also for ``compare``)."""

from __future__ import annotations

import re
from pathlib import Path

import click

from graphrag_eval.agreement.labels import read_labels_file
from graphrag_eval.cli.console import stderr, stdout
from graphrag_eval.cli.options import (
    debug_option,
    max_expanded_size_option,
    output_file_option,
    saved_run_arguments,
)
from graphrag_eval.cli.view_options import filter_options
from graphrag_eval.files.documents import remove_stale_temporaries
from graphrag_eval.metrics.loading import load_config
from graphrag_eval.report.console import plural
from graphrag_eval.report.html import DEFAULT_WORST, write_report
from graphrag_eval.report.question_page import write_question
from graphrag_eval.results.export import (
    TABLE_FILE_NAMES,
    TABLE_FORMATS,
    TableFormat,
    require_parquet,
    table_format_of,
    write_table,
)
from graphrag_eval.results.read_run import SavedRun, load_run
from graphrag_eval.results.selection import QuestionFilter
from graphrag_eval.results.to_records import to_record
from graphrag_eval.results.write_run import REPORT_HTML

__all__ = ["load_saved_run", "report"]

_WARNED_PROBLEMS = 5
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")  # characters of a question id kept out of file names


def load_saved_run(path: Path, config_path: Path | None) -> SavedRun:
    """The run at ``path``; the first records that could not be read are warnings."""
    run = load_run(path, load_config(config_path) if config_path is not None else None)
    for problem in run.problems[:_WARNED_PROBLEMS]:
        stderr().print(f"warning: skipped {problem}", markup=False, highlight=False)
    if len(run.problems) > _WARNED_PROBLEMS:
        more = plural(len(run.problems) - _WARNED_PROBLEMS, "more record")
        stderr().print(f"warning: skipped {more}", markup=False)
    return run


@click.command("report")
@debug_option
@saved_run_arguments
@max_expanded_size_option
@output_file_option("HTML file to write (default: report.html beside the results).")
@click.option(
    "--worst",
    type=click.IntRange(min=0),
    default=DEFAULT_WORST,
    show_default=True,
    help="How many of the lowest-scoring questions to show in full.",
)
@filter_options
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["html", "csv", "parquet"]),
    default=None,
    help="html: the report; csv or parquet: the per-question results as a table, a row per "
    "question, to results.csv or results.parquet beside the results unless -o is given "
    "(default: the format -o's extension names, else html).",
)
@click.option(
    "--labels",
    "labels_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Human labels (.csv or .jsonl of question_id, metric, value, annotator): the report "
    "gets a section of the judge's agreement with them (without it: the run's reference's "
    "human_labels, if any).",
)
def report(
    results: Path,
    config_path: Path | None,
    output: Path | None,
    worst: int,
    selection: QuestionFilter,
    output_format: str | None,
    labels_path: Path | None = None,
) -> None:
    """Write the HTML report of saved RESULTS: a run's output directory or its results file.

    The report is one self-contained file that opens offline: the run's settings and
    coverage, every metric overall and per template, score charts, step statistics, the
    judge's cost and tokens, and the worst questions with their answers, steps and the
    judge's reasons. One --question alone writes the page of that question instead (its
    steps with why each did not match), to question-ID.html beside the results unless -o
    is given; more, or --template, restrict the report to those questions.

    With --format csv or parquet (or -o FILE.csv, FILE.parquet), the per-question results
    are written as a table instead (docs/outputs.md).

    \b
    Example:
      graphrag-eval report out/
      graphrag-eval report out/results.jsonl -o report.html --worst 50
      graphrag-eval report out/ --question q17
      graphrag-eval report out/ --template t1 --format csv -o t1.csv
    """
    table = _table_format(output_format, output)
    if table == "parquet":
        require_parquet()
    run = load_saved_run(results, config_path)
    if table is None and len(selection.questions) == 1 and not selection.templates:
        _write_page(run, selection.questions[0], output)
        return
    run = selection.restrict_run(run)
    if table is not None:
        _write_table(run, table, output)
        return
    target = output or run.results_path.parent / REPORT_HTML
    remove_stale_temporaries(target.parent, target.name)
    labels = [read_labels_file(labels_path)] if labels_path is not None else None
    write_report(run, target, worst, labels)
    stdout().print(f"report of {plural(len(run.results), 'question')} in {target}")


def _write_page(run: SavedRun, question_id: str, output: Path | None) -> None:
    """The page of one question, to ``output`` or to question-ID.html beside the results."""
    _check_question(run, question_id)
    name = "question-" + _UNSAFE.sub("_", question_id)[:80] + ".html"
    path = output or run.results_path.parent / name
    remove_stale_temporaries(path.parent, path.name)  # what a killed report left
    page = write_question(run, question_id, path)
    stdout().print(f"question {question_id!r} in {page}", markup=False, highlight=False)


def _check_question(run: SavedRun, question_id: str) -> None:
    """:class:`InputError` for a question id the run does not have, with the ids it has that
    begin with it (``c10bbc8``, a long id cut short), then the closest (``tr-0``: did you
    mean tr-01?)."""
    ids = {str(result.question_id) for result in run.results.results}
    QuestionFilter.of([question_id]).check_known(ids, (), file=str(run.results_path))


def _table_format(output_format: str | None, output: Path | None) -> TableFormat | None:
    """The table ``--format`` names, else the one ``-o``'s extension names (``None``: the
    HTML report)."""
    if output_format is not None:
        return TABLE_FORMATS.get(output_format)
    return table_format_of(output) if output is not None else None


def _write_table(run: SavedRun, table: TableFormat, output: Path | None) -> None:
    """The per-question results of ``run`` as a table, to ``output`` or beside them."""
    target = output or run.results_path.parent / TABLE_FILE_NAMES[table]
    remove_stale_temporaries(target.parent, target.name)
    results = run.results.results
    rows = write_table(target, lambda: (to_record(result) for result in results), table)
    stdout().print(f"{plural(rows, 'question')} in {target}", markup=False, highlight=False)
