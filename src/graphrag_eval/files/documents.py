"""Reading and writing the YAML, JSON and JSONL documents graphrag-eval works with.

Parse errors become ``ValueError`` with a one-line message that carries the line (and column)
number; callers add the file name and raise their own error kind.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import re
import secrets
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import yaml

from graphrag_eval.files.bounded import (
    MAX_DEPTH,
    Refused,
    check_json_depth,
    document_too_large,
    split_json_items,
)
from graphrag_eval.files.bounded_yaml import load_yaml_bounded
from graphrag_eval.files.fast_json import REFUSED, read_json_bytes
from graphrag_eval.files.jsonl import BrokenLine, iter_jsonl
from graphrag_eval.files.textcheck import (
    binary_problem,
    decode_utf8,
)

__all__ = [
    "JSONL_SUFFIXES",
    "JSON_TEXT_ERRORS",
    "BrokenLine",
    "atomic_stream",
    "decode_utf8",
    "dump_yaml",
    "iter_jsonl",
    "open_for_append",
    "read_bounded",
    "read_document",
    "remove_stale_temporaries",
    "write_json_lines",
    "write_text_atomic",
]

JSONL_SUFFIXES = frozenset({".jsonl", ".ndjson"})

JSON_TEXT_ERRORS = "backslashreplace"
"""How text files are written: a lone surrogate (valid in JSON, not in UTF-8) becomes its
``\\udXXX`` escape, which JSON reads back as the same character."""

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def read_document(path: Path, *, split_items: bool = False) -> Any:
    """Parse a whole YAML or JSON file (chosen by suffix; YAML also reads JSON). A UTF-8 byte
    order mark is accepted; text that is not UTF-8 is a ``ValueError`` naming the line and
    column of the first bad byte.

    The document is bounded (docs/security.md): its size, its nesting depth and what YAML
    aliases may add to it. A document over a limit is a ``ValueError``; with ``split_items``
    (a responses file), each top-level item over a limit becomes a :class:`BrokenLine` and
    the rest is read. A binary file (an image, a spreadsheet) is a ``ValueError`` that
    says so."""
    raw = read_bounded(path)
    binary = binary_problem(raw, "a YAML or JSON text file")
    if binary is not None:
        raise ValueError(binary)
    if path.suffix.lower() == ".json":
        data = read_json_bytes(raw, split_items)
        return _read_json(decode_utf8(raw), split_items) if data is REFUSED else data
    text = decode_utf8(raw)
    try:
        data = load_yaml_bounded(text, _Loader, split_items=split_items, document_bytes=len(raw))
    except RecursionError:
        raise ValueError("nested too deeply to read") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ValueError(f"{where}invalid YAML: {problem}") from None
    return _broken_refused(data)


def read_bounded(path: Path, limit: int | None = None) -> bytes:
    """The bytes of ``path``, refused beyond ``limit`` (by default
    :data:`~graphrag_eval.files.bounded.MAX_DOCUMENT_BYTES`; checked before reading, and
    while reading: a pipe or a growing file)."""
    with path.open("rb", buffering=0) as stream:
        size = os.fstat(stream.fileno()).st_size
        problem = document_too_large(size, limit)
        # A regular file in one piece (one copy of it in memory, never two), then whatever
        # it grew by, or a pipe, by chunks.
        chunks: list[bytes] = [stream.read(size)] if problem is None and size else []
        total = sum(len(chunk) for chunk in chunks)
        while problem is None and (chunk := stream.read(1 << 20)):
            chunks.append(chunk)
            total += len(chunk)
            problem = document_too_large(total, limit)
    if problem is not None:
        raise ValueError(problem)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _read_json(text: str, split_items: bool) -> Any:
    try:
        try:
            data = json.loads(text)
        except RecursionError:
            if not split_items:
                raise
            data = split_json_items(text)  # only the items nested too deeply are refused
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"line {exc.lineno}, column {exc.colno}: invalid JSON: {exc.msg}"
        ) from None
    except RecursionError:
        raise ValueError("nested too deeply to read") from None
    return _bounded_json(data, split_items)


def _bounded_json(data: Any, split_items: bool) -> Any:
    if split_items and isinstance(data, list):
        return [_json_item(item) for item in data]
    if split_items and isinstance(data, dict):
        return {key: _json_item(item) for key, item in data.items()}
    problem = check_json_depth(data)
    if problem is not None:
        raise ValueError(problem)
    return data


def _json_item(item: Any) -> Any:
    if isinstance(item, Refused):
        return _as_broken(item)
    problem = check_json_depth(item, MAX_DEPTH)
    if problem is None:
        return item
    question_id = item.get("question_id") if isinstance(item, dict) else None
    return BrokenLine(problem, "", question_id if isinstance(question_id, str) else None)


def _broken_refused(data: Any) -> Any:
    """A split document with each :class:`~graphrag_eval.files.bounded.Refused` item as a
    :class:`BrokenLine`."""
    if isinstance(data, list):
        return [_as_broken(item) for item in data]
    if isinstance(data, dict):
        return {key: _as_broken(item) for key, item in data.items()}
    return data


def _as_broken(item: Any) -> Any:
    if isinstance(item, Refused):
        return BrokenLine(item.message, item.text, item.question_id)
    return item


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


_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)


def _new_temporary(path: Path) -> tuple[int, Path]:
    """A new file beside ``path`` with a unique name, created exclusively: a file or link
    planted under any name is never opened (docs/security.md)."""
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, _NEW_FILE_FLAGS, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unique temporary name found", str(path))


_TEMPORARY_NAME = re.compile(r"\A\..+\.[0-9a-f]{12}\.tmp\Z", re.DOTALL)
"""The names :func:`_new_temporary` gives: ``.results.jsonl.0123456789ab.tmp``."""


def remove_stale_temporaries(directory: Path, of: str | None = None) -> list[str]:
    """Remove the temporary files that a write into ``directory`` left behind when it was
    killed (``kill -9`` between creating and replacing): only regular files named as
    :func:`write_text_atomic` names them (those of the file named ``of`` only, when given),
    never through a link; the names removed. Call it only while no one writes there (the run
    holds the directory's lock; a command about to write the file ``of``)."""
    removed: list[str] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if not _TEMPORARY_NAME.match(entry.name):
            continue
        if of is not None and entry.name[: len(of) + 2] != f".{of}.":
            continue
        with contextlib.suppress(OSError):
            if stat.S_ISREG(entry.stat(follow_symlinks=False).st_mode):
                Path(entry.path).unlink()
                removed.append(entry.name)
    return removed


def write_text_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that readers never see a half-written file.

    The text goes to a new temporary file (exclusive creation, a unique name) that then
    replaces ``path``: a symbolic link at ``path`` is replaced, never followed. When the
    text cannot be written (a full disk), the temporary file is removed and the
    ``OSError`` names ``path``."""
    path = Path(path)
    fd, tmp = _new_temporary(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors=JSON_TEXT_ERRORS) as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        tmp.replace(path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError) and exc.filename is None:
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise


def open_for_append(path: Path, *, readable: bool = False) -> IO[bytes]:
    """``path``, an existing regular file, open for appending bytes, unbuffered (each write
    is one system call); a symbolic link there is refused (``OSError``), never followed.
    ``readable``: what was written can be read back through the same file (``os.pread``)."""
    flags = (_APPEND_FLAGS & ~os.O_WRONLY) | os.O_RDWR if readable else _APPEND_FLAGS
    return os.fdopen(os.open(path, flags), "ab", buffering=0)


@contextlib.contextmanager
def atomic_stream(path: Path) -> Iterator[IO[bytes]]:
    """Write ``path`` as a stream of bytes that replaces it at the end, as
    :func:`write_text_atomic` does with a whole text: a new temporary file (exclusive
    creation, a unique name) replaces ``path`` when the block ends, and is removed when it
    raises (Ctrl-C included)."""
    path = Path(path)
    fd, tmp = _new_temporary(path)
    stream = io.BufferedWriter(io.FileIO(fd, "wb"), buffer_size=1 << 20)
    try:
        yield stream
        stream.flush()
        os.fsync(stream.fileno())
        stream.close()
        tmp.replace(path)
    except BaseException as exc:
        stream.raw.close()  # what is still buffered is dropped, not written (the disk is full)
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError) and exc.filename is None:
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise
