"""What starting the command line imports (docs/benchmarks.md): the group imports no command,
the entry point imports the command it runs while Ctrl-C and SIGTERM are guarded, and numpy
comes only with compare's run."""

from __future__ import annotations

import subprocess
import sys

COMMAND_MODULES = {
    "graphrag_eval.cli.aggregate",
    "graphrag_eval.cli.agreement",
    "graphrag_eval.cli.answer_correctness",
    "graphrag_eval.cli.compare",
    "graphrag_eval.cli.evaluate",
    "graphrag_eval.cli.import_command",
    "graphrag_eval.cli.refresh",
    "graphrag_eval.cli.report",
    "graphrag_eval.cli.validate",
}
HEAVY = {"yaml", "pydantic", "jinja2", "rich", "numpy"}


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter has imported after running ``code``."""
    printed = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(printed.split())


def test_the_group_and_its_help_import_no_command() -> None:
    modules = _modules_after("from graphrag_eval.cli import main\nmain(['--help'])")
    assert "graphrag_eval.cli.app" in modules
    assert modules & (COMMAND_MODULES | HEAVY) == set()


def test_the_entry_point_imports_the_command_it_runs_under_the_guard() -> None:
    """The module of the command named (after the group's options) is imported with the
    signals guarded, and PyYAML with it: tests/test_security_processes.py's signals during
    PyYAML's import are signals during the import of the command's module."""
    start = "from graphrag_eval.cli import _import_commands\n"
    modules = _modules_after(f"{start}_import_commands('graphrag-eval', ['--debug', 'evaluate'])")
    assert {"graphrag_eval.cli.evaluate", "yaml"} <= modules
    assert modules & COMMAND_MODULES == {"graphrag_eval.cli.evaluate"}
    modules = _modules_after(f"{start}_import_commands('answer-correctness', ['x.tsv'])")
    assert modules & COMMAND_MODULES == {"graphrag_eval.cli.answer_correctness"}
    modules = _modules_after(f"{start}_import_commands('graphrag-eval', ['--version'])")
    assert modules & (COMMAND_MODULES | HEAVY) == set()


def test_the_commands_import_without_numpy() -> None:
    # Only compare's run needs numpy, not any command's module.
    modules = _modules_after(
        "from graphrag_eval.cli.app import cli\n"
        "for name in list(cli.commands): cli.commands[name]\n"
        "import graphrag_eval.cli.answer_correctness"
    )
    assert modules >= COMMAND_MODULES
    assert "numpy" not in modules
    assert "graphrag_eval.comparison.compare" not in modules


def test_compare_still_imports_what_it_needs() -> None:
    modules = _modules_after("from graphrag_eval.comparison.compare import compare_results")
    assert "numpy" in modules


def test_listing_the_commands_imports_none() -> None:
    modules = _modules_after(
        "from graphrag_eval.cli.commands import LazyCommands\n"
        "commands = LazyCommands()\n"
        "assert sorted(commands)[:2] == ['aggregate', 'agreement'] and len(commands) == 8\n"
        "assert 'evaluate' in commands and commands.get('evaluat') is None\n"
    )
    assert modules & (COMMAND_MODULES | HEAVY) == set()
