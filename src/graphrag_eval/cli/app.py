"""The ``graphrag-eval`` command group and the entry points of both console scripts.

The commands are imported when they run (or their help is asked for), not with the group:
``graphrag-eval --help`` and each command pay for their own imports only (cli/commands.py).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from graphrag_eval.cli.commands import CONTEXT_SETTINGS, CommandGroup, import_named
from graphrag_eval.cli.errors import run_command
from graphrag_eval.version import __version__

__all__ = ["answer_correctness_main", "cli", "import_command_of", "main"]


@click.group(cls=CommandGroup, context_settings=CONTEXT_SETTINGS)
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


def import_command_of(script: str, args: Sequence[str]) -> None:
    """Import the module of the command that ``script`` (``graphrag-eval`` or
    ``answer-correctness``) runs with ``args``, if any: the entry points do it while Ctrl-C and
    SIGTERM are guarded (cli/__init__.py)."""
    if script == "answer-correctness":
        import graphrag_eval.cli.answer_correctness  # noqa: F401
    else:
        import_named(args)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``graphrag-eval`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    return run_command(cli, args, "graphrag-eval")


def answer_correctness_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the seed's ``answer-correctness`` command."""
    from graphrag_eval.cli.answer_correctness import answer_correctness_command

    args = list(sys.argv[1:] if argv is None else argv)
    return run_command(answer_correctness_command, args, "answer-correctness")
