"""A JSON reference dataset kept compact: its bytes are read once, each question decoded,
validated (with the same errors and notices) and kept as its encoded JSON, a view of those
bytes (:class:`~graphrag_eval.inputs.reference.CompactQuestion`), parsed again when it is
scored; so a run's memory is bounded by the reference file's size (docs/benchmarks.md,
"Whole run"), and such a file may be larger than a document read whole
(:data:`~graphrag_eval.files.bounded.MAX_COMPACT_DOCUMENT_BYTES`, docs/security.md).
Anything this path does not read as expected (not a list of template mappings, questions
that are no list, JSON msgspec refuses, nesting near the limit) is read the ordinary way, so
every message stays as it was."""

from __future__ import annotations

import codecs
from pathlib import Path
from typing import Any

import msgspec

from graphrag_eval.files.bounded import (
    MAX_COMPACT_DOCUMENT_BYTES,
    MAX_DOCUMENT_DEPTH,
    check_json_depth,
    document_too_large,
)
from graphrag_eval.files.documents import read_bounded
from graphrag_eval.files.textcheck import binary_problem

__all__ = ["COMPACT_ABOVE_BYTES", "NotCompact", "decode_question", "load_compact_reference"]

COMPACT_ABOVE_BYTES = 64 * 2**20
"""``evaluate`` keeps a reference compact, and reads a JSON Lines responses file item by
item, when the file is larger than this: a smaller one is read whole, which is faster (each
item is then parsed once, not twice), its memory small anyway."""

_templates = msgspec.json.Decoder(list[dict[str, msgspec.Raw]])
_questions = msgspec.json.Decoder(list[msgspec.Raw])
_value = msgspec.json.Decoder()
_HEAD_BYTES = 64 * 1024
_QUESTION_DEPTH = MAX_DOCUMENT_DEPTH - 3  # the list of templates, a template, its questions


class NotCompact(Exception):
    """The document is read the ordinary way."""


def load_compact_reference(path: Path, above: int = 0) -> list[dict[str, Any]] | None:
    """The templates of a JSON reference of more than ``above`` bytes with each
    ``questions`` a list of encoded questions (for
    :func:`~graphrag_eval.inputs.reference.parse_reference` with ``compact=decode_question``),
    or ``None`` when it is to be read the ordinary way."""
    try:
        if path.suffix.lower() != ".json" or path.stat().st_size <= above:
            return None
        if not _looks_like_json_text(path):
            return None  # not read whole beyond the ordinary limit: read the ordinary way
        raw = read_bounded(path, MAX_COMPACT_DOCUMENT_BYTES)
    except (OSError, ValueError):
        return None
    too_large = document_too_large(len(raw), MAX_COMPACT_DOCUMENT_BYTES)
    if binary_problem(raw, "") is not None or too_large is not None:
        return None
    try:
        templates = _templates.decode(memoryview(raw)[3:] if raw[:3] == codecs.BOM_UTF8 else raw)
        return [_template(template) for template in templates]
    except (msgspec.MsgspecError, RecursionError, ValueError, NotCompact):
        return None


def _looks_like_json_text(path: Path) -> bool:
    """Whether the file starts as a JSON list of text would (a binary or sparse file is read
    no further here)."""
    with path.open("rb") as stream:
        head = stream.read(_HEAD_BYTES)
    start = head[3:] if head[:3] == codecs.BOM_UTF8 else head
    return binary_problem(head, "") is None and start.lstrip()[:1] == b"["


def _template(encoded: dict[str, msgspec.Raw]) -> dict[str, Any]:
    template: dict[str, Any] = {}
    for key, value in encoded.items():
        if key == "questions":
            template[key] = _questions.decode(value)
            continue
        template[key] = _value.decode(value)
        if check_json_depth(template[key], _QUESTION_DEPTH + 1) is not None:
            raise NotCompact
    return template


def decode_question(encoded: msgspec.Raw) -> Any:
    """One question of :func:`load_compact_reference`'s templates, decoded."""
    value = _value.decode(encoded)
    text = bytes(encoded)
    if text.count(b"[") + text.count(b"{") <= _QUESTION_DEPTH:
        return value  # each list or object opens with one: it cannot be nested deeper
    if check_json_depth(value, _QUESTION_DEPTH) is not None:
        raise NotCompact
    return value
