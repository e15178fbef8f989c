"""Where the command line writes: standard output for results and summaries (or a file with
``-o``), standard error for warnings and progress. Neither wraps lines: a CI log is grepped
line by line. rich is imported when a console is first asked for (docs/benchmarks.md, the
command line's start-up)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from graphrag_eval.cli.guarded_import import guarded_import
from graphrag_eval.files.documents import dump_yaml, remove_stale_temporaries, write_text_atomic

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["LOG_WIDTH", "as_text", "emit", "stderr", "stdout"]

LOG_WIDTH = 1_000
"""Columns of output that is not a terminal (a CI log, a file), whatever COLUMNS says: a
table takes the room it needs and never wraps a metric name or template id."""


def stderr() -> Console:
    """The console for warnings and progress."""
    with guarded_import():
        from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def stdout() -> Console:
    """The console for results and summaries."""
    with guarded_import():
        from rich.console import Console

    # Paths, ids and messages are user text: never read them as rich markup.
    console = Console(highlight=False, soft_wrap=True, markup=False)
    if not console.is_terminal:
        console.width = LOG_WIDTH
    return console


def as_text(data: object, output_format: str) -> str:
    """``data`` as indented JSON (``json``) or block YAML (anything else)."""
    if output_format == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return dump_yaml(data)


def emit(text: str, output: Path | None) -> None:
    """Write ``text`` to the file ``output``, or to standard output without one."""
    if output is None:
        click.echo(text, nl=False)
    else:
        remove_stale_temporaries(output.parent, output.name)  # what a killed run left
        write_text_atomic(output, text)
