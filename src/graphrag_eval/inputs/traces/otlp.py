"""OpenTelemetry traces as responses: one trace per question, its id in a span attribute;
tool spans under the OpenInference conventions (``openinference.span.kind: TOOL``,
``tool.name``, ``input.value``, ``output.value``) or the GenAI conventions
(``gen_ai.operation.name: execute_tool``, ``gen_ai.tool.name``,
``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``) become steps
(docs/integrations.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from graphrag_eval.inputs.traces.common import ItemContext, Unusable, content_text, parse_arguments
from graphrag_eval.inputs.traces.spans import Span, Trace

__all__ = ["convert_trace", "question_id_of_trace"]

_KIND = "openinference.span.kind"
_OPERATION = "gen_ai.operation.name"
_LLM_OPERATIONS = ("chat", "text_completion", "generate_content")  # a tuple: values may be lists
_TOOL_PREFIX = "execute_tool "


def question_id_of_trace(trace: Trace, attribute: str) -> str | None:
    """The question id of a trace: ``attribute`` on a span (the root first), on the
    resource, or in a span's OpenInference ``metadata`` (a JSON object)."""
    spans = sorted(trace.spans, key=lambda span: span.parent_id is not None)
    for attributes in (*(span.attributes for span in spans), trace.resource):
        value = attributes.get(attribute)
        if isinstance(value, str | int) and not isinstance(value, bool) and value != "":
            return str(value)
    for span in spans:
        metadata = span.attributes.get("metadata")
        if isinstance(metadata, str) and attribute in metadata:
            try:
                value = json.loads(metadata).get(attribute)
            except (ValueError, AttributeError, RecursionError):
                continue
            if isinstance(value, str | int) and not isinstance(value, bool) and value != "":
                return str(value)
    return None


def convert_trace(trace: Trace, question_id: str, context: ItemContext) -> dict[str, Any]:
    """One trace as a response."""
    if not trace.spans:
        raise Unusable(None, "the trace has no spans")
    ordered = sorted(trace.spans, key=lambda span: (span.start_ns or 0, span.end_ns or 0))
    steps = [_step(span, context) for span in ordered if _is_tool(span)]
    response: dict[str, Any] = {"question_id": question_id, "actual_steps": steps}
    llm_spans = [span for span in ordered if _is_llm(span)]
    answer = _answer(llm_spans, _root(ordered))
    if answer is not None:
        response["actual_answer"] = answer
    response.update(_tokens(_outermost(llm_spans, ordered)))
    elapsed = _elapsed(ordered)
    if elapsed is not None:
        response["elapsed_sec"] = elapsed
    root = _root(ordered)
    if root is not None and root.error is not None and not _is_tool(root):
        response["status"], response["error"] = "error", root.error
    return response


def _is_tool(span: Span) -> bool:
    return span.attributes.get(_KIND) == "TOOL" or span.attributes.get(_OPERATION) == "execute_tool"


def _is_llm(span: Span) -> bool:
    return span.attributes.get(_KIND) == "LLM" or span.attributes.get(_OPERATION) in _LLM_OPERATIONS


def _root(spans: list[Span]) -> Span | None:
    ids = {span.span_id for span in spans}
    roots = [span for span in spans if span.parent_id is None or span.parent_id not in ids]
    return roots[0] if roots else None


def _step(span: Span, context: ItemContext) -> dict[str, Any]:
    attributes = span.attributes
    name = attributes.get("tool.name") or attributes.get("gen_ai.tool.name")
    if not isinstance(name, str) or not name:
        name = span.name.removeprefix(_TOOL_PREFIX) or "unknown_tool"
    call_id = (
        attributes.get("gen_ai.tool.call.id")
        or attributes.get("tool.id")
        or attributes.get("tool_call.id")
    )
    step_id = str(call_id) if isinstance(call_id, str | int) and call_id != "" else span.span_id
    field = f"span {span.span_id}"
    args: Any = None
    if "input.value" in attributes:
        raw = attributes["input.value"]
        mime = attributes.get("input.mime_type")
        args = (
            raw if mime == "text/plain" else parse_arguments(raw, context, f"{field}.input.value")
        )
    elif "gen_ai.tool.call.arguments" in attributes:
        raw = attributes["gen_ai.tool.call.arguments"]
        args = parse_arguments(raw, context, f"{field}.gen_ai.tool.call.arguments")
    output = attributes.get("output.value", attributes.get("gen_ai.tool.call.result"))
    step = context.step(name, step_id, args, output, span.error)
    if span.start_ns is not None:
        moment = datetime.fromtimestamp(span.start_ns / 1e9, tz=UTC)
        step["execution_timestamp"] = moment.isoformat().replace("+00:00", "Z")
    if span.elapsed_sec is not None:
        step["elapsed_sec"] = span.elapsed_sec
    return step


