"""Reference datasets and responses: from files or Python objects to validated, typed items.

Two kinds of input, treated differently (docs/inputs.md):

* The **reference dataset** is curated by the user. A structural error in it (not a list of
  templates, a question without ``id``, duplicate ids, a malformed step) raises
  :class:`~graphrag_eval.errors.InputError` before anything is evaluated. A data bug inside a
  step output (unparsable JSON) is only a :class:`Notice`: the step scores as unmatched.
* **Responses** come from the system under test and are messy. Nothing in them raises: a
  malformed response or step gets an error on that item or step, a response for an unknown
  question is a warning, and the rest is evaluated.

Only a run that would evaluate nothing is an error (:func:`check_evaluable`): an empty
reference dataset, or responses none of which is for a reference question.

Every message names the file, the item (question id or line number) and the field. The
user's objects are never mutated; typed objects keep a reference to the original mapping so
results can copy it faithfully.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from graphrag_eval.errors import InputError, locate
from graphrag_eval.files import JSONL_SUFFIXES, BrokenLine, iter_jsonl, read_document

__all__ = [
    "ActualStep",
    "Diagnostics",
    "Notice",
    "ReferenceQuestion",
    "ReferenceStep",
    "Response",
    "ResponseSet",
    "check_evaluable",
    "count_kinds",
    "load_reference",
    "load_responses",
    "parse_reference",
    "parse_responses",
    "unreadable_output_notice",
]

REFERENCE_LABEL = "<reference>"
RESPONSES_LABEL = "<responses>"
SWAP_HINT = "did you swap REFERENCE and RESPONSES?"


# --------------------------------------------------------------------------------------------
# Notices: everything that is reported but does not stop the run


@dataclass(frozen=True, slots=True)
class Notice:
    """A located problem that was handled (counted, reported) without stopping the run.

    ``kind`` groups notices in the run summary: ``missing_response``, ``unknown_response``,
    ``duplicate_response``, ``malformed_response``, ``malformed_step``, ``reference_data``,
    ``unused_field``.
    """

    kind: str
    message: str
    file: str | None = None
    item: str | None = None
    field: str | None = None

    def __str__(self) -> str:
        prefix = locate(self.file, self.item, self.field)
        return f"{prefix}: {self.message}" if prefix else self.message


def unreadable_output_notice(source: str, question_id: object, index: int, why: str) -> Notice:
    """The notice of an actual step whose output could not be read (it scored as no match);
    one wording for an evaluated item and for a kept item read back on ``--resume``."""
    return Notice(
        "unreadable_output",
        f"{why}; scored as no match",
        file=source,
        item=f"question '{question_id}'",
        field=f"actual_steps[{index}]",
    )


@dataclass(slots=True)
class Diagnostics:
    """The notices collected while loading and evaluating one run."""

    notices: list[Notice] = field(default_factory=list)

    def add(self, notice: Notice) -> None:
        self.notices.append(notice)

    def extend(self, notices: Iterable[Notice]) -> None:
        self.notices.extend(notices)


def count_kinds(notices: Iterable[Notice]) -> dict[str, int]:
    """Number of notices per kind, in order of first appearance."""
    return dict(Counter(notice.kind for notice in notices))


# --------------------------------------------------------------------------------------------
# Pydantic shapes: they check types; the dataclasses below carry what evaluation needs


class _Shape(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, coerce_numbers_to_str=True)


class _ReferenceStepShape(_Shape):
    name: str
    args: Any = None
    output: Any = None
    output_media_type: str | None = None
    ordered: bool = False
    required_columns: list[str] | None = None
    ignore_duplicates: bool = True


class _ActualStepShape(_Shape):
    name: str
    status: Literal["success", "error"]
    id: str | None = None
    args: Any = None
    output: Any = None
    error: Any = None
    execution_timestamp: Any = None


class _ResponseShape(_Shape):
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


_REFERENCE_STEP_KEYS = frozenset(_ReferenceStepShape.model_fields) | {"id", "matches"}
_QUESTION_KEYS = frozenset(
    {"id", "question_text", "reference_answer", "reference_steps", "reference_contexts"}
)
_TEMPLATE_KEYS = frozenset({"template_id", "questions"})
_RESPONSE_KEYS = frozenset(_ResponseShape.model_fields)


def _first_error(exc: ValidationError, prefix: str = "") -> tuple[str, str]:
    """``(field path, message)`` of a pydantic error, in our path notation."""
    error = exc.errors()[0]
    return _path(prefix, error["loc"]), _message(error)


def _path(prefix: str, loc: Sequence[int | str]) -> str:
    text = prefix
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part in ("str", "dict[str,any]", "list[any]", "int", "float"):
            continue  # pydantic's union-member labels are noise here
        else:
            text += f".{part}" if text else str(part)
    return text


def _message(error: Mapping[str, Any]) -> str:
    if error["type"] == "missing":
        return "missing"
    value = error.get("input")
    shown = repr(value) if len(repr(value)) <= 60 else f"{type(value).__name__} value"
    return f"{error['msg'][0].lower()}{error['msg'][1:]} (got {shown})"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _kind(value: object) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    if value is None:
        return "nothing"
    return f"a {type(value).__name__}"


# --------------------------------------------------------------------------------------------
# Reference dataset


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
class ReferenceQuestion:
    """One question of the reference dataset, with the template it belongs to."""

    template_id: str
    id: str
    question_text: str
    reference_answer: str | None
    reference_steps: tuple[tuple[ReferenceStep, ...], ...] | None
    reference_contexts: tuple[Any, ...] | None
    raw: Mapping[str, Any]


ReferenceCheck = Callable[[ReferenceStep], str | None]


def load_reference(path: str | Path) -> list[Any]:
    """Read a reference dataset file (YAML or JSON) into plain Python data.

    Raises :class:`InputError` naming the file and line when it cannot be parsed.
    """
    path = Path(path)
    # A reference is never JSON Lines: such a file is most likely the responses.
    hint = (
        f"; a reference dataset is YAML or JSON, not JSON Lines ({SWAP_HINT})"
        if path.suffix.lower() in JSONL_SUFFIXES
        else ""
    )
    try:
        data = read_document(path)
    except FileNotFoundError:
        raise InputError("file not found", file=str(path)) from None
    except ValueError as exc:
        raise InputError(f"{exc}{hint}", file=str(path)) from None
    if _looks_like_responses(data):
        raise InputError(_RESPONSES_NOT_REFERENCE, file=str(path))
    if not isinstance(data, list):
        raise InputError(f"expected a list of templates, got {_kind(data)}{hint}", file=str(path))
    return data


_RESPONSES_NOT_REFERENCE = (
    f"this looks like a responses file, not a reference dataset (a list of templates); {SWAP_HINT}"
)
_RESPONSE_ONLY_KEYS = frozenset({"question_id", "actual_answer", "actual_steps"})


def _is_response_like(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and not value.keys() & _TEMPLATE_KEYS
        and bool(value.keys() & _RESPONSE_ONLY_KEYS)
    )


def _looks_like_responses(data: Any) -> bool:
    """Whether data given as the reference is rather responses: a list whose first item, or
    a mapping whose first value (a dict by question id), or a mapping that itself is a
    response. Only data that is no reference dataset anyway is ever said to be one."""
    if isinstance(data, list | tuple):
        return bool(data) and _is_response_like(data[0])
    if isinstance(data, Mapping):
        first = next(iter(data.values()), None)
        return _is_response_like(data) or _is_response_like(first)
    return False


def parse_reference(
    data: Any,
    *,
    source: str = REFERENCE_LABEL,
    check_step: ReferenceCheck | None = None,
    diagnostics: Diagnostics | None = None,
) -> list[ReferenceQuestion]:
    """Validate a reference dataset (a list of templates) into questions, in dataset order.

    ``check_step`` inspects each step's data (for example that a SPARQL output parses) and
    returns a problem or ``None``; problems become ``reference_data`` notices and the step
    scores as unmatched. Structural errors raise :class:`InputError`.
    """
    diagnostics = diagnostics if diagnostics is not None else Diagnostics()
    if _looks_like_responses(data):
        raise InputError(_RESPONSES_NOT_REFERENCE, file=source)
    if not isinstance(data, list | tuple):
        raise InputError(f"expected a list of templates, got {_kind(data)}", file=source)
    if not data:
        raise InputError(
            "the reference dataset is empty (no templates): nothing to evaluate", file=source
        )
    questions: list[ReferenceQuestion] = []
    seen_questions: dict[str, str] = {}
    seen_templates: set[str] = set()
    unknown_keys: Counter[str] = Counter()
    for t_index, template in enumerate(data):
        where = f"templates[{t_index}]"
        if not isinstance(template, Mapping):
            raise InputError(
                f"expected a template mapping, got {_kind(template)}", file=source, item=where
            )
        template_id = template.get("template_id")
        if template_id is None or isinstance(template_id, bool | Mapping | list):
            raise InputError(
                "missing or not a string", file=source, item=where, field="template_id"
            )
        template_id = str(template_id)
        where = f"template '{template_id}'"
        if template_id in seen_templates:
            raise InputError("duplicate template_id", file=source, item=where, field="template_id")
        seen_templates.add(template_id)
        unknown_keys.update(f"template.{key}" for key in template if key not in _TEMPLATE_KEYS)
        raw_questions = template.get("questions")
        if not isinstance(raw_questions, list | tuple):
            raise InputError(
                f"expected a list of questions, got {_kind(raw_questions)}",
                file=source,
                item=where,
                field="questions",
            )
        for q_index, raw in enumerate(raw_questions):
            question = _parse_question(raw, template_id, q_index, source, check_step, diagnostics)
            if question.id in seen_questions:
                raise InputError(
                    f"duplicate question id (also in template '{seen_questions[question.id]}')",
                    file=source,
                    item=f"question '{question.id}'",
                    field="id",
                )
            seen_questions[question.id] = template_id
            unknown_keys.update(f"question.{key}" for key in raw if key not in _QUESTION_KEYS)
            questions.append(question)
    if not questions:
        raise InputError(
            f"the reference dataset has no questions ({_count(len(data), 'template')}, "
            "without questions): nothing to evaluate",
            file=source,
        )
    for key, count in unknown_keys.items():
        diagnostics.add(
            Notice(
                "unused_field",
                f"field not used by graphrag-eval, ignored ({_count(count, 'time')})",
                file=source,
                field=key,
            )
        )
    return questions


def _parse_question(
    raw: Any,
    template_id: str,
    index: int,
    source: str,
    check_step: ReferenceCheck | None,
    diagnostics: Diagnostics,
) -> ReferenceQuestion:
    where = f"template '{template_id}', questions[{index}]"
    if not isinstance(raw, Mapping):
        raise InputError(f"expected a question mapping, got {_kind(raw)}", file=source, item=where)
    qid = raw.get("id")
    if qid is None or isinstance(qid, bool | Mapping | list) or str(qid) == "":
        raise InputError("missing or not a string", file=source, item=where, field="id")
    qid = str(qid)
    where = f"question '{qid}'"
    text = raw.get("question_text")
    if not isinstance(text, str) or not text.strip():
        raise InputError(
            "missing or not a non-empty string", file=source, item=where, field="question_text"
        )
    answer = raw.get("reference_answer")
    if answer is not None and not isinstance(answer, str):
        if isinstance(answer, int | float) and not isinstance(answer, bool):
            answer = str(answer)
        else:
            raise InputError(
                f"expected a string, got {_kind(answer)}",
                file=source,
                item=where,
                field="reference_answer",
            )
    steps = _parse_reference_steps(
        raw.get("reference_steps"), where, source, check_step, diagnostics
    )
    contexts = raw.get("reference_contexts")
    if contexts is not None and not isinstance(contexts, list | tuple):
        raise InputError(
            f"expected a list of contexts, got {_kind(contexts)}",
            file=source,
            item=where,
            field="reference_contexts",
        )
    return ReferenceQuestion(
        template_id=template_id,
        id=qid,
        question_text=text,
        reference_answer=answer,
        reference_steps=steps,
        reference_contexts=tuple(contexts) if contexts is not None else None,
        raw=raw,
    )


def _parse_reference_steps(
    value: Any,
    where: str,
    source: str,
    check_step: ReferenceCheck | None,
    diagnostics: Diagnostics,
) -> tuple[tuple[ReferenceStep, ...], ...] | None:
    if value is None:
        return None
    if not isinstance(value, list | tuple):
        raise InputError(
            f"expected a list of step groups, got {_kind(value)}",
            file=source,
            item=where,
            field="reference_steps",
        )
    groups: list[tuple[ReferenceStep, ...]] = []
    for g_index, group in enumerate(value):
        field_path = f"reference_steps[{g_index}]"
        if not isinstance(group, list | tuple):
            hint = (
                " (steps are grouped: write reference_steps as a list of lists of steps)"
                if isinstance(group, Mapping)
                else ""
            )
            raise InputError(
                f"expected a group (list of steps), got {_kind(group)}{hint}",
                file=source,
                item=where,
                field=field_path,
            )
        if not group:
            raise InputError("empty step group", file=source, item=where, field=field_path)
        steps = []
        for s_index, raw_step in enumerate(group):
            step_path = f"{field_path}[{s_index}]"
            if not isinstance(raw_step, Mapping):
                raise InputError(
                    f"expected a step mapping, got {_kind(raw_step)}",
                    file=source,
                    item=where,
                    field=step_path,
                )
            try:
                shape = _ReferenceStepShape.model_validate(raw_step)
            except ValidationError as exc:
                field_name, message = _first_error(exc, step_path)
                raise InputError(message, file=source, item=where, field=field_name) from None
            unknown = sorted(key for key in raw_step if key not in _REFERENCE_STEP_KEYS)
            if unknown:
                diagnostics.add(
                    Notice(
                        "unused_field",
                        "field not used by graphrag-eval, ignored",
                        file=source,
                        item=where,
                        field=f"{step_path}.{', '.join(unknown)}",
                    )
                )
            required = shape.required_columns
            if required is not None and len(set(required)) < len(required):
                repeated = sorted({name for name in required if required.count(name) > 1})
                diagnostics.add(
                    Notice(
                        "reference_data",
                        f"lists {', '.join(repeated)} more than once; each is required once",
                        file=source,
                        item=where,
                        field=f"{step_path}.required_columns",
                    )
                )
            step = ReferenceStep(
                name=shape.name,
                args=shape.args,
                output=shape.output,
                output_media_type=shape.output_media_type,
                ordered=shape.ordered,
                required_columns=tuple(dict.fromkeys(required)) if required is not None else None,
                ignore_duplicates=shape.ignore_duplicates,
                raw=raw_step,
                location=locate(source, where, step_path),
            )
            problem = check_step(step) if check_step is not None else None
            if problem is not None:
                diagnostics.add(
                    Notice(
                        "reference_data",
                        f"{problem}; this step cannot match",
                        file=source,
                        item=where,
                        field=step_path,
                    )
                )
                step = _with_problem(step, problem)
            steps.append(step)
        groups.append(tuple(steps))
    return tuple(groups)


def _with_problem(step: ReferenceStep, problem: str) -> ReferenceStep:
    return dataclasses.replace(step, problem=problem, memo={})


# --------------------------------------------------------------------------------------------
# Responses


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


@dataclass(frozen=True, slots=True, eq=False)
class Response:
    """A validated response. ``is_error`` marks an error record (or an unusable response);
    ``problems`` lists located messages about fields that were dropped as malformed."""

    question_id: str
    is_error: bool
    error: str | None
    actual_answer: str | None
    actual_steps: tuple[ActualStep, ...] | None
    input_tokens: int | None
    output_tokens: int | None
    total_tokens: int | None
    elapsed_sec: float | None
    retrieved_contexts: tuple[Any, ...] | None
    raw: Any
    problems: tuple[str, ...] = ()


@dataclass(slots=True)
class ResponseSet:
    """Responses by question id, with the notices produced while reading them."""

    responses: dict[str, Response]
    notices: list[Notice]
    source: str
    records: int = 0
    """How many records (lines, list items, dict entries) the input had, readable or not."""


def load_responses(path: str | Path) -> ResponseSet:
    """Read and validate a responses file: JSON (a dict by question id, or a list), JSONL (one
    response per line) or YAML. A broken JSONL line or malformed response is recorded, not
    raised; only an unreadable file raises :class:`InputError`."""
    path = Path(path)
    label = str(path)
    if path.suffix.lower() in JSONL_SUFFIXES:
        try:
            lines = list(iter_jsonl(path))  # a line that is not UTF-8 is a broken line
        except FileNotFoundError:
            raise InputError("file not found", file=label) from None
        return _parse_response_records(
            ((f"line {number}", value) for number, value in lines), label
        )
    try:
        data = read_document(path)
    except FileNotFoundError:
        raise InputError("file not found", file=label) from None
    except ValueError as exc:  # not JSON/YAML, or not UTF-8: the file cannot be split
        raise InputError(str(exc), file=label) from None
    return parse_responses(data, source=label)


def parse_responses(data: Any, *, source: str = RESPONSES_LABEL) -> ResponseSet:
    """Validate responses given as a dict ``question_id -> response`` or a list of responses.

    Only a value that is neither raises :class:`InputError`; everything else is recorded.
    """
    if isinstance(data, ResponseSet):
        return data
    if isinstance(data, Mapping):
        return _parse_response_records(
            ((f"question '{key}'", value) for key, value in data.items()),
            source,
            keys=[str(key) for key in data],
        )
    if isinstance(data, list | tuple):
        return _parse_response_records(
            ((f"responses[{index}]", value) for index, value in enumerate(data)), source
        )
    raise InputError(
        f"expected a mapping of question id to response, or a list of responses, got {_kind(data)}",
        file=source,
    )


_QUESTION_ID_IN_TEXT = re.compile(r'"question_id"\s*:\s*"([^"\\]+)"')


def _parse_response_records(
    records: Iterable[tuple[str, Any]],
    source: str,
    keys: list[str] | None = None,
) -> ResponseSet:
    responses: dict[str, Response] = {}
    notices: list[Notice] = []
    unused: Counter[str] = Counter()
    position = -1
    for position, (where, value) in enumerate(records):
        key = keys[position] if keys is not None else None
        if isinstance(value, BrokenLine):
            # Attribute a broken line to its question when the id is still readable, so the
            # question shows the error instead of being merely "missing".
            qid = question_id_in_text(value.text)
            item = f"{where} (question '{qid}')" if qid else where
            notices.append(Notice("malformed_response", str(value), file=source, item=item))
            if qid is not None and qid not in responses:
                message = locate(source, item, None) + f": unparsable response: {value}"
                responses[qid] = _unusable(qid, None, message)
            continue
        response = _parse_response(value, where, source, key, notices)
        if response is None:
            continue
        if isinstance(value, Mapping):
            unused.update(k for k in value if k not in _RESPONSE_KEYS)
        if response.question_id in responses:
            notices.append(
                Notice(
                    "duplicate_response",
                    "another response for this question came earlier; the later one is used",
                    file=source,
                    item=f"{where} (question '{response.question_id}')",
                )
            )
        responses[response.question_id] = response
    for name, count in unused.items():
        notices.append(
            Notice(
                "unused_field",
                f"field not used by graphrag-eval, ignored ({_count(count, 'response')})",
                file=source,
                field=name,
            )
        )
    return ResponseSet(responses=responses, notices=notices, source=source, records=position + 1)


def _parse_response(
    value: Any,
    where: str,
    source: str,
    key: str | None,
    notices: list[Notice],
) -> Response | None:
    if not isinstance(value, Mapping):
        message = f"expected a response mapping, got {_kind(value)}"
        notices.append(Notice("malformed_response", message, file=source, item=where))
        # In a dict the key still says which question failed; in a list nothing does.
        return None if key is None else _unusable(key, value, f"{locate(source, where)}: {message}")

    problems: list[str] = []
    data = dict(value)
    if key is not None:
        qid = data.get("question_id")
        if qid is None:
            data["question_id"] = key
        elif str(qid) != key:
            problem = f"question_id {qid!r} differs from its key; the key is used"
            problems.append(locate(source, where, "question_id") + ": " + problem)
            data["question_id"] = key
    item = where
    if isinstance(data.get("question_id"), str | int) and not isinstance(data["question_id"], bool):
        item = where if key is not None else f"{where} (question '{data['question_id']}')"
    # Validate; drop each malformed top-level field (recording it) and try again.
    shape: _ResponseShape | None = None
    for _ in range(len(data) + 1):
        try:
            shape = _ResponseShape.model_validate(data)
            break
        except ValidationError as exc:
            error = exc.errors()[0]
            top = error["loc"][0] if error["loc"] else None
            path = _path("", error["loc"])
            message = _message(error)
            if top == "question_id" or top is None:
                if "question_id" not in data and data.keys() & _TEMPLATE_KEYS:
                    message += f" (this looks like a reference template; {SWAP_HINT})"
                notices.append(
                    Notice(
                        "malformed_response", message, file=source, item=item, field="question_id"
                    )
                )
                return None
            notices.append(
                Notice(
                    "malformed_response",
                    f"{message}; field ignored",
                    file=source,
                    item=item,
                    field=path,
                )
            )
            problems.append(locate(source, item, path) + f": {message}")
            data.pop(str(top), None)
    if shape is None:  # pragma: no cover - every loop pass removes a field
        return None

    steps: tuple[ActualStep, ...] | None = None
    if shape.actual_steps is not None:
        steps = tuple(
            _parse_actual_step(index, raw, item, source, notices)
            for index, raw in enumerate(shape.actual_steps)
        )
    is_error = shape.status == "error" or (shape.error is not None and shape.status != "success")
    if shape.status not in (None, "success", "error"):
        problem = f"unknown status {shape.status!r} (expected 'success' or 'error')"
        notices.append(
            Notice("malformed_response", problem, file=source, item=item, field="status")
        )
        problems.append(locate(source, item, "status") + ": " + problem)
    error_text = None
    if is_error:
        error_text = (
            str(shape.error) if shape.error is not None else "error response without a message"
        )
    return Response(
        question_id=shape.question_id,
        is_error=is_error,
        error=error_text,
        actual_answer=shape.actual_answer,
        actual_steps=steps,
        input_tokens=shape.input_tokens,
        output_tokens=shape.output_tokens,
        total_tokens=shape.total_tokens,
        elapsed_sec=shape.elapsed_sec,
        retrieved_contexts=(
            tuple(shape.retrieved_contexts) if shape.retrieved_contexts is not None else None
        ),
        raw=value,
        problems=tuple(problems),
    )


def _unusable(question_id: str, raw: Any, message: str) -> Response:
    return Response(
        question_id=question_id,
        is_error=True,
        error=message,
        actual_answer=None,
        actual_steps=None,
        input_tokens=None,
        output_tokens=None,
        total_tokens=None,
        elapsed_sec=None,
        retrieved_contexts=None,
        raw=raw,
        problems=(message,),
    )


def _parse_actual_step(
    index: int, raw: Any, item: str, source: str, notices: list[Notice]
) -> ActualStep:
    step_path = f"actual_steps[{index}]"
    problem: str | None = None
    if not isinstance(raw, Mapping):
        problem = f"expected a step mapping, got {_kind(raw)}"
        field_path = step_path
    else:
        try:
            shape = _ActualStepShape.model_validate(raw)
        except ValidationError as exc:
            field_path, problem = _first_error(exc, step_path)
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
        problem=locate(None, None, field_path) + f": {problem}",
    )


def check_evaluable(questions: Sequence[ReferenceQuestion], responses: ResponseSet) -> None:
    """Raise :class:`InputError` when a run of these inputs would evaluate nothing (see
    docs/inputs.md): no reference question, or responses none of which is for a reference
    question (most likely the two files were swapped, or belong to different datasets).

    Responses that are merely absent (an empty file) are not an error: every question is
    evaluated as missing, and counted so.
    """
    if not questions:
        raise InputError("the reference dataset has no questions: nothing to evaluate")
    known = {question.id for question in questions}
    if any(question_id in known for question_id in responses.responses):
        return
    if responses.responses:
        count = len(responses.responses)
        which = "its only response is not" if count == 1 else f"none of its {count} responses is"
        raise InputError(
            f"{which} for a question of the reference dataset, so nothing would be evaluated "
            f"({SWAP_HINT})",
            file=responses.source,
        )
    if responses.records:
        first = next((n for n in responses.notices if n.kind == "malformed_response"), None)
        reason = f"; {locate(None, first.item, first.field)}: {first.message}" if first else ""
        which = (
            "its only record is not"
            if responses.records == 1
            else f"none of its {responses.records} records is"
        )
        raise InputError(
            f"{which} a usable response, so nothing would be evaluated{reason}",
            file=responses.source,
        )


def question_id_in_text(text: str) -> str | None:
    """The ``question_id`` a broken JSON line still shows, if any."""
    match = _QUESTION_ID_IN_TEXT.search(text)
    return match.group(1) if match else None
