"""Readers of judge replies: JSON objects checked against a schema, and the tab-separated
lines of the seed's prompts. Each raises :class:`ReplyError` with what is wrong, which the
engine shows the judge in its one re-ask (docs/llm.md)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

__all__ = ["ReplyError", "decode_value", "json_object", "json_reply", "tab_separated"]

M = TypeVar("M", bound=BaseModel)


class ReplyError(ValueError):
    """Raised by a reply parser: the reply does not have the required form (the message says
    what is wrong, for the re-ask)."""


_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


def _unfenced(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1) if match else text


def json_object(text: str) -> Any:
    """The JSON object of a reply (a code fence or text around it is tolerated);
    :class:`ReplyError` when there is none."""
    body = _unfenced(text.strip())
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        raise ReplyError("the reply is not a JSON object")
    try:
        return json.loads(body[start : end + 1])
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ReplyError(f"the reply is not valid JSON ({exc})") from None


def json_reply(schema: type[M], check: Callable[[M], None] | None = None) -> Callable[[str], M]:
    """A parser of a reply that is one JSON object following ``schema`` (a code fence or text
    around the object is tolerated); ``check`` may raise :class:`ReplyError` for what the
    schema cannot say (list lengths that depend on the input, say)."""

    def parse(text: str) -> M:
        data = json_object(text)
        try:
            value = schema.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "the object"
            raise ReplyError(f"{where}: {first['msg']}") from None
        if check is not None:
            check(value)
        return value

    return parse


def tab_separated(count: int, minimum: int | None = None) -> Callable[[str], list[str]]:
    """A parser of a reply that is one line of ``count`` tab-separated values. The last line
    with the most values is used (models sometimes think aloud first); tabs beyond
    ``count - 1`` stay in the last value. With ``minimum``, a line of fewer values (at least
    ``minimum``, and at least two when ``count`` is more than one: a line without a tab is
    taken for prose) is the first values."""
    least = count if minimum is None else max(1, min(count, minimum))
    if count > 1:
        least = max(least, 2)

    def parse(text: str) -> list[str]:
        # Strip spaces and newlines only: a trailing tab separates an empty last value.
        lines = [line for line in _unfenced(text.strip(" \r\n")).splitlines() if line.strip()]
        found = max((line.count("\t") + 1 for line in lines), default=0)
        if count == 1 and lines:
            return [lines[-1].strip()]
        for line in reversed(lines):
            parts = line.strip(" \r").split("\t")
            if len(parts) >= min(found, count) >= least:
                head = [part.strip() for part in parts[: count - 1]]
                return [*head, "\t".join(parts[count - 1 :]).strip()][: len(parts)]
        raise ReplyError(
            f"expected one line of {count} tab-separated values, found at most {found}"
        )

    return parse


def decode_value(text: str) -> Any:
    """A tab-separated value as JSON when it is JSON (numbers, booleans, lists...), else the
    text itself."""
    try:
        return json.loads(text, parse_constant=_not_json)
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
        return text


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")  # NaN and Infinity: never a metric value
