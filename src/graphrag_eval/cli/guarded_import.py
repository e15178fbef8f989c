"""Ctrl-C and SIGTERM never lost while a command imports a module it needs late (rich, the
report writer: docs/security.md, "Signals").

A command imports some modules when it first uses them (docs/architecture.md). A module being
imported may swallow the exception a signal raised in it (a bare ``except``, a ``__del__``),
and the run then went on as if the signal had never come (exit 0). Within
:class:`guarded_import` a signal interrupts the import and is recorded; at its end the
signal is raised again, to the handlers of the moment, whether the import went on or not:
the command stops as it would anywhere else (130 or 143), in one line. The entry points guard
the start-up imports the same way (cli/__init__.py).
"""

from __future__ import annotations

import signal
import sys
from types import FrameType, TracebackType
from typing import Any

__all__ = ["guarded_import"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _Interrupted(BaseException):
    """A signal, while a module was being imported."""


class guarded_import:
    """Around a late import: a signal that arrives meanwhile is raised again at the end (one
    whose handling is Python's default or ignored is left alone)."""

    def __init__(self) -> None:
        self._received: list[int] = []
        self._previous: list[tuple[int, Any]] = []
        self._hook: Any = None

    def __enter__(self) -> None:
        self._received.clear()
        try:
            for signum in _SIGNALS:
                previous = signal.getsignal(signum)
                if callable(previous):
                    signal.signal(signum, self._interrupted)
                    self._previous.append((signum, previous))
        except ValueError:  # not the main thread, whose signals these are: left alone
            self._previous = []
        self._hook, sys.unraisablehook = sys.unraisablehook, self._unraisable

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for signum, previous in self._previous:
            signal.signal(signum, previous)
        self._previous = []
        sys.unraisablehook = self._hook
        if not self._received:
            return
        # The import was interrupted, or a module swallowed the interruption: the signal is
        # handled now, as it would have been without the guard.
        signal.raise_signal(self._received[0])
        if error is not None:  # the handler went on (asyncio's): the import did not
            raise KeyboardInterrupt from None

    def _interrupted(self, signum: int, frame: FrameType | None) -> None:
        self._received.append(signum)
        raise _Interrupted(signum)

    def _unraisable(self, unraisable: Any) -> object:
        if isinstance(unraisable.exc_value, _Interrupted):
            return None
        return self._hook(unraisable)
