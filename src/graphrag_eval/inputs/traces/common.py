"""What every transcript and trace reader shares: the item being converted (where it is,
its notices), the steps it makes, and reading tool arguments and message texts
(docs/integrations.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from graphrag_eval.config.traces import TracesConfig
from graphrag_eval.files.bounded import MAX_DEPTH, check_json_depth
from graphrag_eval.inputs.notices import Notice
from graphrag_eval.inputs.shapes import describe_kind

__all__ = [
    "ItemContext",
    "Unusable",
    "as_list",
    "as_mapping",
    "content_text",
    "parse_arguments",
    "question_id_of",
    "usage_fields",
]


class Unusable(Exception):
    """An item that cannot be converted at all: ``field`` is where, ``message`` why."""

    def __init__(self, field_path: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field_path
        self.message = message


@dataclass(slots=True)
class ItemContext:
    """One item (a conversation, a trace) being converted: where it is in the file, the
    notices its problems give, and the tool names to map."""

    source: str
    where: str
    config: TracesConfig
    notices: list[Notice] = field(default_factory=list)

    def problem(self, field_path: str, message: str, kind: str = "malformed_step") -> None:
        self.notices.append(
            Notice(kind, message, file=self.source, item=self.where, field=field_path)
        )

    def step(
        self,
        name: str,
        step_id: str | None,
        args: Any,
        output: Any,
        error: str | None,
    ) -> dict[str, Any]:
        """A step of our own format (docs/inputs.md), its tool name mapped."""
        step: dict[str, Any] = {
            "name": self.config.tool_names.get(name, name),
            "status": "error" if error is not None else "success",
        }
        if step_id is not None:
            step["id"] = step_id
        if args is not None:
            step["args"] = args
        if output is not None:
            step["output"] = output
        if error is not None:
            step["error"] = error
        return step


def as_mapping(value: Any, field_path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise Unusable(field_path, f"expected a mapping, got {describe_kind(value)}")
    return value


def as_list(value: Any, field_path: str) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise Unusable(field_path, f"expected a list, got {describe_kind(value)}")
    return list(value)


def question_id_of(record: Mapping[str, Any], key: str | None) -> str | None:
    """The question id of a transcript: the record's ``question_id``, else its
    ``metadata.question_id``, else the key it has in a mapping by question id."""
    value = record.get("question_id")
    metadata = record.get("metadata")
    if value is None and isinstance(metadata, Mapping):
        value = metadata.get("question_id")
    if value is None:
        value = key
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        return None
    return str(value)


def parse_arguments(value: Any, context: ItemContext, field_path: str) -> Any:
    """Tool arguments: a JSON object given as text is parsed; text that is no JSON is kept
    as it is, with a notice."""
    if not isinstance(value, str):
        return value
    if not value.strip():
        return {}
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        context.problem(field_path, "arguments are not valid JSON; kept as text")
        return value
    # Each level of nesting takes two characters: a short text cannot be too deep.
    if len(value) > 2 * MAX_DEPTH and check_json_depth(parsed, MAX_DEPTH) is not None:
        context.problem(field_path, f"arguments nested more than {MAX_DEPTH} levels; kept as text")
        return value
    return parsed


def content_text(content: Any) -> str | None:
    """The text of a message's content: a string, or the text parts of a list of parts
    (``{"type": "text"|"output_text", "text": ...}``, OpenAI's ``{"type": "refusal",
    "refusal": ...}``), joined; ``None`` when it has none."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list | tuple):
        return None
    texts = [
        part
        if isinstance(part, str)
        else part.get("refusal")
        if part.get("type") == "refusal"
        else part.get("text")
        for part in content
        if isinstance(part, str | Mapping)
    ]
    found = [text for text in texts if isinstance(text, str)]
    return "".join(found) if found else None


def usage_fields(usage: Any, names: tuple[str, str, str]) -> dict[str, int]:
    """``input_tokens``, ``output_tokens``, ``total_tokens`` from a usage mapping whose keys
    for them are ``names``; a value that is not a count is left out."""
    if not isinstance(usage, Mapping):
        return {}
    found: dict[str, int] = {}
    for ours, theirs in zip(("input_tokens", "output_tokens", "total_tokens"), names, strict=True):
        value = usage.get(theirs)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            found[ours] = value
    return found
