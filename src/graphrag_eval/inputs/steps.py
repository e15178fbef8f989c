"""Reference and actual steps: their typed models and how one raw step becomes one
(docs/inputs.md, docs/steps.md).

A malformed reference step is a structural error of the dataset (:class:`InputError`); a
reference step whose data a match rule cannot use (``check_step``) and a malformed actual
step are notices: the step is kept and never matches.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import ValidationError

from graphrag_eval.errors import InputError, locate
from graphrag_eval.inputs.notices import Diagnostics, Notice, unused_field
from graphrag_eval.inputs.shapes import (
    ActualStepShape,
    ReferenceStepShape,
    describe_kind,
    first_error,
)

__all__ = [
    "ActualStep",
    "ReferenceCheck",
    "ReferenceStep",
    "parse_actual_step",
    "parse_reference_steps",
]

_REFERENCE_STEP_KEYS = frozenset(ReferenceStepShape.model_fields) | {"id", "matches"}


@dataclass(frozen=True, slots=True, eq=False)
class ReferenceStep:
    """One expected step. ``problem`` is set when the step's own data is broken (for example
    its output is not valid JSON): such a step is reported and never matches."""

    name: str
    args: Any
    output: Any
    output_media_type: str | None
    ordered: bool
    required_columns: tuple[str, ...] | None
    ignore_duplicates: bool
    raw: Mapping[str, Any]
    location: str
    problem: str | None = None
    memo: dict[str, Any] = field(default_factory=dict, repr=False)
    """Work derived from this step's data (a parsed output), kept by match rules so it is
    done once; never part of the input."""


@dataclass(frozen=True, slots=True, eq=False)
class ActualStep:
    """One step the system under test executed. ``problem`` is set for a malformed step: it is
    kept in the output with an ``input_error`` and never matches."""

    index: int
    name: str | None
    status: str | None
    id: str | None
    args: Any
    output: Any
    execution_timestamp: Any
    raw: Any
    problem: str | None = None
    memo: dict[str, Any] = field(default_factory=dict, repr=False)
    """Work derived from this step's output, kept by match rules so it is done once."""

    @property
    def succeeded(self) -> bool:
        return self.problem is None and self.status == "success"

    @property
    def label(self) -> str:
        """The step's id, or its position when it has none (what ``matches`` refers to)."""
        return self.id if self.id is not None else f"actual_steps[{self.index}]"


class ReferenceCheck(Protocol):
    """Inspects a reference step on its own and returns its problem, or ``None``.

    A check may also have a ``reference_options`` attribute: the extra reference-step keys
    the match rules read (docs/steps.md), which are then not reported as unused fields.
    """

    def __call__(self, step: ReferenceStep, /) -> str | None: ...


@dataclass(frozen=True, slots=True)
class _StepContext:
    """Where the steps of one question come from, and what to do with their problems."""

    source: str
    where: str
    check_step: ReferenceCheck | None
    known_keys: Collection[str]
    diagnostics: Diagnostics

    def error(self, message: str, field_path: str) -> InputError:
        return InputError(message, file=self.source, item=self.where, field=field_path)

    def notice(self, kind: str, message: str, field_path: str) -> None:
        self.diagnostics.add(
            Notice(kind, message, file=self.source, item=self.where, field=field_path)
        )


def parse_reference_steps(
    value: Any,
    where: str,
    source: str,
    check_step: ReferenceCheck | None,
    diagnostics: Diagnostics,
) -> tuple[tuple[ReferenceStep, ...], ...] | None:
    """A question's ``reference_steps`` (a list of groups of steps) as typed steps."""
    if value is None:
        return None
    options = getattr(check_step, "reference_options", ())
    context = _StepContext(
        source, where, check_step, _REFERENCE_STEP_KEYS | frozenset(options), diagnostics
    )
    if not isinstance(value, list | tuple):
        raise context.error(
            f"expected a list of step groups, got {describe_kind(value)}", "reference_steps"
        )
    return tuple(_parse_group(group, index, context) for index, group in enumerate(value))


