"""Which format a responses input is in (given, or told from its first records), and its
records converted to responses of our own format (docs/integrations.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from graphrag_eval.config.traces import TracesConfig
from graphrag_eval.errors import InputError, locate
from graphrag_eval.files.bounded import MAX_DEPTH
from graphrag_eval.files.jsonl import BrokenLine, iter_jsonl_at
from graphrag_eval.inputs.notices import Notice
from graphrag_eval.inputs.traces.common import ItemContext, Unusable, question_id_of
from graphrag_eval.inputs.traces.langchain import convert_langchain, message_of
from graphrag_eval.inputs.traces.openai import convert_chat, convert_responses, responses_items
from graphrag_eval.inputs.traces.otlp import convert_trace, question_id_of_trace
from graphrag_eval.inputs.traces.otlp_lines import typed_lines
from graphrag_eval.inputs.traces.spans import collect_traces

__all__ = [
    "AUTO",
    "FORMATS",
    "NATIVE",
    "Converted",
    "Reading",
    "convert_data",
    "convert_jsonl",
    "detect_format",
]

NATIVE = "native"
FORMATS = (NATIVE, "openai-chat", "openai-responses", "langchain", "otlp")
"""The formats ``--responses-format`` takes (``auto``: told from the content)."""

_DETECT_RECORDS = 20  # how many records are looked at to tell the format
_DETECT_BYTES = 1 << 20  # and how many bytes of lines at most (after the first)
_NATIVE_KEYS = frozenset({"actual_answer", "actual_steps"})
# Tuples, not sets: a hostile record's values may be unhashable (lists).
_RESPONSES_ITEMS = (
    "function_call",
    "function_call_output",
    "message",
    "reasoning",
    "mcp_call",
    "custom_tool_call",
)
_SKIPPED = object()
_HINT = "choose it with --responses-format (docs/integrations.md)"


@dataclass(frozen=True, slots=True)
class Reading:
    """How to read responses: their ``format`` (one of :data:`FORMATS`, or ``auto``: told
    from the content) and the ``traces:`` config section."""

    format: str = "auto"
    traces: TracesConfig = field(default_factory=TracesConfig)

    def __post_init__(self) -> None:
        if self.format != "auto" and self.format not in FORMATS:
            expected = ", ".join(("auto", *FORMATS))
            raise InputError(f"unknown responses format {self.format!r} (expected {expected})")


AUTO = Reading()
"""Responses in our own format or a transcript or trace format, told from the content."""

Converter = Callable[[Mapping[str, Any], str, ItemContext], dict[str, Any]]
_CONVERTERS: dict[str, Converter] = {
    "openai-chat": convert_chat,
    "openai-responses": convert_responses,
    "langchain": convert_langchain,
}


@dataclass(slots=True)
class Converted:
    """Responses of our own format from an input in another, each with where it came from,
    and the notices of converting them."""

    format: str
    records: list[tuple[str, Any]] = field(default_factory=list)
    keys: list[str] | None = None
    notices: list[Notice] = field(default_factory=list)
    skipped: int = 0
    """Records left out, each with a notice (no question id; for OTLP, a document that is
    none, or a trace without the question id)."""


def record_formats(value: Any) -> frozenset[str]:
    """The formats one record can be in (none: it tells nothing)."""
    if isinstance(value, list | tuple):
        value = {"messages": value, "items": value}
    if not isinstance(value, Mapping):
        return frozenset()
    found: set[str] = set()
    if "resourceSpans" in value:
        found.add("otlp")
    messages = value.get("messages")
    if isinstance(messages, list | tuple):
        if any(isinstance(m, Mapping) and "role" in m and "type" not in m for m in messages):
            found.add("openai-chat")
        if any(message_of(m) is not None for m in messages):
            found.add("langchain")
        if not found & {"openai-chat", "langchain"} and "items" not in value:
            found.update(("openai-chat", "langchain"))  # an empty or unreadable list
    items = responses_items(value)
    if value.get("object") == "response" or (
        isinstance(items, list | tuple)
        and any(isinstance(i, Mapping) and i.get("type") in _RESPONSES_ITEMS for i in items)
    ):
        found.add("openai-responses")
    if value.keys() & _NATIVE_KEYS:
        return frozenset({NATIVE})  # our own keys say it
    return frozenset(found)


def detect_format(records: Iterable[tuple[str, Any]], source: str) -> str:
    """The format of the first records: the one they all can be in; an ambiguous or mixed
    input is an :class:`InputError` saying so."""
    common: frozenset[str] | None = None
    first: dict[str, str] = {}
    for where, value in islice(records, _DETECT_RECORDS):
        if isinstance(value, BrokenLine):
            continue
        formats = record_formats(value)
        if not formats:
            continue  # an error record, say: it tells nothing
        for name in formats:
            first.setdefault(name, where)
        common = formats if common is None else common & formats
        if not common:
            seen = ", ".join(f"{first[name]} looks like {name}" for name in sorted(first))
            raise InputError(f"the records are in different formats ({seen}); {_HINT}", file=source)
    if common is None:
        return NATIVE
    if len(common) > 1:
        names = " or ".join(sorted(common))
        where = min(first[name] for name in common)
        raise InputError(f"{where} could be {names}; {_HINT}", file=source)
    return next(iter(common))


def convert_jsonl(path: Path, source: str, reading: Reading) -> Converted | None:
    """The records of a JSON Lines file converted; ``None`` when it is of our own format."""

    def lines(budget: int | None = None) -> Iterable[tuple[str, Any]]:
        for number, value, at in iter_jsonl_at(path, max_depth=MAX_DEPTH):
            yield f"line {number}", value
            if budget is not None and (budget := budget - at.length) <= 0:
                return  # enough to tell the format: a line may hold many traces

    auto = reading.format == "auto"
    chosen = detect_format(lines(_DETECT_BYTES), source) if auto else reading.format
    if chosen == NATIVE:
        return None
    typed = typed_lines(path) if chosen == "otlp" else None
    return _convert(typed or lines(), None, chosen, source, reading.traces)


def convert_data(data: Any, source: str, reading: Reading) -> Converted | None:
    """Records given as a document (a list, a mapping by question id, or one OTLP document)
    converted; ``None`` when they are of our own format (only the first records are looked
    at then)."""
    if not isinstance(data, Mapping | list | tuple):
        return None  # the reader of our own format says what is wrong
    one_document = isinstance(data, Mapping) and (
        "resourceSpans" in data or reading.format == "otlp"
    )

    def records() -> Iterator[tuple[str, Any]]:
        if one_document:
            yield "document", data
        elif isinstance(data, Mapping):
            yield from ((f"question '{key}'", value) for key, value in data.items())
        else:
            yield from ((f"responses[{index}]", value) for index, value in enumerate(data))

    chosen = detect_format(records(), source) if reading.format == "auto" else reading.format
    if chosen == NATIVE:
        return None
    keys = [str(key) for key in data] if isinstance(data, Mapping) and not one_document else None
    return _convert(records(), keys, chosen, source, reading.traces)


def _convert(
    records: Iterable[tuple[str, Any]],
    keys: list[str] | None,
    chosen: str,
    source: str,
    config: TracesConfig,
) -> Converted:
    converted = Converted(chosen, keys=keys)
    if chosen == "otlp":
        _convert_traces(records, source, config, converted)
        return converted
    kept: list[str] = []
    for position, (where, value) in enumerate(records):
        key = keys[position] if keys is not None else None
        response = _convert_record(where, value, key, chosen, source, config, converted)
        if response is _SKIPPED:
            converted.skipped += 1
            continue
        converted.records.append((where, response))
        if key is not None:
            kept.append(key)
    converted.keys = kept if keys is not None else None
    return converted


def _convert_record(
    where: str,
    value: Any,
    key: str | None,
    chosen: str,
    source: str,
    config: TracesConfig,
    converted: Converted,
) -> Any:
    if isinstance(value, BrokenLine):
        return value
    if isinstance(value, list | tuple):
        value = {"items" if chosen == "openai-responses" else "messages": value}
    if not isinstance(value, Mapping):
        return value  # the reader of our own format says what it is
    question_id = question_id_of(value, key)
    if question_id is None:
        message = "no question id (give the record a question_id, or metadata.question_id)"
        converted.notices.append(
            Notice("malformed_response", message, file=source, item=where, field="question_id")
        )
        return _SKIPPED
    item = where if key is not None else f"{where} (question '{question_id}')"
    context = ItemContext(source, item, config)
    try:
        response = _CONVERTERS[chosen](value, question_id, context)
    except Unusable as exc:
        response = _unusable(question_id, exc, context)
    converted.notices.extend(context.notices)
    return response


def _convert_traces(
    documents: Iterable[tuple[str, Any]], source: str, config: TracesConfig, converted: Converted
) -> None:
    traces = collect_traces(
        (
            (where, value)
            for where, value in documents
            if not _broken(where, value, source, converted)
        ),
        source,
        converted.notices,
    )
    attribute = config.question_id_attribute
    for trace in traces.values():
        question_id = question_id_of_trace(trace, attribute)
        if question_id is None:
            message = (
                f"no span has the attribute {attribute!r} (traces.question_id_attribute); ignored"
            )
            converted.notices.append(
                Notice("malformed_response", message, file=source, item=trace.where)
            )
            converted.skipped += 1
            continue
        context = ItemContext(source, f"{trace.where} (question '{question_id}')", config)
        try:
            response = convert_trace(trace, question_id, context)
        except Unusable as exc:
            response = _unusable(question_id, exc, context)
        converted.notices.extend(context.notices)
        converted.records.append((trace.where, response))


def _broken(where: str, value: Any, source: str, converted: Converted) -> bool:
    """Whether ``value`` is a broken line (a notice); a document that is no OTLP document is
    counted as left out too (:func:`collect_traces` gives its notice), so that a file none
    of whose documents is one is no file of no responses (docs/inputs.md)."""
    if not isinstance(value, BrokenLine):
        if not hasattr(value, "add_to") and not (
            isinstance(value, Mapping) and isinstance(value.get("resourceSpans"), list)
        ):
            converted.skipped += 1
        return False
    converted.notices.append(Notice("malformed_response", str(value), file=source, item=where))
    converted.skipped += 1
    return True


def _unusable(question_id: str, exc: Unusable, context: ItemContext) -> dict[str, Any]:
    context.problem(exc.field or "", exc.message, kind="malformed_response")
    located = locate(context.source, context.where, exc.field)
    return {"question_id": question_id, "status": "error", "error": f"{located}: {exc.message}"}
