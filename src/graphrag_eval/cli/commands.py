"""The ``graphrag-eval`` commands, each imported when it is run or asked for (docs/architecture.md).

Each command's module imports much of the package (pydantic models, Jinja, ...): importing
them all made every command and every ``--help`` pay for all of them. The group's help lists
each command with its summary, kept here (the first paragraph of its help, which is all a
short help reads); tests/cli/test_cli_usage.py checks each against its command.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping, Sequence
from gettext import gettext
from typing import Any

import click

__all__ = ["CONTEXT_SETTINGS", "CommandGroup", "LazyCommands", "import_named"]

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

_MODULES = {
    "evaluate": "graphrag_eval.cli.evaluate",
    "aggregate": "graphrag_eval.cli.aggregate",
    "report": "graphrag_eval.cli.report",
    "compare": "graphrag_eval.cli.compare",
    "validate": "graphrag_eval.cli.validate",
    "refresh": "graphrag_eval.cli.refresh",
    "agreement": "graphrag_eval.cli.agreement",
    "import": "graphrag_eval.cli.import_command",
}
"""Each command's module, in the order the group always had them (``cli.commands``)."""

_NAMES = {"evaluate": "evaluate_command", "import": "import_command"}
"""The name of each command in its module where it is not the command's own."""

SUMMARIES = {
    "aggregate": "Compute aggregates from saved per-question RESULTS: a run's output directory or"
    " its results file (JSONL, JSON or YAML).",
    "agreement": "How well the judge of saved RESULTS agrees with human labels, per metric.",
    "compare": "Compare run B with run A, question by question.",
    "evaluate": "Evaluate RESPONSES against the REFERENCE dataset.",
    "import": "Convert FILE, in FORMAT (openai-chat, openai-responses, langchain, otlp, or auto:"
    " told from the content), to responses of graphrag-eval's own format, one per line in"
    " OUTPUT, as evaluate reads them (docs/integrations.md). Problems are listed as evaluate"
    " would report them; the items they concern are written as far as they could be read.",
    "refresh": "Execute every sparql_query step's query of the REFERENCE dataset against the"
    " knowledge graph (--endpoint, --data or the config's sparql: section) and report how its"
    " stored output drifted: unchanged, changed (rows added and removed), now empty, now"
    " failing, no query. With -o, write the reference with fresh outputs: an output that"
    " changed or became empty is replaced, in the form it had; one whose query now fails keeps"
    " its old output.",
    "report": "Write the HTML report of saved RESULTS: a run's output directory or its results"
    " file.",
    "validate": "Check the REFERENCE dataset, the RESPONSES and the config without calling any"
    " model.",
}
"""The first paragraph of each command's help, as the group's help lists it."""


def import_named(args: Sequence[str]) -> None:
    """Import the module of the command that ``args`` (the group's arguments) name, if any:
    their first word that is not an option (the group's own options take no value)."""
    name = next((word for word in args if not word.startswith("-")), None)
    if name in _MODULES:
        importlib.import_module(_MODULES[name])


class LazyCommands(MutableMapping[str, click.Command]):
    """The group's commands by name: each imported the first time it is looked up."""

    def __init__(self) -> None:
        self._loaded: dict[str, click.Command] = {}
        self._lazy = set(_MODULES)
        """The commands not imported yet."""

    def __getitem__(self, name: str) -> click.Command:
        if name in self._lazy:
            module = importlib.import_module(_MODULES[name])
            command = getattr(module, _NAMES.get(name, name))
            assert isinstance(command, click.Command)
            self._loaded[name] = command
            self._lazy.discard(name)
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._lazy.discard(name)
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        if name in self._lazy:
            self._lazy.discard(name)
        else:
            del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        added = [name for name in self._loaded if name not in _MODULES]
        return iter([*(name for name in _MODULES if name in self), *added])

    def __len__(self) -> int:
        return len(self._lazy) + len(self._loaded)

    def __contains__(self, name: object) -> bool:
        return name in self._lazy or name in self._loaded

    def loaded(self, name: str) -> click.Command:
        """The command ``name`` if it is imported already, else a stand-in with its summary
        (what the group's help shows of it)."""
        command = self._loaded.get(name)
        return click.Command(name, help=SUMMARIES[name]) if command is None else command


class CommandGroup(click.Group):
    """A group whose help lists its commands without importing them."""

    commands: LazyCommands

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, LazyCommands(), **kwargs)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's own, with each command's summary taken from the stand-in of one not imported.
        commands = [(name, self.commands.loaded(name)) for name in self.list_commands(ctx)]
        commands = [(name, command) for name, command in commands if not command.hidden]
        if commands:
            limit = formatter.width - 6 - max(len(name) for name, _ in commands)
            rows = [(name, command.get_short_help_str(limit)) for name, command in commands]
            with formatter.section(gettext("Commands")):
                formatter.write_dl(rows)
