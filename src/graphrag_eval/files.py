"""Reading and writing the YAML, JSON and JSONL documents graphrag-eval works with.

Parse errors become ``ValueError`` with a one-line message that carries the line (and column)
number; callers add the file name and raise their own error kind.
"""

from __future__ import annotations

import codecs
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import yaml

__all__ = [
    "JSONL_SUFFIXES",
    "JSON_TEXT_ERRORS",
    "BrokenLine",
    "decode_utf8",
    "dump_yaml",
    "iter_jsonl",
    "read_document",
    "write_json_lines",
    "write_text_atomic",
]

JSONL_SUFFIXES = frozenset({".jsonl", ".ndjson"})

JSON_TEXT_ERRORS = "backslashreplace"
"""How text files are written: a lone surrogate (valid in JSON, not in UTF-8) becomes its
``\\udXXX`` escape, which JSON reads back as the same character."""

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def read_document(path: Path) -> Any:
    """Parse a whole YAML or JSON file (chosen by suffix; YAML also reads JSON). A UTF-8 byte
    order mark is accepted; text that is not UTF-8 is a ``ValueError`` naming the line and
    column of the first bad byte."""
    text = decode_utf8(path.read_bytes())
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"line {exc.lineno}, column {exc.colno}: invalid JSON: {exc.msg}"
            ) from None
        except RecursionError:
            raise ValueError("nested too deeply to read") from None
    try:
        return yaml.load(text, Loader=_Loader)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ValueError(f"{where}invalid YAML: {problem}") from None


_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def _bad_byte(value: int) -> str:
    return f"(byte 0x{value:02x})"


def _utf16_hint(data: bytes) -> str:
    return "; the file looks UTF-16: save it as UTF-8" if data.startswith(_UTF16_BOMS) else ""


def decode_utf8(data: bytes) -> str:
    """``data`` as UTF-8 text (a byte order mark is dropped). Text that is not UTF-8 is a
    one-line ``ValueError`` naming the line and column of the first bad byte, never a codec
    message with a byte offset."""
    try:
        # Not the utf-8-sig codec: its error positions do not count the byte order mark.
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        before = data[: exc.start].removeprefix(codecs.BOM_UTF8)
        line_start = before.rfind(b"\n") + 1
        line = before.count(b"\n") + 1
        column = len(before[line_start:].decode("utf-8")) + 1
        raise ValueError(
            f"line {line}, column {column}: not UTF-8 text "
            f"{_bad_byte(data[exc.start])}{_utf16_hint(data)}"
        ) from None


class BrokenLine(ValueError):
    """A JSONL line that is not valid JSON; ``text`` keeps the line for diagnosis."""

    def __init__(self, message: str, text: str) -> None:
        super().__init__(message)
        self.text = text


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line; a broken line (not JSON, or not
    UTF-8) yields a :class:`BrokenLine` as its value. A broken line never stops the iteration:
    the caller decides what it costs."""
    # Bad bytes are decoded as lone surrogates (which valid UTF-8 never yields), so one bad
    # line is found, and reported, without losing the lines around it.
    with path.open(encoding="utf-8-sig", errors="surrogateescape") as stream:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            bad = _ESCAPED_BYTE.search(line)
            if bad is not None:
                escaped = ord(bad.group()) - 0xDC00
                message = f"not UTF-8 text at column {bad.start() + 1} {_bad_byte(escaped)}"
                if number == 1 and bad.start() == 0:
                    message += _utf16_hint(line.encode("utf-8", "surrogateescape"))
                yield number, BrokenLine(message, _ESCAPED_BYTE.sub("\ufffd", line))
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                yield number, BrokenLine(f"invalid JSON at column {exc.colno}: {exc.msg}", line)
            except RecursionError:
                yield number, BrokenLine("JSON nested too deeply to read", line)


class _BlockStyleDumper(_Dumper):  # type: ignore[misc,valid-type]
    """Writes multi-line strings as ``|`` blocks, as the seed's examples show them."""


class _PureBlockStyleDumper(yaml.SafeDumper):
    """The same in pure Python, which escapes what libyaml cannot encode (lone surrogates)."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value and not any(ch in value for ch in "\r\t") and value == value.rstrip(" "):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_BlockStyleDumper.add_representer(str, _represent_str)
_PureBlockStyleDumper.add_representer(str, _represent_str)


def dump_yaml(data: Any) -> str:
    """``data`` as block-style YAML, keeping key order and unicode."""
    options: dict[str, Any] = {
        "sort_keys": False,
        "allow_unicode": True,
        "default_flow_style": False,
        "width": 100,
    }
    try:
        text = yaml.dump(data, Dumper=_BlockStyleDumper, **options)
    except UnicodeEncodeError:  # a lone surrogate from a truncated emoji, say
        text = yaml.dump(data, Dumper=_PureBlockStyleDumper, **options)
    return str(text)


def write_json_lines(stream: IO[str], records: Iterable[Mapping[str, Any]]) -> None:
    """Write one compact JSON document per line."""
    for record in records:
        stream.write(json.dumps(record, ensure_ascii=False))
        stream.write("\n")


def write_text_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that readers never see a half-written file."""
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8", errors=JSON_TEXT_ERRORS) as stream:
        stream.write(text)
        stream.flush()
        os.fsync(stream.fileno())
    tmp.replace(path)