def _parse_group(group: Any, index: int, context: _StepContext) -> tuple[ReferenceStep, ...]:
    field_path = f"reference_steps[{index}]"
    if not isinstance(group, list | tuple):
        hint = (
            " (steps are grouped: write reference_steps as a list of lists of steps)"
            if isinstance(group, Mapping)
            else ""
        )
        raise context.error(
            f"expected a group (list of steps), got {describe_kind(group)}{hint}", field_path
        )
    if not group:
        raise context.error("empty step group", field_path)
    return tuple(
        _parse_reference_step(raw, f"{field_path}[{s_index}]", context)
        for s_index, raw in enumerate(group)
    )


def _parse_reference_step(raw: Any, step_path: str, context: _StepContext) -> ReferenceStep:
    if not isinstance(raw, Mapping):
        raise context.error(f"expected a step mapping, got {describe_kind(raw)}", step_path)
    try:
        shape = ReferenceStepShape.model_validate(raw)
    except ValidationError as exc:
        field_name, message = first_error(exc, step_path)
        raise context.error(message, field_name) from None
    unknown = sorted(key for key in raw if key not in context.known_keys)
    if unknown:
        context.diagnostics.add(
            unused_field(context.source, f"{step_path}.{', '.join(unknown)}", item=context.where)
        )
    required = shape.required_columns
    if required is not None and len(set(required)) < len(required):
        repeated = sorted({name for name in required if required.count(name) > 1})
        context.notice(
            "reference_data",
            f"lists {', '.join(repeated)} more than once; each is required once",
            f"{step_path}.required_columns",
        )
    step = ReferenceStep(
        name=shape.name,
        args=shape.args,
        output=shape.output,
        output_media_type=shape.output_media_type,
        ordered=shape.ordered,
        required_columns=tuple(dict.fromkeys(required)) if required is not None else None,
        ignore_duplicates=shape.ignore_duplicates,
        raw=raw,
        location=locate(context.source, context.where, step_path),
    )
    problem = context.check_step(step) if context.check_step is not None else None
    if problem is None:
        return step
    context.notice("reference_data", f"{problem}; this step cannot match", step_path)
    return dataclasses.replace(step, problem=problem, memo={})


def parse_actual_step(
    index: int, raw: Any, item: str, source: str, notices: list[Notice]
) -> ActualStep:
    """One actual step; a malformed one is kept with its ``problem`` and a notice."""
    step_path = f"actual_steps[{index}]"
    problem: str | None = None
    if not isinstance(raw, Mapping):
        problem = f"expected a step mapping, got {describe_kind(raw)}"
        field_path = step_path
    else:
        try:
            shape = ActualStepShape.model_validate(raw)
        except ValidationError as exc:
            field_path, problem = first_error(exc, step_path)
        else:
            return ActualStep(
                index=index,
                name=shape.name,
                status=shape.status,
                id=shape.id,
                args=shape.args,
                output=shape.output,
                execution_timestamp=shape.execution_timestamp,
                raw=raw,
            )
    notices.append(
        Notice(
            "malformed_step",
            f"{problem}; the step cannot match",
            file=source,
            item=item,
            field=field_path,
        )
    )
    return _malformed_actual_step(index, raw, locate(None, None, field_path) + f": {problem}")


def _malformed_actual_step(index: int, raw: Any, problem: str) -> ActualStep:
    """What can still be read of a malformed step (its name and id label it in the output)."""
    mapping = raw if isinstance(raw, Mapping) else {}
    step_id = mapping.get("id")
    return ActualStep(
        index=index,
        name=mapping.get("name") if isinstance(mapping.get("name"), str) else None,
        status=mapping.get("status") if isinstance(mapping.get("status"), str) else None,
        id=str(step_id) if isinstance(step_id, str | int) else None,
        args=mapping.get("args"),
        output=mapping.get("output"),
        execution_timestamp=mapping.get("execution_timestamp"),
        raw=raw,
        problem=problem,
    )
