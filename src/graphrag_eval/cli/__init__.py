"""The ``graphrag-eval`` command line, one module per command (docs/report.md).

User errors (a bad reference, responses or config file) print one line and exit 2;
``--debug`` shows the traceback instead. Exit codes: 0 ok, 1 a CI gate failed
(``--fail-under``, ``--fail-over``, ``--fail-on-regression``), 2 bad input or config, 3
evaluation incomplete, 130 and 143 interrupted (Ctrl-C, SIGTERM).

The output directory itself is written by the library (:mod:`graphrag_eval.results.write_run`,
:mod:`graphrag_eval.results.checkpoint`); the commands parse options, call it and print.

The entry points here import the command group and the module of the command to run (and
with it most of the package; the other commands are never imported) with Ctrl-C and SIGTERM
guarded: either, while Python is still importing them, prints one line and exits 130
or 143, not a traceback nor a silent death by the signal (docs/security.md, "Signals").
This module imports nothing of the package before that guard is in place.
"""

from __future__ import annotations

import signal
import sys
from types import ModuleType

# typing.TYPE_CHECKING without importing typing (nor threading): the guard comes before the
# package imports anything Python has not loaded already (graphrag_eval/__init__.py too).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import FrameType
    from typing import Any

    from graphrag_eval.cli.app import cli

__all__ = ["answer_correctness_main", "cli", "main"]

STARTING_INTERRUPTED = "interrupted while starting; nothing was written"
"""What Ctrl-C or SIGTERM while the commands are being imported prints (exit 130 or 143)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``graphrag-eval`` console script."""
    app = _import_commands("graphrag-eval", argv)
    return int(app.main(argv)) if isinstance(app, ModuleType) else app


def answer_correctness_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the seed's ``answer-correctness`` command."""
    app = _import_commands("answer-correctness", argv)
    return int(app.answer_correctness_main(argv)) if isinstance(app, ModuleType) else app


def __getattr__(name: str) -> Any:
    if name == "cli":
        from graphrag_eval.cli.app import cli

        return cli
    raise AttributeError(f"module 'graphrag_eval.cli' has no attribute {name!r}")


class _Interrupted(BaseException):
    """Ctrl-C or SIGTERM while the commands were being imported."""

    def __init__(self, exit_code: int) -> None:
        super().__init__(exit_code)
        self.exit_code = exit_code


_received: list[int] = []
"""The exit code of each signal received while the commands were imported: a module being
imported may swallow the exception (a bare ``except``, a ``__del__``), not the signal."""


def _interrupted(signum: int, frame: FrameType | None) -> None:
    # 128 + the signal: 130 after Ctrl-C, 143 after SIGTERM (as cli/signals.py exits).
    _received.append(128 + signum)
    raise _Interrupted(128 + signum)


def _unraisable(hook: Callable[[Any], object]) -> Callable[[Any], object]:
    """``hook`` (:data:`sys.unraisablehook`) silent about an interruption it was given."""

    def silent(unraisable: Any) -> object:
        if isinstance(unraisable.exc_value, _Interrupted):
            return None
        return hook(unraisable)

    return silent


def _import_commands(script: str, argv: Sequence[str] | None) -> ModuleType | int:
    """:mod:`graphrag_eval.cli.app`, with the module of the command that ``script`` runs with
    ``argv`` (the others are imported when they run, if ever), or the exit code (and one line
    on stderr) when Ctrl-C (130) or SIGTERM (143) came while they were being imported. A
    signal's handling is left alone where it is not the default (Ctrl-C ignored in a
    background job, a handler of the embedding program)."""
    guarded: list[tuple[signal.Signals, Any]] = []
    for signum, default in (
        (signal.SIGINT, signal.default_int_handler),
        (signal.SIGTERM, signal.SIG_DFL),
    ):
        if signal.getsignal(signum) is default:
            guarded.append((signum, default))
    _received.clear()
    try:
        try:
            for signum, _ in guarded:
                signal.signal(signum, _interrupted)
        except ValueError:  # not the main thread, whose signals these are: left alone
            guarded = []
        hook, sys.unraisablehook = sys.unraisablehook, _unraisable(sys.unraisablehook)
        try:
            from graphrag_eval.cli import app

            app.import_command_of(script, sys.argv[1:] if argv is None else argv)
        except Exception:
            if not _received:
                raise
            # A module that swallowed the interruption failed otherwise: it was interrupted.
        finally:
            for signum, default in guarded:
                signal.signal(signum, default)
            sys.unraisablehook = hook
        if _received:  # the import went on: a module swallowed the interruption
            raise _Interrupted(_received[0])
    except _Interrupted as interrupted:
        sys.stderr.write(STARTING_INTERRUPTED + "\n")
        return interrupted.exit_code
    return app
