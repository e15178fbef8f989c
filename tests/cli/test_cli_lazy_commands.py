"""The command group as a library sees it (``from graphrag_eval.cli import cli``): its
commands, imported when looked up (cli/commands.py), in the order they always had."""

from __future__ import annotations

import click

from graphrag_eval.cli import cli
from graphrag_eval.cli.commands import LazyCommands

ADDED_ORDER = ["evaluate", "aggregate", "report", "compare", "validate", "refresh", "agreement"]


def test_the_commands_are_listed_in_the_order_they_were_added() -> None:
    """``cli.commands`` iterates as the dict of click's ``add_command`` did (evaluate first);
    the lazy mapping had made it alphabetical. The help and completion sort them anyway."""
    assert list(LazyCommands()) == [*ADDED_ORDER, "import"]
    assert list(cli.commands) == [*ADDED_ORDER, "import"]
    assert cli.list_commands(click.Context(cli)) == sorted([*ADDED_ORDER, "import"])
