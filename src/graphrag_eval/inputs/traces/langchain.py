"""LangChain and LangGraph message lists as responses, as ``messages_to_dict`` (``{"type",
"data"}``), ``dumpd`` (``{"lc", "type": "constructor", "id", "kwargs"}``) or a message's
``model_dump`` write them: AI messages with ``tool_calls`` (and ``invalid_tool_calls``), tool
messages with ``tool_call_id`` and ``status`` (docs/integrations.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphrag_eval.inputs.shapes import describe_kind
from graphrag_eval.inputs.traces.calls import Calls, response_of
from graphrag_eval.inputs.traces.common import ItemContext, as_list, content_text, parse_arguments

__all__ = ["convert_langchain", "message_of"]

_CLASSES = {
    "AIMessage": "ai",
    "AIMessageChunk": "ai",
    "ToolMessage": "tool",
    "ToolMessageChunk": "tool",
    "HumanMessage": "human",
    "HumanMessageChunk": "human",
    "SystemMessage": "system",
    "ChatMessage": "chat",
    "FunctionMessage": "function",
}
_TOKENS = ("input_tokens", "output_tokens", "total_tokens")


def message_of(value: Any) -> tuple[str, Mapping[str, Any]] | None:
    """A serialised LangChain message as its type (``ai``, ``tool``, ``human``, ...) and
    fields; ``None`` for what is no such message."""
    if not isinstance(value, Mapping):
        return None
    if value.get("lc") == 1 and isinstance(value.get("id"), list) and value["id"]:
        kwargs = value.get("kwargs")
        kind = _CLASSES.get(str(value["id"][-1]))
        return (kind, kwargs) if kind is not None and isinstance(kwargs, Mapping) else None
    data = value.get("data")
    fields: Mapping[str, Any] = data if isinstance(data, Mapping) else value
    kind = value.get("type")
    if not isinstance(kind, str):
        return None
    kind = _CLASSES.get(kind, kind)
    return (kind, fields) if kind in _CLASSES.values() else None


def convert_langchain(
    record: Mapping[str, Any], question_id: str, context: ItemContext
) -> dict[str, Any]:
    """A conversation's ``messages`` (LangChain's serialisations) as a response."""
    messages = as_list(record.get("messages"), "messages")
    calls, answer = Calls(context), None
    tokens = dict.fromkeys(_TOKENS, 0)
    counted = False
    for index, value in enumerate(messages):
        path = f"messages[{index}]"
        message = message_of(value)
        if message is None:
            context.problem(path, f"not a LangChain message ({describe_kind(value)}); ignored")
            continue
        kind, fields = message
        if kind == "ai":
            text = content_text(fields.get("content"))
            if text is not None and text.strip():
                answer = text
            _ai_calls(fields, calls, path)
            counted = _add_usage(fields.get("usage_metadata"), tokens) or counted
        elif kind == "tool":
            output = fields.get("content")
            text = content_text(output)
            error = None
            if fields.get("status") == "error":
                error = text if text else "the tool failed"
            calls.result(
                fields.get("tool_call_id"), text if text is not None else output, error, path
            )
    usage = tokens if counted else {}
    return response_of(record, question_id, calls.finish(), answer, usage)


def _ai_calls(fields: Mapping[str, Any], calls: Calls, path: str) -> None:
    for key in ("tool_calls", "invalid_tool_calls"):
        found = fields.get(key)
        if found is None:
            continue
        if not isinstance(found, list | tuple):
            calls.context.problem(f"{path}.{key}", f"expected a list, got {describe_kind(found)}")
            continue
        for index, call in enumerate(found):
            where = f"{path}.{key}[{index}]"
            if not isinstance(call, Mapping):
                calls.context.problem(where, f"expected a tool call, got {describe_kind(call)}")
            elif key == "tool_calls":
                args = parse_arguments(call.get("args"), calls.context, f"{where}.args")
                calls.call(call.get("name"), call.get("id"), args, where)
            else:  # the model's call did not parse: it never ran
                error = call.get("error")
                message = str(error) if error else "the tool call is invalid"
                calls.failed_call(call.get("name"), call.get("id"), call.get("args"), message)


def _add_usage(usage: Any, tokens: dict[str, int]) -> bool:
    if not isinstance(usage, Mapping):
        return False
    counted = False
    for key in _TOKENS:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            tokens[key] += value
            counted = True
    return counted
