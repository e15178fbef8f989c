"""The ``graphrag-eval`` command group and the entry points of both console scripts."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from graphrag_eval.cli.aggregate import aggregate
from graphrag_eval.cli.agreement import agreement
from graphrag_eval.cli.answer_correctness import answer_correctness_command
from graphrag_eval.cli.compare import compare
from graphrag_eval.cli.errors import run_command
from graphrag_eval.cli.evaluate import evaluate_command
from graphrag_eval.cli.import_command import import_command
from graphrag_eval.cli.options import CONTEXT_SETTINGS
from graphrag_eval.cli.refresh import refresh
from graphrag_eval.cli.report import report
from graphrag_eval.cli.validate import validate
from graphrag_eval.version import __version__

__all__ = ["answer_correctness_main", "cli", "main"]


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, prog_name="graphrag-eval")
@click.option("--debug", is_flag=True, help="Show the traceback of an error instead of one line.")
def cli(debug: bool) -> None:
    """Score a question-answering system's responses against a reference dataset.

    \b
    Exit codes:
      0    ok
      1    a CI gate failed (--fail-under, --fail-over, --fail-on-regression,
           --fail-on-drift)
      2    bad input, config or option
      3    evaluation incomplete (a judge unusable, the cost limit reached, or a metric
           that failed on every question: the line printed says how to finish)
      130  interrupted (Ctrl-C)
      143  stopped (SIGTERM)

    \b
    Example:
      graphrag-eval evaluate examples/reference.yaml examples/responses.jsonl -o out/
      graphrag-eval report out/                 # out/report.html again, from the results
      graphrag-eval compare baseline/ out/ --html comparison.html --fail-on-regression
    """


for _command in (evaluate_command, aggregate, report, compare, validate, refresh):
    cli.add_command(_command)
cli.add_command(agreement)
cli.add_command(import_command)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``graphrag-eval`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    return run_command(cli, args, "graphrag-eval")


def answer_correctness_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the seed's ``answer-correctness`` command."""
    args = list(sys.argv[1:] if argv is None else argv)
    return run_command(answer_correctness_command, args, "answer-correctness")
