"""``results.jsonl`` of a run in progress (:class:`ResultsLog`): each finished item appended
at once, and read back by offset so that the results can be written in reference order
without holding them (:mod:`graphrag_eval.results.checkpoint`, docs/llm.md "Resume")."""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from graphrag_eval.files.documents import JSON_TEXT_ERRORS
from graphrag_eval.results.write_run import results_jsonl_text

__all__ = ["ResultsLog"]


@dataclass(slots=True)
class ResultsLog:
    """``results.jsonl`` of a run in progress, open for appending."""

    path: Path
    stream: IO[bytes]
    """Unbuffered: nothing is left to flush when the disk is full."""
    kept: dict[str, dict[str, Any]]
    """The items of the earlier run it started with, by question id."""
    end: int = 0
    """The size of the file: where the next line goes."""
    lines: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Where the line of each item appended is (offset, length), until :meth:`line` takes it."""

    def append(self, result: Mapping[str, Any]) -> None:
        """Write one finished item at once (one unbuffered write): a crash after this loses
        nothing. An ``OSError`` (a full disk) names the file; a line cut short by it is
        dropped on ``--resume``."""
        line = results_jsonl_text([result]).encode("utf-8", JSON_TEXT_ERRORS)
        view = memoryview(line)
        try:
            while view:  # a write cut short by a full disk raises on the next
                written = self.stream.write(view)
                if not written:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                view = view[written:]
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(self.path)) from None
        question_id = result.get("question_id")
        if isinstance(question_id, str):
            self.lines[question_id] = (self.end, len(line))
        self.end += len(line)

    def line(self, question_id: str) -> bytes | None:
        """The line appended for ``question_id`` (its bytes as written, read back from the
        file), once; ``None`` when none was (a kept item)."""
        where = self.lines.pop(question_id, None)
        if where is None:
            return None
        offset, length = where
        data = os.pread(self.stream.fileno(), length, offset)
        if len(data) != length:
            raise OSError(
                errno.EIO, "the results file changed while the run wrote it", str(self.path)
            )
        return data
