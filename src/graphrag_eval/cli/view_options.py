"""The options of what a command keeps and writes of a run: ``--question``/``--template``
(evaluate, report, compare, aggregate: docs/outputs.md, "Restricting a run or a view") and
``evaluate``'s ``--format`` of the per-question results (docs/outputs.md, "Tables: CSV and
Parquet")."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import click

from graphrag_eval.cli.options import Decorator
from graphrag_eval.results.export import require_parquet
from graphrag_eval.results.selection import QuestionFilter

__all__ = ["filter_options", "results_format_option"]


_FILTER_VERBS = {
    "evaluate": "Evaluate only",
    "report": "Show only",
    "compare": "Compare only",
    "aggregate": "Aggregate only",
}
_FILTER_NOTES = {
    "evaluate": "; the responses of other questions are ignored",
    "report": "; one --question alone writes that question's page instead",
}


class _FilterOption(click.Option):
    """``--question``/``--template``, whose help says what the filter does on the command."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        command = ctx.info_name or ""
        verb = _FILTER_VERBS.get(command, "Keep only")
        if self.name == "template_ids":
            self.help = f"{verb} the questions of this template (repeatable; adds to --question)."
        else:
            note = _FILTER_NOTES.get(command, "")
            self.help = f"{verb} the question with this id (repeatable{note})."
        return super().get_help_record(ctx)


def filter_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """``--question ID`` and ``--template ID`` (repeatable; a question is kept when either
    names it: docs/outputs.md, "Restricting a run or a view"), given to the command as one
    ``selection``, a :class:`QuestionFilter`."""

    @functools.wraps(function)
    def command(
        *args: Any, question_ids: Sequence[str] = (), template_ids: Sequence[str] = (), **kw: Any
    ) -> Any:
        return function(*args, selection=QuestionFilter.of(question_ids, template_ids), **kw)

    decorated: Callable[..., Any] = command
    for name, flag in (("template_ids", "--template"), ("question_ids", "--question")):
        option = click.option(flag, name, cls=_FilterOption, multiple=True, metavar="ID")
        decorated = option(decorated)
    return decorated


def _check_table_format(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if value == "parquet":
        require_parquet()  # before the run, not after it
    return value


results_format_option: Decorator = click.option(
    "--format",
    "results_format",
    type=click.Choice(["jsonl", "json", "yaml", "csv", "parquet"]),
    default="jsonl",
    show_default=True,
    callback=_check_table_format,
    help="Format of the per-question results: results.jsonl is always written (it is the "
    "checkpoint); json, yaml, csv or parquet also writes results.json, .yaml, or a table, "
    ".csv or .parquet (a row per question; parquet: the parquet extra).",
)
