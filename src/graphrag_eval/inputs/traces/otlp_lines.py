"""OTLP JSON Lines read fast (docs/integrations.md): each line decoded by msgspec into the
few OTLP fields the readers use, straight into typed objects (the others skipped unread);
a line that does not decode so (not JSON, not UTF-8, another shape, nested too deeply) is
read again the ordinary way (:func:`~graphrag_eval.files.jsonl.read_jsonl_at`, with its
limits and messages). A file whose lines this reader would number differently (a lone
carriage return) or that has a line over the limit is left to the ordinary reader whole."""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import msgspec

from graphrag_eval.files.bounded import MAX_DEPTH, MAX_LINE_BYTES
from graphrag_eval.files.jsonl import LineAt, read_jsonl_at
from graphrag_eval.inputs.traces.spans import (
    ERROR_CODES,
    MAX_VALUE_DEPTH,
    Span,
    Trace,
    bytes_text,
    integer,
    nanos,
    trace_of,
)

__all__ = ["typed_lines"]


class AnyValue(msgspec.Struct):
    stringValue: str | None = None
    boolValue: bool | None = None
    intValue: int | str | None = None
    doubleValue: float | None = None
    arrayValue: ArrayValue | None = None
    kvlistValue: KeyValueList | None = None
    bytesValue: str | None = None


class ArrayValue(msgspec.Struct):
    values: list[AnyValue] = []


class KeyValue(msgspec.Struct):
    key: str
    value: AnyValue | None = None


class KeyValueList(msgspec.Struct):
    values: list[KeyValue] = []


class Status(msgspec.Struct):
    code: int | str | None = None
    message: str | None = None


class Event(msgspec.Struct):
    name: str | None = None
    attributes: list[KeyValue] = []


class OtlpSpan(msgspec.Struct):
    traceId: Annotated[str, msgspec.Meta(min_length=1)]  # empty: the ordinary reader's notice
    spanId: str
    parentSpanId: str | None = None
    name: str | None = None
    startTimeUnixNano: int | str | None = None
    endTimeUnixNano: int | str | None = None
    attributes: list[KeyValue] = []
    status: Status | None = None
    events: list[Event] = []


class Resource(msgspec.Struct):
    attributes: list[KeyValue] = []


class ScopeSpans(msgspec.Struct):
    spans: list[OtlpSpan] = []


class ResourceSpans(msgspec.Struct):
    resource: Resource | None = None
    scopeSpans: list[ScopeSpans] = []


class TracesData(msgspec.Struct):
    """An ``ExportTraceServiceRequest``, as far as the readers use it."""

    resourceSpans: list[ResourceSpans]

    def add_to(self, traces: dict[str, Trace], where: str) -> None:
        """Its spans, each added to its trace in ``traces``."""
        for resource_spans in self.resourceSpans:
            resource = resource_spans.resource
            resource_attributes = _attributes(resource.attributes) if resource else {}
            for scope in resource_spans.scopeSpans:
                for span in scope.spans:
                    _add(traces, span, resource_attributes)


_decoder = msgspec.json.Decoder(TracesData)


def typed_lines(path: Path) -> Iterator[tuple[str, Any]] | None:
    """``(where, document)`` for each non-blank line: a :class:`TracesData`, or what the
    ordinary reader gives for a line this one does not read (a mapping, a list, a broken
    line). ``None`` when the file is to be read the ordinary way whole."""
    with path.open("rb") as stream:
        while line := stream.readline(MAX_LINE_BYTES + 1):
            if len(line) > MAX_LINE_BYTES or b"\r" in line.rstrip(b"\r\n"):
                return None
    return _lines(path)


def _lines(path: Path) -> Iterator[tuple[str, Any]]:
    with path.open("rb") as stream:
        number, offset = 0, 0
        while line := stream.readline(MAX_LINE_BYTES + 1):
            at, offset = offset, offset + len(line)
            number += 1
            text = line[3:] if at == 0 and line.startswith(codecs.BOM_UTF8) else line
            if not text.strip():
                continue
            try:
                yield f"line {number}", _decoder.decode(text)
            except (msgspec.MsgspecError, RecursionError, ValueError):
                again = read_jsonl_at(path, number, LineAt(at, len(line)), max_depth=MAX_DEPTH)
                yield f"line {number}", again


def _add(traces: dict[str, Trace], raw: OtlpSpan, resource: dict[str, Any]) -> None:
    attributes = _attributes(raw.attributes)
    trace = trace_of(traces, raw.traceId, resource)
    trace.spans.append(
        Span(
            span_id=raw.spanId,
            parent_id=raw.parentSpanId or None,
            name=raw.name or "",
            start_ns=nanos(raw.startTimeUnixNano),
            end_ns=nanos(raw.endTimeUnixNano),
            attributes=attributes,
            error=_error(raw, attributes),
        )
    )


def _attributes(raw: list[KeyValue]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for entry in raw:
        if entry.key not in found:
            found[entry.key] = _value(entry.value, 0)
    return found


def _value(value: AnyValue | None, depth: int) -> Any:
    if value is None or depth > MAX_VALUE_DEPTH:
        return None
    if value.stringValue is not None:
        return value.stringValue
    if value.intValue is not None:
        return integer(value.intValue)
    if value.doubleValue is not None:
        return value.doubleValue
    if value.boolValue is not None:
        return value.boolValue
    if value.arrayValue is not None:
        return [_value(item, depth + 1) for item in value.arrayValue.values]
    if value.kvlistValue is not None:
        found: dict[str, Any] = {}
        for entry in value.kvlistValue.values:
            found.setdefault(entry.key, _value(entry.value, depth + 1))
        return found
    if value.bytesValue is not None:
        return bytes_text(value.bytesValue)
    return None


def _error(raw: OtlpSpan, attributes: dict[str, Any]) -> str | None:
    status = raw.status
    if status is None or status.code not in ERROR_CODES:
        return None
    if status.message:
        return status.message
    for event in raw.events:
        if event.name == "exception":
            text = _attributes(event.attributes).get("exception.message")
            if isinstance(text, str) and text:
                return text
    error_type = attributes.get("error.type")
    return str(error_type) if error_type else "the span's status is ERROR"
