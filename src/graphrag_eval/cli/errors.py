"""How the command line ends: its exit codes, and a user error as one line on standard error
(``--debug`` shows the traceback instead).

Exit codes: 0 ok, 1 a CI gate failed (``--fail-under``, ``--fail-over``,
``--fail-on-regression``), 2 bad input or config, 3 evaluation incomplete (a judge endpoint
was unusable, the cost limit stopped calls, or a metric failed on every question; the line
printed says how to finish it), 130 interrupted
(Ctrl-C), 143 stopped by SIGTERM (docs/report.md, docs/llm.md, docs/security.md).
"""

from __future__ import annotations

import shlex
import sys
import traceback
from collections.abc import Sequence

import click

from graphrag_eval.cli.signals import (
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    command_signals,
    interrupt_exit_code,
)
from graphrag_eval.cli.workflow_commands import guarded_output
from graphrag_eval.errors import GraphragEvalError

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_INCOMPLETE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "EXIT_THRESHOLD",
    "command_line",
    "exit_on_failures",
    "run_command",
    "usage_line",
]

EXIT_OK, EXIT_THRESHOLD, EXIT_BAD_INPUT, EXIT_INCOMPLETE = 0, 1, 2, 3

# click 8.2 and later raise it for a group run without a command (8.1 prints the help itself).
_NO_ARGS_IS_HELP: tuple[type[click.UsageError], ...] = tuple(
    kind for kind in (getattr(click.exceptions, "NoArgsIsHelpError", None),) if kind is not None
)

_command_line: list[str] = []


def command_line(*extra: str) -> str:
    """The command being run, as a shell line, with ``extra`` arguments not already in it
    (with ``--resume``, without ``--overwrite``, which cannot go with it)."""
    words = list(_command_line) or ["graphrag-eval", *sys.argv[1:]]
    if "--resume" in extra:
        words = [word for word in words if word != "--overwrite"]
    words += [word for word in extra if word not in words]
    return shlex.join(words)


def exit_on_failures(failures: Sequence[str], incomplete: str | None = None) -> None:
    """Exit 1 with one line per failed gate (never wrapped: CI logs are grepped); exit 3
    with the line ``incomplete`` (what is missing) when the run could not do all it was asked,
    whatever the gates say (they judged an incomplete run)."""
    for failure in failures:
        click.echo(f"FAIL {failure}", err=True)
    if incomplete is not None:
        click.echo(incomplete, err=True)
        raise click.exceptions.Exit(EXIT_INCOMPLETE)
    if failures:
        raise click.exceptions.Exit(EXIT_THRESHOLD)


def _fail(message: str, debug: bool, prog_name: str) -> int:
    if debug:
        traceback.print_exc()
    print(f"{prog_name}: error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def usage_line(exc: click.UsageError, prog_name: str) -> str:
    """A usage error (a bad option or argument) as one line, as every other error: what is
    wrong, with its hint (``did you mean ...?``) when it has one, else where the help is;
    never click's usage block."""
    message = " ".join(exc.format_message().split()).rstrip(".")
    if isinstance(exc, click.BadParameter) and not isinstance(exc, click.MissingParameter):
        # click's "Invalid value for '-c' / '--config': ..." as "--config: ...".
        name = exc.param_hint if isinstance(exc.param_hint, str) else _param_name(exc.param)
        if name is not None:
            message = f"{name}: {' '.join(exc.message.split()).rstrip('.')}"
    if "did you mean" in message.lower():
        return f"{prog_name}: error: {message}"
    where = exc.ctx.command_path if exc.ctx is not None else prog_name
    return f"{prog_name}: error: {message}; see '{where} --help'"


def _param_name(param: click.Parameter | None) -> str | None:
    """How a usage error names an option (its long name) or an argument (``REFERENCE``)."""
    if isinstance(param, click.Option) and param.opts:
        return max(param.opts, key=len)
    return param.human_readable_name if param is not None else None


def run_command(command: click.Command, args: list[str], prog_name: str) -> int:
    """Run ``command`` with ``args``; its exit code, with a user error printed as one line."""
    debug = "--debug" in args
    _command_line[:] = [prog_name, *args]
    with command_signals(debug), guarded_output():  # no input's text runs as a CI command
        return _run(command, args, prog_name, debug)


def _run(command: click.Command, args: list[str], prog_name: str, debug: bool) -> int:
    try:
        # Without standalone mode click returns the code of ``ctx.exit(code)`` (and of
        # --help/--version) instead of calling sys.exit; commands themselves return None.
        code = command.main(args=args, prog_name=prog_name, standalone_mode=False)
    except GraphragEvalError as exc:
        return _fail(str(exc), debug, prog_name=prog_name)
    except click.UsageError as exc:
        if isinstance(exc, _NO_ARGS_IS_HELP):  # a command given no arguments: its help
            exc.show()
        else:
            print(usage_line(exc, prog_name), file=sys.stderr)
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.Abort:
        print(f"{prog_name}: aborted", file=sys.stderr)
        return interrupt_exit_code()
    except KeyboardInterrupt:  # after the command, before click could see it
        print(f"{prog_name}: interrupted", file=sys.stderr)
        return interrupt_exit_code()
    except OSError as exc:  # unwritable output directory, full disk, ...
        message = f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": ")
        return _fail(message, debug, prog_name=prog_name)
    return code if isinstance(code, int) else EXIT_OK
