"""No text from the inputs runs as a GitHub Actions workflow command (docs/security.md,
"Workflow commands").

Under GitHub Actions (``GITHUB_ACTIONS=true``) the runner reads every line a step prints, on
standard output and standard error, and runs the lines that begin, after blanks, with ``::``
(``::error::``, ``::add-mask::``, ``::set-output name=...::``). A template id or a question
id with a line break, printed in a table, would start such a line. While a command runs,
:func:`guarded_output` puts a filter in front of ``sys.stdout`` and ``sys.stderr`` that
writes a ``\\`` before the ``::`` of such a line (``\\::error::...``, shown as it is, run as
nothing); the annotations graphrag-eval means to print go through :func:`write_command`.
A stream redirected to a regular file, which the runner does not read, is left as it is;
outside GitHub Actions nothing changes.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["CommandFilter", "guarded_output", "write_command"]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # where the runner's reader ends a line
_COMMAND = re.compile(r"^(\s*)::")


class CommandFilter:
    """A text stream in front of ``stream`` that neutralises a line beginning (after
    blanks) with ``::``; the start of a line that may still become one is held back until
    it cannot (or until :meth:`close`)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._pending = ""  # the start of a line: blanks, maybe one ':'
        self._at_line_start = True

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # click asks whether the stream takes bytes
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        data, self._pending = self._pending + text, ""
        parts = _LINE_BREAK.split(data)
        breaks = _LINE_BREAK.findall(data)
        for part, line_break in zip(parts, breaks, strict=False):
            self.stream.write(self._safe(part) + line_break)
            self._at_line_start = True
        last = parts[-1]
        if self._at_line_start and last.lstrip() in ("", ":"):
            self._pending = last  # it may yet begin a command
        elif last:
            self.stream.write(self._safe(last))
            self._at_line_start = False
        return len(text)

    def _safe(self, part: str) -> str:
        if not self._at_line_start:
            return part
        return _COMMAND.sub(lambda match: match.group(1) + "\\::", part, count=1)

    def write_command(self, line: str) -> None:
        """Write ``line``, a workflow command of ours, on a line of its own, unfiltered."""
        if self._pending or not self._at_line_start:
            self.stream.write(self._pending + "\n")
            self._pending, self._at_line_start = "", True
        self.stream.write(line + "\n")

    def close(self) -> None:
        """Write what was held back (the stream itself stays open)."""
        if self._pending:
            self.stream.write(self._pending)
            self._pending, self._at_line_start = "", False
        self.stream.flush()

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    @property
    def encoding(self) -> str:
        return str(getattr(self.stream, "encoding", None) or "utf-8")

    @property
    def errors(self) -> str | None:
        return getattr(self.stream, "errors", None)

    @property
    def closed(self) -> bool:
        return bool(getattr(self.stream, "closed", False))


def write_command(stream: TextIO | Any, line: str) -> None:
    """Write the workflow command ``line`` (already escaped) to ``stream``, through its
    filter's bypass when it has one."""
    if isinstance(stream, CommandFilter):
        stream.write_command(line)
    else:
        stream.write(line + "\n")
    stream.flush()


@contextmanager
def guarded_output() -> Iterator[None]:
    """Standard output and standard error filtered while the block runs, under GitHub
    Actions only."""
    if os.environ.get("GITHUB_ACTIONS") != "true" or isinstance(sys.stdout, CommandFilter):
        yield
        return
    stdout, stderr = sys.stdout, sys.stderr
    filters = [CommandFilter(stream) for stream in (stdout, stderr) if _read_by_runner(stream)]
    if _read_by_runner(stdout):
        sys.stdout = filters[0]
    if _read_by_runner(stderr):
        sys.stderr = filters[-1]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = stdout, stderr
        for each in filters:
            each.close()


def _read_by_runner(stream: TextIO) -> bool:
    """Whether the runner may read what ``stream`` gets: anything but a regular file (a
    ``> results.yaml`` keeps its data as written)."""
    try:
        return not stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (AttributeError, OSError, ValueError):  # no file descriptor: a pipe's stand-in
        return True
