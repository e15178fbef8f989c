"""JSON documents read fast: msgspec decodes the bytes as they are (no text copy), and gives
what ``json.loads`` would; what it refuses is left to :mod:`graphrag_eval.files.documents`,
which reads it with the ``json`` module or names the problem, so messages do not change
(docs/benchmarks.md, "Whole run")."""

from __future__ import annotations

import codecs
from typing import Any

import msgspec

from graphrag_eval.files.bounded import MAX_DEPTH, check_json_depth

__all__ = ["REFUSED", "decode_json_line", "read_json_bytes"]

REFUSED: Any = object()
"""What :func:`read_json_bytes` gives for a document it leaves to the ``json`` module."""

_decoder = msgspec.json.Decoder()


def read_json_bytes(raw: bytes, split_items: bool) -> Any:
    """The document in ``raw`` as ``documents._read_json`` gives it, or :data:`REFUSED` for
    what msgspec cannot read (``NaN``, a lone surrogate, a number out of range, text that is
    not UTF-8) or a document (or, with ``split_items``, an item) nested too deeply."""
    try:
        data = _decoder.decode(memoryview(raw)[3:] if raw[:3] == codecs.BOM_UTF8 else raw)
    except (msgspec.MsgspecError, RecursionError, ValueError):  # ValueError: not UTF-8
        return REFUSED
    if split_items and isinstance(data, list | dict):
        items = data if isinstance(data, list) else data.values()
        if any(check_json_depth(item, MAX_DEPTH) is not None for item in items):
            return REFUSED
        return data
    return REFUSED if check_json_depth(data) is not None else data


def decode_json_line(line: str) -> Any:
    """``json.loads(line)`` by msgspec, or :data:`REFUSED` where msgspec refuses it (the
    caller then asks the ``json`` module, whose messages it reports)."""
    try:
        return _decoder.decode(line)
    except (msgspec.MsgspecError, RecursionError, ValueError):  # ValueError: not UTF-8
        return REFUSED