def _answer(llm_spans: list[Span], root: Span | None) -> str | None:
    """The last assistant message with text of the last LLM span that has one; else the
    root span's output."""
    for span in reversed(llm_spans):
        text = _openinference_output(span.attributes) or _genai_output(span.attributes)
        if text:
            return text
    if root is None:
        return None
    text = _genai_output(root.attributes)
    if text:
        return text
    output = root.attributes.get("output.value")
    return output if isinstance(output, str) and output.strip() else None


def _openinference_output(attributes: Mapping[str, Any]) -> str | None:
    prefix = "llm.output_messages."
    found: str | None = None
    index = 0
    while (
        f"{prefix}{index}.message.role" in attributes
        or f"{prefix}{index}.message.content" in attributes
    ):
        role = attributes.get(f"{prefix}{index}.message.role", "assistant")
        text = attributes.get(f"{prefix}{index}.message.content")
        if role == "assistant" and isinstance(text, str) and text.strip():
            found = text
        index += 1
    return found


def _genai_output(attributes: Mapping[str, Any]) -> str | None:
    raw = attributes.get("gen_ai.output.messages")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError):
            return None
    found: str | None = None
    for message in raw if isinstance(raw, list) else ():
        if not isinstance(message, Mapping) or message.get("role", "assistant") != "assistant":
            continue
        parts = message.get("parts")
        texts = [
            part.get("content")
            for part in (parts if isinstance(parts, list) else ())
            if isinstance(part, Mapping) and part.get("type") == "text"
        ]
        text = "".join(t for t in texts if isinstance(t, str)) or content_text(
            message.get("content")
        )
        if text and text.strip():
            found = text
    return found


def _outermost(llm_spans: list[Span], spans: list[Span]) -> list[Span]:
    """The LLM spans inside no other (of ``spans``, the whole trace): one inside another
    is the same call instrumented twice (a framework's span and its provider SDK's), its
    tokens counted once."""
    parent_of = {span.span_id: span.parent_id for span in spans}
    llm = {span.span_id for span in llm_spans}
    under_llm: dict[str, bool] = {}  # span id -> whether an LLM span is above it

    def has_llm_above(span_id: str) -> bool:
        path: dict[str, None] = {}  # in order, looked up in constant time
        parent = parent_of.get(span_id)
        found = False
        while parent is not None and parent not in path and parent != span_id:
            if parent in llm:
                found = True
                break
            if parent in under_llm:
                found = under_llm[parent]
                break
            path[parent] = None  # a cycle of parents (a hostile file) ends the walk
            parent = parent_of.get(parent)
        under_llm.update(dict.fromkeys(path, found))
        return found

    return [span for span in llm_spans if not has_llm_above(span.span_id)]


def _tokens(llm_spans: list[Span]) -> dict[str, int]:
    totals = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    counted = False
    for span in llm_spans:
        attributes = span.attributes
        prompt = _count(attributes, "llm.token_count.prompt", "gen_ai.usage.input_tokens")
        completion = _count(attributes, "llm.token_count.completion", "gen_ai.usage.output_tokens")
        total = _count(attributes, "llm.token_count.total", "")
        if prompt is None and completion is None and total is None:
            continue
        counted = True
        totals["input_tokens"] += prompt or 0
        totals["output_tokens"] += completion or 0
        totals["total_tokens"] += total if total is not None else (prompt or 0) + (completion or 0)
    return totals if counted else {}


def _count(attributes: Mapping[str, Any], *names: str) -> int | None:
    for name in names:
        value = attributes.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def _elapsed(spans: list[Span]) -> float | None:
    starts = [span.start_ns for span in spans if span.start_ns is not None]
    ends = [span.end_ns for span in spans if span.end_ns is not None]
    if not starts or not ends or max(ends) < min(starts):
        return None
    return (max(ends) - min(starts)) / 1e9
