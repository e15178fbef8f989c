"""Replies with a fixed shape: the strict JSON schema asked for with ``response_format``,
the same schema described in the prompt for endpoints that reject it, and the re-ask that
shows the judge what was wrong with a malformed reply. See docs/llm.md (what the engine
does with each call).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from graphrag_eval.llm.retrying import status_text

__all__ = [
    "REASK",
    "about_structured_output",
    "reask_messages",
    "response_format",
    "strict_schema",
    "with_schema_in_prompt",
]

REASK = (
    "Your reply could not be used: {problem}. Reply again to the request above, in exactly "
    "the format it asks for, with nothing else."
)


@functools.cache
def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema made acceptable to strict structured output: every object
    closed and every property required. Built once per model; read-only."""
    schema = model.model_json_schema()

    def visit(node: Any) -> Any:
        if isinstance(node, dict):
            node = {key: visit(value) for key, value in node.items()}
            if node.get("type") == "object" and "properties" in node:
                node["additionalProperties"] = False
                node["required"] = list(node["properties"])
            return node
        if isinstance(node, list):
            return [visit(item) for item in node]
        return node

    result: dict[str, Any] = visit(schema)
    return result


def response_format(name: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``response_format`` request parameter asking for a reply following ``schema``."""
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": schema, "strict": True},
    }


def with_schema_in_prompt(
    messages: Sequence[Mapping[str, str]], name: str, schema: Mapping[str, Any]
) -> list[dict[str, str]]:
    """``messages`` with the schema described at the end of the last one."""
    note = (
        "\n\nReply with only a JSON object (no code fence, no other text) that follows this "
        f"JSON schema (schema name: {name}):\n{json.dumps(schema, ensure_ascii=False)}"
    )
    last = dict(messages[-1])
    last["content"] = last["content"] + note
    return [*(dict(message) for message in messages[:-1]), last]


def about_structured_output(exc: Any) -> bool:
    """Whether a 400 complains about the structured-output request (not, say, the prompt's
    length)."""
    body = getattr(exc, "body", None)
    param = body.get("param") if isinstance(body, Mapping) else None
    text = f"{param} {status_text(exc)}".lower()
    return any(word in text for word in ("response_format", "json_schema", "structured", "schema"))


def reask_messages(
    sent: Sequence[Mapping[str, str]], reply: str, problem: object
) -> list[dict[str, str]]:
    """The conversation of the one re-ask: the request, the unusable reply, what is wrong."""
    return [
        *(dict(message) for message in sent),
        {"role": "assistant", "content": reply},
        {"role": "user", "content": REASK.format(problem=problem)},
    ]
