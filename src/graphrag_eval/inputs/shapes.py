"""The pydantic shapes of input records and the wording of their validation errors.

The shapes only check types (docs/inputs.md); the dataclasses of :mod:`.steps`,
:mod:`.reference` and :mod:`.responses` carry what evaluation needs. Messages use our field
path notation (``reference_steps[0][1].output``) and say what was found instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

__all__ = [
    "REFERENCE_LABEL",
    "RESPONSES_LABEL",
    "SWAP_HINT",
    "TEMPLATE_KEYS",
    "ActualStepShape",
    "ReferenceStepShape",
    "ResponseShape",
    "count_noun",
    "describe_kind",
    "error_message",
    "error_path",
    "first_error",
    "unsupported_format",
]

REFERENCE_LABEL = "<reference>"
RESPONSES_LABEL = "<responses>"
SWAP_HINT = "did you swap REFERENCE and RESPONSES?"
TEMPLATE_KEYS = frozenset({"template_id", "questions"})


class _Shape(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, coerce_numbers_to_str=True)


class ReferenceStepShape(_Shape):
    """The fields of a reference step (docs/inputs.md)."""

    name: str
    args: Any = None
    output: Any = None
    output_media_type: str | None = None
    ordered: bool = False
    required_columns: list[str] | None = None
    ignore_duplicates: bool = True


class ActualStepShape(_Shape):
    """The fields of an actual step (docs/inputs.md)."""

    name: str
    status: Literal["success", "error"]
    id: str | None = None
    args: Any = None
    output: Any = None
    error: Any = None
    execution_timestamp: Any = None


class ResponseShape(_Shape):
    """The fields of a response (docs/inputs.md)."""

    question_id: str
    status: str | None = None
    error: Any = None
    actual_answer: str | None = None
    actual_steps: list[Any] | None = None
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    total_tokens: int | None = Field(default=None, ge=0)
    elapsed_sec: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    retrieved_contexts: list[str | dict[str, Any]] | None = None

    @field_validator("input_tokens", "output_tokens", "total_tokens", "elapsed_sec", mode="before")
    @classmethod
    def _not_a_boolean(cls, value: Any) -> Any:
        if isinstance(value, bool):  # true would otherwise count as 1
            raise ValueError("a boolean is not a number")
        return value


def first_error(exc: ValidationError, prefix: str = "") -> tuple[str, str]:
    """``(field path, message)`` of a pydantic error, in our path notation."""
    error = exc.errors()[0]
    return error_path(prefix, error["loc"]), error_message(error)


def error_path(prefix: str, loc: Sequence[int | str]) -> str:
    """A pydantic error location as a field path below ``prefix``."""
    text = prefix
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part in ("str", "dict[str,any]", "list[any]", "int", "float"):
            continue  # pydantic's union-member labels are noise here
        else:
            text += f".{part}" if text else str(part)
    return text


def error_message(error: Mapping[str, Any]) -> str:
    """A pydantic error as a short message saying what was found."""
    if error["type"] == "missing":
        return "missing"
    value = error.get("input")
    shown = repr(value) if len(repr(value)) <= 60 else f"{type(value).__name__} value"
    return f"{error['msg'][0].lower()}{error['msg'][1:]} (got {shown})"


def count_noun(number: int, noun: str) -> str:
    """``1 template``, ``2 templates``."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def describe_kind(value: object) -> str:
    """What a value is, for "expected X, got Y" messages."""
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    if value is None:
        return "nothing"
    return f"a {type(value).__name__}"


_TABLE_SUFFIXES = {".csv": "CSV", ".tsv": "TSV", ".xlsx": "Excel", ".xls": "Excel"}


def unsupported_format(path: Path, supported: str) -> str | None:
    """The message for an input file whose name says it is a table (CSV, TSV, Excel),
    which graphrag-eval does not read: ``supported`` names what it does."""
    kind = _TABLE_SUFFIXES.get(path.suffix.lower())
    return None if kind is None else f"{kind} is not supported: use {supported}"
