"""Limits on the documents graphrag-eval reads, so that a hostile or broken input file costs
an error, never the machine (docs/security.md, "YAML and JSON bombs").

The whole file must be under :data:`MAX_DOCUMENT_BYTES`; a parsed JSON value is measured for
depth. A YAML document is measured before anything is built from it
(:mod:`graphrag_eval.files.bounded_yaml`): its depth with aliases followed, and its *expanded
size*, what YAML aliases add to it (the text of each scalar counted each time an alias
repeats it, and :data:`NODE_BYTES` for each node), which must stay under
:func:`expanded_size_limit`: ten times the file's size, at least
:data:`EXPANDED_SIZE_FLOOR` and at most :data:`EXPANDED_SIZE_CAP`, unless the user sets
another limit (``--max-expanded-size``, or :data:`EXPANDED_SIZE_ENV`).

The limits are generous for real datasets (anchors that ``yaml.safe_dump`` writes for steps
shared between questions) and stop the classic "billion laughs" (ten levels of nine aliases
each) and one large string repeated by thousands of aliases before they take memory or time.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

__all__ = [
    "EXPANDED_SIZE_CAP",
    "EXPANDED_SIZE_ENV",
    "EXPANDED_SIZE_FLOOR",
    "EXPANDED_SIZE_RATIO",
    "MAX_COMPACT_DOCUMENT_BYTES",
    "MAX_DEPTH",
    "MAX_DOCUMENT_BYTES",
    "MAX_DOCUMENT_DEPTH",
    "MAX_LINE_BYTES",
    "NODE_BYTES",
    "Refused",
    "check_json_depth",
    "document_too_large",
    "expanded_size_limit",
    "format_size",
    "json_depth",
    "max_expanded_size",
    "parse_size",
    "split_json_items",
    "too_deep",
]

MAX_DOCUMENT_BYTES = 256 * 1024 * 1024
"""The largest YAML or JSON document read whole (JSON Lines are read line by line)."""
MAX_COMPACT_DOCUMENT_BYTES = 1024 * 1024 * 1024
"""The largest JSON reference ``evaluate`` keeps compact (:mod:`graphrag_eval.inputs.compact`):
it is held as its bytes, each question decoded alone when validated and when scored, so its
memory is about its size, not the several times that a whole parsed document takes; a
reference that cannot be read that way is read whole, within :data:`MAX_DOCUMENT_BYTES`."""
MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest JSON Lines line read (without its line end): a longer line is that line's
error, read no further than its first bytes, and the lines after it are read."""
MAX_DEPTH = 100
"""The deepest nesting of lists and mappings in one response (an item of a responses file,
or one JSON Lines record)."""
MAX_DOCUMENT_DEPTH = 200
"""The deepest nesting in a whole document (a config, a reference, saved results)."""
NODE_BYTES = 16
"""What each node (a scalar, a list, a mapping) counts in a YAML document's expanded size,
besides a scalar's text: a bomb of empty lists is a bomb too."""
EXPANDED_SIZE_RATIO = 10
"""What YAML aliases may add to a document, as a multiple of the file's size ..."""
EXPANDED_SIZE_FLOOR = 64 * 2**20
"""... but at least this many bytes (a small file may share a few large outputs) ..."""
EXPANDED_SIZE_CAP = 512 * 2**20
"""... and at most this many (the memory and output a run of the document costs grow with
it), unless the user sets the limit."""
EXPANDED_SIZE_ENV = "GRAPHRAG_EVAL_MAX_EXPANDED_SIZE"
"""The environment variable that sets the limit on what YAML aliases add (a size such as
``2G``), like the command line's ``--max-expanded-size``."""

