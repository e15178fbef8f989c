"""Signals and log records on the command line (docs/security.md, "Signals").

SIGTERM, what CI runners and containers send, stops a run as Ctrl-C does: it is handled by
the SIGINT handler of the moment, which ``asyncio.run`` sets to cancel the run so that every
finished item stays written. Only the exit code tells them apart: 130 after Ctrl-C, 143
after SIGTERM.

A few steps must not be cut in half by either (the start of the checkpoint, where
``results.jsonl`` and ``checkpoint.json`` are written one after the other):
:func:`deferred_interrupts` holds the signal back until they are done.

Log records of the ``graphrag_eval`` logger (an item that could not be evaluated, a step rule
that failed) are one line each on standard error: the exception's type and message, without
the traceback unless ``--debug`` is given.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "OneLineRecords",
    "command_signals",
    "deferred_interrupts",
    "interrupt_exit_code",
]

EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM

_terminated = threading.Event()


class OneLineRecords(logging.Filter):
    """Makes a log record that carries an exception one line: its message, then the
    exception's type and first line, without the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            lines = str(error).splitlines()
            detail = f": {lines[0]}" if lines else ""
            record.msg = f"{record.getMessage()}: {type(error).__name__}{detail}"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


_ONE_LINE = OneLineRecords()


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    _terminated.set()
    # Handled as Ctrl-C, wherever the run is: by asyncio's handler during the run (which
    # cancels it), else by Python's (KeyboardInterrupt), even where SIGINT is ignored.
    on_sigint = signal.getsignal(signal.SIGINT)
    if callable(on_sigint):
        on_sigint(signal.SIGINT, frame)
    else:
        raise KeyboardInterrupt


@contextlib.contextmanager
def command_signals(debug: bool) -> Iterator[None]:
    """While a command runs: SIGTERM stops it as Ctrl-C does, and log records are one line
    (tracebacks only with ``debug``). Both are undone at the end (a test runs many commands
    in one process)."""
    _terminated.clear()
    logger = logging.getLogger("graphrag_eval")
    if not debug:
        logger.addFilter(_ONE_LINE)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if main_thread else None
    try:
        yield
    finally:
        if main_thread and previous is not None:
            signal.signal(signal.SIGTERM, previous)
        logger.removeFilter(_ONE_LINE)


def interrupt_exit_code() -> int:
    """The exit code of an interrupted command: 143 after SIGTERM, else 130."""
    return EXIT_TERMINATED if _terminated.is_set() else EXIT_INTERRUPTED


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Hold Ctrl-C (and SIGTERM) back while the block runs; one that arrived meanwhile is
    raised as ``KeyboardInterrupt`` when it ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pending:
        raise KeyboardInterrupt
