"""Spans of OTLP JSON documents (``ExportTraceServiceRequest``, as the OpenTelemetry
collector's file exporter and the OTLP/HTTP JSON protocol write them), grouped by trace
(docs/integrations.md). Ids are kept as written (hex per the OTLP JSON encoding)."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from graphrag_eval.inputs.notices import Notice
from graphrag_eval.inputs.shapes import describe_kind

__all__ = [
    "ERROR_CODES",
    "Span",
    "Trace",
    "attributes_of",
    "bytes_text",
    "collect_traces",
    "integer",
    "nanos",
    "trace_of",
]

ERROR_CODES = (2, "2", "STATUS_CODE_ERROR", "ERROR")
"""A span status code that says it failed (OTLP JSON writes enums as numbers; names too)."""
MAX_VALUE_DEPTH = 32
"""How deep arrays and key-value lists inside an attribute value are read."""


@dataclass(slots=True)
class Span:
    """One span: what the readers use of it."""

    span_id: str
    parent_id: str | None
    name: str
    start_ns: int | None
    end_ns: int | None
    attributes: dict[str, Any]
    error: str | None
    """Why the span failed (its status is ERROR), or ``None``."""

    @property
    def elapsed_sec(self) -> float | None:
        if self.start_ns is None or self.end_ns is None or self.end_ns < self.start_ns:
            return None
        return (self.end_ns - self.start_ns) / 1e9


@dataclass(slots=True)
class Trace:
    """The spans of one trace, with the attributes of the resources they came from."""

    trace_id: str
    where: str
    spans: list[Span] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)


def collect_traces(
    documents: Iterable[tuple[str, Any]], source: str, notices: list[Notice]
) -> dict[str, Trace]:
    """The traces of OTLP JSON ``documents`` (each ``(where, value)``), by trace id, in the
    order they first appear; a document or span that cannot be read is a notice."""
    traces: dict[str, Trace] = {}
    for where, document in documents:
        if not isinstance(document, Mapping) and hasattr(document, "add_to"):
            document.add_to(traces, where)  # read by the typed reader (otlp_lines.py)
            continue
        resource_spans = document.get("resourceSpans") if isinstance(document, Mapping) else None
        if not isinstance(resource_spans, list):
            found, at = (
                (resource_spans, "resourceSpans")
                if isinstance(document, Mapping)
                else (
                    document,
                    None,
                )
            )
            expected = "a list" if at else "an OTLP JSON document with resourceSpans"
            message = f"expected {expected}, got {describe_kind(found)}"
            notices.append(Notice("malformed_response", message, file=source, item=where, field=at))
            continue
        for r_index, resource_span in enumerate(resource_spans):
            path = f"resourceSpans[{r_index}]"
            if not isinstance(resource_span, Mapping):
                notices.append(_bad(source, where, path, resource_span))
                continue
            resource = resource_span.get("resource")
            attributes = attributes_of(
                resource.get("attributes") if isinstance(resource, Mapping) else None
            )
            scopes = resource_span.get("scopeSpans")
            for s_index, scope in enumerate(scopes if isinstance(scopes, list) else ()):
                spans = scope.get("spans") if isinstance(scope, Mapping) else None
                for index, raw in enumerate(spans if isinstance(spans, list) else ()):
                    span_path = f"{path}.scopeSpans[{s_index}].spans[{index}]"
                    _add_span(traces, raw, attributes, (source, where, span_path), notices)
    return traces


def _add_span(
    traces: dict[str, Trace],
    raw: Any,
    resource: dict[str, Any],
    at: tuple[str, str, str],
    notices: list[Notice],
) -> None:
    source, where, path = at
    if not isinstance(raw, Mapping):
        notices.append(_bad(source, where, path, raw))
        return
    trace_id, span_id = raw.get("traceId"), raw.get("spanId")
    if not isinstance(trace_id, str) or not trace_id or not isinstance(span_id, str):
        message = "a span without traceId or spanId; ignored"
        notices.append(Notice("malformed_response", message, file=source, item=where, field=path))
        return
    trace = trace_of(traces, trace_id, resource)
    parent = raw.get("parentSpanId")
    attributes = attributes_of(raw.get("attributes"))
    trace.spans.append(
        Span(
            span_id=span_id,
            parent_id=parent if isinstance(parent, str) and parent else None,
            name=str(raw.get("name") or ""),
            start_ns=nanos(raw.get("startTimeUnixNano")),
            end_ns=nanos(raw.get("endTimeUnixNano")),
            attributes=attributes,
            error=_error_of(raw, attributes),
        )
    )


def trace_of(traces: dict[str, Trace], trace_id: str, resource: dict[str, Any]) -> Trace:
    """The trace ``trace_id`` (new, with ``resource``'s attributes, if it is not yet known)."""
    trace = traces.get(trace_id)
    if trace is None:
        trace = traces[trace_id] = Trace(trace_id, f"trace {trace_id}", resource=dict(resource))
    return trace


def _bad(source: str, where: str, path: str, value: Any) -> Notice:
    return Notice(
        "malformed_response",
        f"expected a mapping, got {describe_kind(value)}; ignored",
        file=source,
        item=where,
        field=path,
    )


def attributes_of(raw: Any) -> dict[str, Any]:
    """OTLP ``KeyValue`` attributes as a plain mapping (the first of a repeated key wins)."""
    found: dict[str, Any] = {}
    if not isinstance(raw, list):
        return found
    for entry in raw:
        if isinstance(entry, Mapping) and isinstance(entry.get("key"), str):
            found.setdefault(entry["key"], any_value(entry.get("value"), 0))
    return found


def any_value(value: Any, depth: int) -> Any:
    """An OTLP ``AnyValue`` as a plain value (int64 values are written as text in JSON)."""
    if not isinstance(value, Mapping) or depth > MAX_VALUE_DEPTH:
        return None
    if "stringValue" in value:
        text = value["stringValue"]
        return text if isinstance(text, str) else None
    if "intValue" in value:
        return integer(value["intValue"])
    if "doubleValue" in value:
        number = value["doubleValue"]
        return (
            float(number)
            if isinstance(number, int | float) and not isinstance(number, bool)
            else None
        )
    if "boolValue" in value:
        return value["boolValue"] if isinstance(value["boolValue"], bool) else None
    if "arrayValue" in value:
        values = (
            value["arrayValue"].get("values") if isinstance(value["arrayValue"], Mapping) else None
        )
        return [any_value(item, depth + 1) for item in values] if isinstance(values, list) else []
    if "kvlistValue" in value:
        values = (
            value["kvlistValue"].get("values")
            if isinstance(value["kvlistValue"], Mapping)
            else None
        )
        return _kvlist(values, depth + 1)
    if "bytesValue" in value:
        return bytes_text(value["bytesValue"])
    return None


def _kvlist(values: Any, depth: int) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for entry in values if isinstance(values, list) else ():
        if isinstance(entry, Mapping) and isinstance(entry.get("key"), str):
            found.setdefault(entry["key"], any_value(entry.get("value"), depth))
    return found


def bytes_text(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except ValueError:
        return value


def integer(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lstrip("-").isdigit() and len(value) <= 20:
        return int(value)
    return None


def nanos(value: Any) -> int | None:
    """A time in nanoseconds since the epoch (a ``fixed64``), or ``None``."""
    number = integer(value)
    return number if number is not None and 0 < number < 2**64 else None


def _error_of(raw: Mapping[str, Any], attributes: Mapping[str, Any]) -> str | None:
    status = raw.get("status")
    if not isinstance(status, Mapping) or status.get("code") not in ERROR_CODES:
        return None
    message = status.get("message")
    if isinstance(message, str) and message:
        return message
    for event in raw.get("events") or ():
        if isinstance(event, Mapping) and event.get("name") == "exception":
            text = attributes_of(event.get("attributes")).get("exception.message")
            if isinstance(text, str) and text:
                return text
    error_type = attributes.get("error.type")
    return str(error_type) if error_type else "the span's status is ERROR"
