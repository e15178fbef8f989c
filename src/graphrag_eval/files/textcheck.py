"""Whether an input file is text graphrag-eval can read: UTF-8, and not a binary file; when it
is not, a message that says what it most likely is and what to do (docs/inputs.md)."""

from __future__ import annotations

import codecs
import re

__all__ = ["UTF16_BOMS", "bad_byte", "binary_problem", "decode_utf8", "encoding_hint"]

UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_HIGH_RUNS = re.compile(rb"[\x80-\xff]+")
_SAMPLE_BYTES = 64 * 1024  # of the text around the first bad byte, to guess the encoding
_BINARY_SAMPLE = 8 * 1024
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF-", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive: an Excel or Word file?"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"\x7fELF", "a program"),
)


def bad_byte(value: int) -> str:
    return f"(byte 0x{value:02x})"


def encoding_hint(data: bytes) -> str:
    """What to do about ``data`` (text, or its start) that is not UTF-8, naming the
    encoding it most likely is in: ``; the file looks UTF-16: ...``. Single bytes over 0x7f
    between ASCII characters (``caf\\xe9``) are Windows-1252 or Latin-1 (what Excel and
    older Windows editors write); runs of them, some other encoding."""
    if data.startswith(UTF16_BOMS):
        return "; the file looks UTF-16: save it as UTF-8"
    runs = [len(run) for run in _HIGH_RUNS.findall(data[:_SAMPLE_BYTES])]
    if runs and sum(1 for length in runs if length == 1) >= 0.8 * len(runs):
        return "; it looks like Windows-1252/Latin-1: re-save the file as UTF-8"
    return "; re-save the file as UTF-8"


def decode_utf8(data: bytes) -> str:
    """``data`` as UTF-8 text (a byte order mark is dropped). Text that is not UTF-8 is a
    one-line ``ValueError`` naming the line and column of the first bad byte and the
    encoding it most likely is in, never a codec message with a byte offset."""
    try:
        # Not the utf-8-sig codec: its error positions do not count the byte order mark.
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        before = data[: exc.start].removeprefix(codecs.BOM_UTF8)
        line_start = before.rfind(b"\n") + 1
        line = before.count(b"\n") + 1
        column = len(before[line_start:].decode("utf-8")) + 1
        around = data[max(0, exc.start - _SAMPLE_BYTES // 2) :].removeprefix(codecs.BOM_UTF8)
        hint = encoding_hint(data if data.startswith(UTF16_BOMS) else around)
        raise ValueError(
            f"line {line}, column {column}: not UTF-8 text {bad_byte(data[exc.start])}{hint}"
        ) from None


def binary_problem(head: bytes, expected: str) -> str | None:
    """The message for a file starting with ``head`` that is binary (an image, an archive, a
    database: its signature, or a NUL byte in its first kilobytes), not the ``expected``
    text; ``None`` for anything else."""
    kind = next((name for magic, name in _MAGIC if head.startswith(magic)), None)
    head = head[:_BINARY_SAMPLE]
    if kind is None and (head.startswith(UTF16_BOMS) or b"\x00" not in head):
        return None
    if kind is None and max(head[0::2].count(0), head[1::2].count(0)) > 0.4 * len(head):
        return "the file looks UTF-16 (every other byte is NUL): save it as UTF-8"
    return f"a binary file ({kind or 'it holds NUL bytes'}), not {expected}"