_chosen_limit: ContextVar[int | None] = ContextVar("graphrag_eval_max_expanded_size", default=None)
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(?:([kmgt])(?:i?b)?|b|bytes?)?\s*", re.IGNORECASE)
_UNITS = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def parse_size(text: str) -> int:
    """A size in bytes from ``text``: a number of bytes, or with a unit ``K``, ``M``, ``G``
    (``KiB``, ``MB``, ...: all binary, ``1M`` is 1,048,576 bytes). A ``ValueError`` for
    anything else, or for a size under one byte."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not a size (a number of bytes, or with K, M or G: 2G)")
    size = int(float(match.group(1)) * _UNITS.get((match.group(2) or "").lower(), 1))
    if size < 1:
        raise ValueError(f"{text!r} is not a size of at least one byte")
    return size


def format_size(size: int) -> str:
    """``size`` bytes for a message: ``812 bytes``, ``12.5 KiB``, ``64 MiB``, ``4.66 GiB``."""
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= factor:
            value = size / factor
            return f"{value:,.0f} {unit}" if value == int(value) else f"{value:,.2f} {unit}"
    return f"{size:,} bytes"


@contextlib.contextmanager
def max_expanded_size(size: int) -> Iterator[None]:
    """Within the block, YAML aliases may add up to ``size`` bytes to any document read,
    whatever its size (the command line's ``--max-expanded-size``)."""
    token = _chosen_limit.set(size)
    try:
        yield
    finally:
        _chosen_limit.reset(token)


def expanded_size_limit(document_bytes: int) -> int:
    """How many bytes YAML aliases may add to a document of ``document_bytes``: the limit
    set by :func:`max_expanded_size`, else by :data:`EXPANDED_SIZE_ENV`, else
    :data:`EXPANDED_SIZE_RATIO` times the document's size, at least
    :data:`EXPANDED_SIZE_FLOOR` and at most :data:`EXPANDED_SIZE_CAP`."""
    chosen = _chosen_limit.get()
    if chosen is not None:
        return chosen
    setting = os.environ.get(EXPANDED_SIZE_ENV, "").strip()
    if setting:
        try:
            return parse_size(setting)
        except ValueError as exc:
            raise ValueError(f"${EXPANDED_SIZE_ENV}: {exc}") from None
    return min(EXPANDED_SIZE_CAP, max(EXPANDED_SIZE_FLOOR, EXPANDED_SIZE_RATIO * document_bytes))


@dataclass(frozen=True, slots=True)
class Refused:
    """An item of a document that was not read because it breaks a limit: ``message`` says
    which; ``question_id`` is the item's ``question_id`` when it still shows one;
    ``text`` is the start of its text, when it was cut out of the document's."""

    message: str
    question_id: str | None = None
    text: str = ""


def document_too_large(size_bytes: int, limit: int | None = None) -> str | None:
    """The message for a document of ``size_bytes``, or ``None`` when it is within ``limit``
    (by default :data:`MAX_DOCUMENT_BYTES`)."""
    limit = MAX_DOCUMENT_BYTES if limit is None else limit
    if size_bytes <= limit:
        return None
    return (
        f"the file is {size_bytes / 2**20:,.0f} MiB, over the limit of "
        f"{limit // 2**20} MiB for a YAML or JSON document"
    )


_PLAIN_SCALARS = frozenset({str, int, float, bool, type(None)})


def json_depth(value: Any, stop_after: int = MAX_DOCUMENT_DEPTH) -> int:
    """The nesting depth of lists and mappings in ``value`` (a scalar is 0), without
    recursion; counting stops once it is over ``stop_after``. Only containers are put on the
    stack, and plain types are told apart by ``type`` before any ``isinstance`` (this walks
    every node of every input)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    push = stack.append
    while stack:
        current, depth = stack.pop()
        kind = type(current)
        if kind is dict:  # no ABC check for the types a JSON decoder makes
            children: Any = current.values()
        elif kind is list:
            children = current
        elif isinstance(current, Mapping):
            children = current.values()
        elif isinstance(current, list | tuple):
            children = current
        else:
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if deepest > stop_after:
                break
        for child in children:
            kind = type(child)
            if (
                kind is dict
                or kind is list
                or (kind not in _PLAIN_SCALARS and isinstance(child, Mapping | list | tuple))
            ):
                push((child, depth))
    return deepest


def check_json_depth(value: Any, limit: int = MAX_DOCUMENT_DEPTH) -> str | None:
    """The message for a value nested deeper than ``limit`` (naming the field of a mapping
    that is), else ``None``."""
    if json_depth(value, limit) <= limit:
        return None
    field = None
    if isinstance(value, Mapping):
        field = next((k for k, v in value.items() if json_depth(v, limit - 1) >= limit), None)
    return too_deep(limit, None if field is None else str(field))


def too_deep(limit: int, field: str | None = None) -> str:
    """The message for an item nested deeper than ``limit``, in ``field`` when known."""
    where = "" if field is None else f" (in the field '{field}')"
    return f"nested more than {limit} levels deep{where}"


_BLANK = re.compile(r"[ \t\n\r]*")
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_COLON = re.compile(r"[ \t\n\r]*:")
_KEPT_TEXT = 64 * 1024  # of an item refused, enough to find its question_id


def split_json_items(text: str) -> list[Any] | dict[str, Any]:
    """The top-level list or object of the JSON document ``text``, read one item at a time:
    an item nested too deeply for Python's parser (a ``RecursionError`` past about 1,000
    levels) becomes a :class:`Refused` and the others are read. Text that is not JSON is a
    ``json.JSONDecodeError``; a document that is no list or object, a ``ValueError``."""
    decoder = json.JSONDecoder()
    pos = _skip_blank(text, 0)
    opener = text[pos : pos + 1]
    if opener not in ("[", "{"):
        raise ValueError("nested too deeply to read")
    closer = "]" if opener == "[" else "}"
    items: list[Any] = []
    keys: list[str] = []
    pos = _skip_blank(text, pos + 1)
    while not (pos < len(text) and text[pos] == closer and not items):
        if opener == "{":
            key, pos = _json_key(decoder, text, pos)
            keys.append(key)
        value, pos = _json_item(decoder, text, pos)
        items.append(value)
        pos = _skip_blank(text, pos)
        if text.startswith(",", pos):
            pos = _skip_blank(text, pos + 1)
            continue
        if not text.startswith(closer, pos):
            raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
        break
    pos = _skip_blank(text, pos + 1)
    if pos != len(text):
        raise json.JSONDecodeError("Extra data", text, pos)
    return dict(zip(keys, items, strict=True)) if opener == "{" else items


def _skip_blank(text: str, pos: int) -> int:
    match = _BLANK.match(text, pos)
    return pos if match is None else match.end()


def _json_key(decoder: json.JSONDecoder, text: str, pos: int) -> tuple[str, int]:
    if not text.startswith('"', pos):
        raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, pos)
    key, pos = decoder.raw_decode(text, pos)
    pos = _skip_blank(text, pos)
    if not text.startswith(":", pos):
        raise json.JSONDecodeError("Expecting ':' delimiter", text, pos)
    return str(key), _skip_blank(text, pos + 1)


def _json_item(decoder: json.JSONDecoder, text: str, pos: int) -> tuple[Any, int]:
    """The value at ``pos`` and where it ends; one too deep to parse is skipped, bracket by
    bracket, and refused."""
    try:
        return decoder.raw_decode(text, pos)
    except RecursionError:
        pass
    depth = 0
    key: str | None = None  # of the item's field read last
    field: str | None = None  # the field where the item goes too deep
    for match in _JSON_TOKEN.finditer(text, pos):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > MAX_DEPTH and field is None:
                field = key
        elif token in ("]", "}"):
            depth -= 1
        elif depth == 1 and text[pos] == "{" and _COLON.match(text, match.end()):
            key = token[1:-1]
        if depth == 0:
            kept = text[pos : min(match.end(), pos + _KEPT_TEXT)]
            return Refused(too_deep(MAX_DEPTH, field), None, kept), match.end()
    raise json.JSONDecodeError("Unterminated value", text, pos)
