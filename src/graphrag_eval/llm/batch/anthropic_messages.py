"""The OpenAI chat-completions request the engine makes, as the Anthropic Messages API's
``params`` of one request of a Message Batch, and a batch's ``message`` back as the chat
completion the engine reads (docs/llm.md, "Anthropic Message Batches").

The request is the one LiteLLM makes of the same chat-completions request on the synchronous
path, so a judged run gives the same values in batch mode: the system messages become
``system``, a JSON schema (``response_format``) a forced tool whose ``input_schema`` is the
schema, ``stop`` ``stop_sequences``, and ``max_tokens`` (which the API requires)
:data:`DEFAULT_MAX_TOKENS` when the config sets none. The reply's forced tool call is the
reply's JSON text; ``stop_reason: max_tokens`` is ``finish_reason: length`` (a truncated
reply, which the engine refuses as it does any).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from graphrag_eval.llm.batch.protocol import chat_completion

__all__ = ["DEFAULT_MAX_TOKENS", "message_params", "model_name", "reply_body"]

DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` of a request whose config sets none (the API requires one; LiteLLM's
default for Anthropic)."""

_TOOL_NAME = re.compile(r"[^a-zA-Z0-9_-]")
_OPENAI_ONLY = frozenset(
    {
        "response_format",
        "seed",
        "n",
        "presence_penalty",
        "frequency_penalty",
        "logprobs",
        "top_logprobs",
        "logit_bias",
        "user",
        "parallel_tool_calls",
        "stream",
        "stream_options",
    }
)
"""Chat-completions fields the Messages API has no counterpart for: not sent."""


def model_name(model: str) -> str:
    """The model as the API names it (LiteLLM's ``anthropic/`` prefix taken off)."""
    return model.removeprefix("anthropic/")


def message_params(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The Messages API ``params`` of a chat-completions request body (``model``,
    ``messages`` and the request's parameters)."""
    system = [m["content"] for m in fields["messages"] if m.get("role") == "system"]
    params: dict[str, Any] = {
        "model": model_name(str(fields["model"])),
        "max_tokens": fields.get("max_tokens") or DEFAULT_MAX_TOKENS,
        "messages": [
            {"role": m["role"], "content": m["content"]}
            for m in fields["messages"]
            if m.get("role") != "system"
        ],
    }
    if system:
        params["system"] = "\n\n".join(system)
    extra = fields.get("extra_body")  # the config's request parameters, as LiteLLM has them
    merged = {**fields, **(extra if isinstance(extra, Mapping) else {})}
    for key, value in merged.items():
        if key in ("model", "messages", "max_tokens", "extra_body") or key in _OPENAI_ONLY:
            continue
        if key == "stop":
            params["stop_sequences"] = [value] if isinstance(value, str) else list(value)
        else:
            params[key] = value
    tool = _forced_tool(fields.get("response_format"))
    if tool is not None:
        params["tools"] = [tool]
        params["tool_choice"] = {"type": "tool", "name": tool["name"]}
    return params


def _forced_tool(response_format: Any) -> dict[str, Any] | None:
    """The tool whose call is the reply (``response_format``'s schema), as LiteLLM asks
    Anthropic for a JSON schema."""
    if not isinstance(response_format, Mapping):
        return None
    spec = response_format.get("json_schema")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("schema"), Mapping):
        return None
    name = _TOOL_NAME.sub("_", str(spec.get("name") or "json_reply"))[:64] or "json_reply"
    return {
        "name": name,
        "description": "Reply with this tool: its input is the reply.",
        "input_schema": dict(spec["schema"]),
    }


def reply_body(message: Mapping[str, Any]) -> bytes:
    """A Messages API ``message`` as the chat completion the engine reads (JSON bytes,
    :func:`.protocol.chat_completion`): the input of its tool call (the forced tool: the only
    one a request offers) as the reply's JSON text, else its text blocks; Anthropic's token
    usage as ``prompt_tokens`` (cache reads and writes included) and ``completion_tokens``.
    :class:`ValueError` for what is not a message."""
    content = message.get("content")
    if message.get("type") != "message" or not isinstance(content, list):
        raise ValueError("not a message of the Messages API")
    blocks = [block for block in content if isinstance(block, Mapping)]
    calls = [block for block in blocks if block.get("type") == "tool_use"]
    if calls:
        text = json.dumps(calls[0].get("input"), ensure_ascii=False)
    else:
        text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    usage = message.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    prompt = [
        value
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        if isinstance(value := usage.get(key), int)
    ]
    output = usage.get("output_tokens")
    reported = bool(prompt) and isinstance(output, int)
    return chat_completion(
        text,
        model=str(message.get("model") or ""),
        finish_reason="length" if message.get("stop_reason") == "max_tokens" else "stop",
        prompt_tokens=sum(prompt) if reported else None,
        completion_tokens=output if reported and isinstance(output, int) else None,
    )
