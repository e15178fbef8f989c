"""JSON Lines read line by line, each line bounded (docs/security.md): a line that is not
JSON, not UTF-8, nested too deeply or too long is that line's :class:`BrokenLine`, and the
lines after it are read; where each record is can be kept, to read it again later
(:func:`iter_jsonl_at`, :func:`read_jsonl_at`), so a large responses file is never held."""

from __future__ import annotations

import codecs
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from graphrag_eval.files.bounded import MAX_DOCUMENT_DEPTH, MAX_LINE_BYTES, check_json_depth
from graphrag_eval.files.fast_json import REFUSED, decode_json_line
from graphrag_eval.files.textcheck import UTF16_BOMS, bad_byte, encoding_hint

__all__ = ["BrokenLine", "LineAt", "iter_jsonl", "iter_jsonl_at", "read_jsonl_at"]


_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
_LINE_END = re.compile("\r\n?|\n")
_CHUNK_BYTES = 1024 * 1024  # how much of an over-long line is read at a time, and dropped
_KEPT_OF_LONG_LINE = 64 * 1024  # enough to find its question_id, for the error's item


class BrokenLine(ValueError):
    """A JSONL line (or an item of a responses document) that could not be read; ``text``
    keeps the line for diagnosis, ``question_id`` is the item's when it is known."""

    def __init__(self, message: str, text: str, question_id: str | None = None) -> None:
        super().__init__(message)
        self.text = text
        self.question_id = question_id


def iter_jsonl(
    path: Path, *, max_depth: int = MAX_DOCUMENT_DEPTH, max_line_bytes: int | None = None
) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line; a broken line (not JSON, not
    UTF-8, nested deeper than ``max_depth``, or longer than ``max_line_bytes``, by default
    :data:`~graphrag_eval.files.bounded.MAX_LINE_BYTES`) yields a :class:`BrokenLine` as its value.
    A broken line never stops the iteration: the caller decides what it costs."""
    for number, value, _ in iter_jsonl_at(path, max_depth=max_depth, max_line_bytes=max_line_bytes):
        yield number, value


@dataclass(frozen=True, slots=True)
class LineAt:
    """Where a JSON Lines record is: the bytes of its line in the file (``offset``,
    ``length``), and which of the lines a lone ``\\r`` makes of them (``part``)."""

    offset: int
    length: int
    part: int = 0


def iter_jsonl_at(
    path: Path, *, max_depth: int = MAX_DOCUMENT_DEPTH, max_line_bytes: int | None = None
) -> Iterator[tuple[int, Any, LineAt]]:
    """:func:`iter_jsonl` with where each record is, for :func:`read_jsonl_at` to read it
    again (a responses file is read item by item: each is parsed again when scored)."""
    limit = MAX_LINE_BYTES if max_line_bytes is None else max_line_bytes
    number = 0
    offset = 0
    with path.open("rb") as stream:
        for raw, too_long in _bounded_lines(stream, limit):
            at, offset = offset, stream.tell()
            length = offset - at
            if number == 0 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            # Bad bytes are decoded as lone surrogates (which valid UTF-8 never yields), so one
            # bad line is found, and reported, without losing the lines around it.
            text = raw.decode("utf-8", errors="surrogateescape")
            if too_long:
                number += 1
                message = f"line longer than {_byte_count(limit)}, the limit for one record"
                yield number, BrokenLine(message, _ESCAPED_BYTE.sub("\ufffd", text)), LineAt(at, 0)
                continue
            for part, line in enumerate(_universal_lines(text)):
                number += 1
                if line.strip():
                    yield number, _jsonl_value(number, line, max_depth), LineAt(at, length, part)


def read_jsonl_at(path: Path, number: int, at: LineAt, *, max_depth: int) -> Any:
    """The value of the record :func:`iter_jsonl_at` found at ``at`` (line ``number``),
    read again from the file: the same value, or its :class:`BrokenLine`."""
    descriptor = os.open(path, os.O_RDONLY)  # (no buffered file object for one read)
    try:
        raw = os.pread(descriptor, at.length, at.offset)
    finally:
        os.close(descriptor)
    if at.offset == 0 and raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    lines = _universal_lines(raw.decode("utf-8", errors="surrogateescape"))
    return _jsonl_value(number, lines[at.part], max_depth)


def _bounded_lines(stream: IO[bytes], limit: int) -> Iterator[tuple[bytes, bool]]:
    """Each line of ``stream`` with whether it is longer than ``limit`` bytes (its end not
    counted); of a longer line only the first bytes are kept, the rest is read and dropped."""
    while line := stream.readline(limit + 1):
        if line.endswith(b"\n") or len(line) <= limit:
            yield line, False
            continue
        while (rest := stream.readline(_CHUNK_BYTES)) and not rest.endswith(b"\n"):
            pass
        yield line[:_KEPT_OF_LONG_LINE], True


def _universal_lines(text: str) -> list[str]:
    """The lines of ``text`` as a file opened as text reads them (``\\r``, ``\\n`` or both
    end a line); a line read in binary holds several when it has a lone ``\\r``."""
    if "\r" not in text:
        return [text]
    lines = _LINE_END.split(text)
    return lines[:-1] if lines[-1] == "" else lines


def _jsonl_value(number: int, line: str, max_depth: int) -> Any:
    """The value of one non-blank JSON Lines line, or its :class:`BrokenLine`."""
    # An ASCII line (checked in constant time) has no escaped byte: most lines are searched
    # for none.
    bad = None if line.isascii() else _ESCAPED_BYTE.search(line)
    if bad is not None:
        escaped = ord(bad.group()) - 0xDC00
        message = f"not UTF-8 text at column {bad.start() + 1} {bad_byte(escaped)}"
        raw = line.encode("utf-8", "surrogateescape")
        if number == 1 or not raw.startswith(UTF16_BOMS):  # a UTF-16 mark starts a file only
            message += encoding_hint(raw)
        return BrokenLine(message, _ESCAPED_BYTE.sub("\ufffd", line))
    try:
        value = decode_json_line(line)
        if value is REFUSED:
            value = json.loads(line)
    except json.JSONDecodeError as exc:
        return BrokenLine(f"invalid JSON at column {exc.colno}: {exc.msg}", line)
    except RecursionError:
        return BrokenLine("JSON nested too deeply to read", line)
    too_deep = check_json_depth(value, max_depth)
    return value if too_deep is None else BrokenLine(f"JSON {too_deep}", line)


def _byte_count(size: int) -> str:
    return f"{size // 2**20} MiB" if size >= 2**20 and size % 2**20 == 0 else f"{size:,} bytes"
