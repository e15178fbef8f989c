"""OpenAI transcripts as responses: a Chat Completions conversation (assistant messages with
``tool_calls``, ``tool`` messages with the results) and Responses API items
(``function_call``, ``function_call_output``, ``message``) (docs/integrations.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphrag_eval.inputs.shapes import describe_kind
from graphrag_eval.inputs.traces.calls import Calls, response_of
from graphrag_eval.inputs.traces.common import (
    ItemContext,
    Unusable,
    as_list,
    content_text,
    parse_arguments,
    usage_fields,
)

__all__ = ["convert_chat", "convert_responses", "responses_items"]

_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
_CHAT_USAGE = ("prompt_tokens", "completion_tokens", "total_tokens")
_RESPONSES_USAGE = ("input_tokens", "output_tokens", "total_tokens")


def convert_chat(
    record: Mapping[str, Any], question_id: str, context: ItemContext
) -> dict[str, Any]:
    """A Chat Completions conversation (``messages``) as a response."""
    messages = as_list(record.get("messages"), "messages")
    calls, answer = Calls(context), None
    for index, message in enumerate(messages):
        path = f"messages[{index}]"
        if not isinstance(message, Mapping):
            context.problem(path, f"expected a message, got {describe_kind(message)}; ignored")
            continue
        role = message.get("role")
        if role == "assistant":
            text = content_text(message.get("content"))
            if not (text and text.strip()):
                text = message.get("refusal")  # a refusal is the model's answer too
            if isinstance(text, str) and text.strip():
                answer = text
            _chat_calls(message.get("tool_calls"), calls, f"{path}.tool_calls")
            _function_call(message.get("function_call"), calls, f"{path}.function_call")
        elif role == "function":
            _function_result(message, calls, path)
        elif role not in _ROLES:
            what = (
                "a message without a role"
                if role is None
                else f"an unknown role {role[:40]!r}"
                if isinstance(role, str)
                else f"a role that is {describe_kind(role)}"
            )
            context.problem(path, f"{what} (not OpenAI Chat Completions?); ignored")
        elif role == "tool":
            output = message.get("content")
            text = content_text(output)
            calls.result(
                message.get("tool_call_id"), text if text is not None else output, None, path
            )
    usage = usage_fields(record.get("usage"), _CHAT_USAGE)
    return response_of(record, question_id, calls.finish(), answer, usage)


def _chat_calls(tool_calls: Any, calls: Calls, path: str) -> None:
    if tool_calls is None:
        return
    if not isinstance(tool_calls, list | tuple):
        calls.context.problem(path, f"expected a list, got {describe_kind(tool_calls)}; ignored")
        return
    for index, call in enumerate(tool_calls):
        where = f"{path}[{index}]"
        # A custom tool's call (``type: custom``) has ``custom: {name, input}``.
        custom = isinstance(call, Mapping) and call.get("type") == "custom"
        part, raw = ("custom", "input") if custom else ("function", "arguments")
        function = call.get(part) if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            calls.context.problem(f"{where}.{part}", f"a tool call without a {part}; left out")
            continue
        args = parse_arguments(function.get(raw), calls.context, f"{where}.{part}.{raw}")
        calls.call(function.get("name"), call.get("id"), args, f"{where}.{part}")


def _function_call(function: Any, calls: Calls, path: str) -> None:
    """A legacy ``function_call`` (one per assistant message, no id): its result is the
    next ``function`` message naming the function."""
    if not isinstance(function, Mapping):
        return  # none (null), as the SDK writes a message without one
    args = parse_arguments(function.get("arguments"), calls.context, f"{path}.arguments")
    name = function.get("name")
    calls.call(name, None, args, path, waits_as=_LEGACY + str(name))


def _function_result(message: Mapping[str, Any], calls: Calls, path: str) -> None:
    name = message.get("name")
    if not calls.is_open(_LEGACY + str(name)):
        calls.context.problem(
            path, f"a function result for no earlier function_call (function {name!r}); ignored"
        )
        return
    output = message.get("content")
    text = content_text(output)
    calls.result(_LEGACY + str(name), text if text is not None else output, None, path)


_LEGACY = "\0function "  # what a legacy call waits as: no call id is text with a NUL


def responses_items(record: Mapping[str, Any]) -> Any:
    """The Responses API items of a record: its ``items`` (a whole conversation), else its
    ``output`` (one response object)."""
    return record.get("items", record.get("output"))


def convert_responses(
    record: Mapping[str, Any], question_id: str, context: ItemContext
) -> dict[str, Any]:
    """Responses API items (``items``, or a response object's ``output``) as a response."""
    field_name = "items" if "items" in record else "output"
    items = as_list(responses_items(record), field_name)
    calls, answer = Calls(context), None
    for index, item in enumerate(items):
        path = f"{field_name}[{index}]"
        if not isinstance(item, Mapping):
            context.problem(path, f"expected an item, got {describe_kind(item)}; ignored")
            continue
        kind = item.get("type")
        if kind == "message" and item.get("role", "assistant") == "assistant":
            text = content_text(item.get("content"))
            if text is not None and text.strip():
                answer = text
        elif kind in ("function_call", "custom_tool_call"):
            raw = item.get("arguments") if kind == "function_call" else item.get("input")
            args = parse_arguments(raw, context, f"{path}.arguments")
            calls.call(item.get("name"), item.get("call_id", item.get("id")), args, path)
            if item.get("status") == "incomplete":
                calls.result(item.get("call_id"), None, "the call is incomplete", path)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            _output(item, calls, path)
        elif kind == "mcp_call":
            _mcp_call(item, calls, context, path)
    if not items and field_name == "output" and record.get("status") == "failed":
        raise Unusable("status", "the response failed")
    usage = usage_fields(record.get("usage"), _RESPONSES_USAGE)
    return response_of(record, question_id, calls.finish(), answer, usage)


def _output(item: Mapping[str, Any], calls: Calls, path: str) -> None:
    output = item.get("output")
    text = content_text(output)
    error = "the tool call is incomplete" if item.get("status") == "incomplete" else None
    calls.result(item.get("call_id"), text if text is not None else output, error, path)


def _mcp_call(item: Mapping[str, Any], calls: Calls, context: ItemContext, path: str) -> None:
    """A call to an MCP server's tool, made by the API: the call and its result in one."""
    args = parse_arguments(item.get("arguments"), context, f"{path}.arguments")
    call_id = item.get("id")
    calls.call(item.get("name"), call_id, args, path)
    error = item.get("error")
    calls.result(call_id, item.get("output"), str(error) if error else None, path)
