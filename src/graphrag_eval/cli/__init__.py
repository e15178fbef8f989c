"""The ``graphrag-eval`` command line, one module per command (docs/report.md).

User errors (a bad reference, responses or config file) print one line and exit 2;
``--debug`` shows the traceback instead. Exit codes: 0 ok, 1 a CI gate failed
(``--fail-under``, ``--fail-over``, ``--fail-on-regression``), 2 bad input or config, 130 and
143 interrupted (Ctrl-C, SIGTERM).

The output directory itself is written by the library (:mod:`graphrag_eval.rundir`,
:mod:`graphrag_eval.checkpoint`); the commands parse options, call it and print.

The entry points here import the commands (and with them the whole package) with Ctrl-C
guarded: an interrupt while Python is still importing them prints one line and exits 130,
not a traceback (docs/security.md, "Signals"). This module imports nothing of the package
before that guard is in place.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType, ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphrag_eval.cli.app import cli

__all__ = ["answer_correctness_main", "cli", "main"]

STARTING_INTERRUPTED = "interrupted while starting; nothing was written"
"""What Ctrl-C while the commands are being imported prints (exit 130)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``graphrag-eval`` console script."""
    app = _import_commands()
    return 130 if app is None else int(app.main(argv))


def answer_correctness_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the seed's ``answer-correctness`` command."""
    app = _import_commands()
    return 130 if app is None else int(app.answer_correctness_main(argv))


def __getattr__(name: str) -> Any:
    if name == "cli":
        from graphrag_eval.cli.app import cli

        return cli
    raise AttributeError(f"module 'graphrag_eval.cli' has no attribute {name!r}")


class _Interrupted(BaseException):
    """Ctrl-C while the commands were being imported."""


def _interrupted(signum: int, frame: FrameType | None) -> None:
    raise _Interrupted


def _import_commands() -> ModuleType | None:
    """:mod:`graphrag_eval.cli.app`, or None (and one line on stderr) when Ctrl-C came while
    it was being imported. Ctrl-C's own handling is left alone where it is not Python's
    default (ignored in a background job, or a handler of the embedding program)."""
    guarded = (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    )
    try:
        if guarded:
            signal.signal(signal.SIGINT, _interrupted)
        try:
            from graphrag_eval.cli import app
        finally:
            if guarded:
                signal.signal(signal.SIGINT, signal.default_int_handler)
    except _Interrupted:
        sys.stderr.write(STARTING_INTERRUPTED + "\n")
        return None
    return app
