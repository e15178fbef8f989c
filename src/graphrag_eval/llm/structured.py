"""Replies with a fixed shape: the strict JSON schema asked for with ``response_format``,
the same schema described in the prompt for endpoints that reject it, and the re-ask that
shows the judge what was wrong with a malformed reply. See docs/llm.md (what the engine
does with each call).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from pydantic import BaseModel

from graphrag_eval.llm.retrying import status_text

__all__ = [
    "REASK",
    "TIGHT_KEYWORDS",
    "ListShape",
    "about_structured_output",
    "reask_messages",
    "response_format",
    "strict_schema",
    "tightened",
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


TIGHT_KEYWORDS = ("enum", "minItems", "maxItems")
"""The keywords :func:`tightened` adds, which some endpoints' structured output rejects."""


@dataclass(frozen=True, slots=True)
class ListShape:
    """What a list reply must hold, for a schema as tight as the endpoint takes: the list
    ``field`` of the reply object has exactly ``len(indexes)`` entries (or ``count``, for a
    list without indexes), and each entry's ``index`` names one of ``indexes``."""

    field: str
    indexes: tuple[int, ...] = ()
    index: str | None = None
    """The entry's property naming the item it is about (``claim``, ``context``...)."""
    count: int | None = None
    """The length of a list without indexes (the questions of ``answer_relevance``)."""


def tightened(schema: Mapping[str, Any], shape: ListShape | None) -> dict[str, Any]:
    """``schema`` (a :func:`strict_schema`) with the list of ``shape`` limited to the asked
    length (``minItems``/``maxItems``) and its entries' index to the asked items (``enum``);
    a copy, ``schema`` is shared."""
    # A JSON round trip copies a JSON schema several times faster than copy.deepcopy.
    result: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(schema))
    if shape is None:
        return result
    array = result.get("properties", {}).get(shape.field)
    if not isinstance(array, dict) or array.get("type") != "array":
        return result
    length = len(shape.indexes) if shape.index is not None else shape.count
    if length:
        array["minItems"] = array["maxItems"] = length
    entry = array.get("items", {})
    reference = entry.get("$ref", "") if isinstance(entry, dict) else ""
    if reference.startswith("#/$defs/"):
        entry = result.get("$defs", {}).get(reference.removeprefix("#/$defs/"), {})
    index = entry.get("properties", {}).get(shape.index) if shape.index is not None else None
    if isinstance(index, dict) and shape.indexes:
        index["enum"] = list(shape.indexes)
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
