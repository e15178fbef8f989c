"""The reference dataset: from a file or Python data to validated questions (docs/inputs.md).

The dataset is curated by the user, so a structural error in it (not a list of templates, a
question without ``id``, duplicate ids, a malformed step) raises :class:`InputError` before
anything is evaluated; a data bug inside a step output is only a notice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphrag_eval.errors import InputError
from graphrag_eval.files.documents import JSONL_SUFFIXES, read_document
from graphrag_eval.inputs.human_labels import parse_human_labels
from graphrag_eval.inputs.notices import Diagnostics, unused_field
from graphrag_eval.inputs.shapes import (
    REFERENCE_LABEL,
    SWAP_HINT,
    TEMPLATE_KEYS,
    count_noun,
    describe_kind,
    unsupported_format,
)
from graphrag_eval.inputs.steps import ReferenceCheck, ReferenceStep, parse_reference_steps

__all__ = ["CompactQuestion", "ReferenceQuestion", "load_reference", "parse_reference"]

_QUESTION_KEYS = frozenset(
    {
        "id",
        "question_text",
        "reference_answer",
        "reference_steps",
        "reference_contexts",
        "human_labels",
    }
)
_RESPONSES_NOT_REFERENCE = (
    f"this looks like a responses file, not a reference dataset (a list of templates); {SWAP_HINT}"
)
_RESPONSE_ONLY_KEYS = frozenset({"question_id", "actual_answer", "actual_steps"})


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


def load_reference(path: str | Path) -> list[Any]:
    """Read a reference dataset file (YAML or JSON) into plain Python data.

    Raises :class:`InputError` naming the file and line when it cannot be parsed.
    """
    path = Path(path)
    unsupported = unsupported_format(path, "YAML or JSON")
    if unsupported is not None:
        raise InputError(unsupported, file=str(path))
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
        raise InputError(
            f"expected a list of templates, got {describe_kind(data)}{hint}", file=str(path)
        )
    return data


def _is_response_like(value: Any) -> bool:
    """Whether a value reads as a response rather than a template."""
    return (
        isinstance(value, Mapping)
        and not value.keys() & TEMPLATE_KEYS
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


@dataclass(slots=True)
class _DatasetReader:
    """The state of reading one dataset: what was seen so far, for duplicates and notices."""

    source: str
    check_step: ReferenceCheck | None
    diagnostics: Diagnostics
    questions: list[ReferenceQuestion] = field(default_factory=list)
    template_of: dict[str, str] = field(default_factory=dict)
    """The template of each question id seen."""
    templates: set[str] = field(default_factory=set)
    unknown_keys: Counter[str] = field(default_factory=Counter)
    compact: Callable[[Any], Any] | None = None
    """Given, the questions are encoded JSON (``msgspec.Raw``): each is decoded with it,
    validated, and kept as a :class:`CompactQuestion` (docs/architecture.md)."""

    def read_template(self, template: Any, index: int) -> None:
        template_id = self._template_id(template, f"templates[{index}]")
        where = f"template '{template_id}'"
        self.unknown_keys.update(f"template.{key}" for key in template if key not in TEMPLATE_KEYS)
        raw_questions = template.get("questions")
        if not isinstance(raw_questions, list | tuple):
            raise InputError(
                f"expected a list of questions, got {describe_kind(raw_questions)}",
                file=self.source,
                item=where,
                field="questions",
            )
        for q_index, raw in enumerate(raw_questions):
            if self.compact is None:
                self._add_question(_parse_question(raw, template_id, q_index, self), raw)
                continue
            value = self.compact(raw)
            question = _parse_question(value, template_id, q_index, self)
            self._add_question(question, value)
            self.questions[-1] = CompactQuestion.of(question, q_index, raw, self)

    def _template_id(self, template: Any, where: str) -> str:
        if not isinstance(template, Mapping):
            raise InputError(
                f"expected a template mapping, got {describe_kind(template)}",
                file=self.source,
                item=where,
            )
        template_id = template.get("template_id")
        if template_id is None or isinstance(template_id, bool | Mapping | list):
            raise InputError(
                "missing or not a string", file=self.source, item=where, field="template_id"
            )
        template_id = str(template_id)
        if template_id in self.templates:
            raise InputError(
                "duplicate template_id",
                file=self.source,
                item=f"template '{template_id}'",
                field="template_id",
            )
        self.templates.add(template_id)
        return template_id

    def _add_question(self, question: ReferenceQuestion, raw: Mapping[str, Any]) -> None:
        if question.id in self.template_of:
            raise InputError(
                f"duplicate question id (also in template '{self.template_of[question.id]}')",
                file=self.source,
                item=f"question '{question.id}'",
                field="id",
            )
        self.template_of[question.id] = question.template_id
        self.unknown_keys.update(f"question.{key}" for key in raw if key not in _QUESTION_KEYS)
        self.questions.append(question)


@dataclass(frozen=True, slots=True, eq=False)
class CompactQuestion(ReferenceQuestion):
    """A question validated and then kept as its JSON (``encoded``, a view of the file's
    bytes) with only what identifies it: :meth:`load` parses it again, the same way, when it
    is scored, so a large reference costs its file's size, not its parsed objects."""

    index: int = 0
    encoded: Any = None
    source: str = REFERENCE_LABEL
    check_step: ReferenceCheck | None = None
    decode: Callable[[Any], Any] | None = None

    @classmethod
    def of(
        cls, question: ReferenceQuestion, index: int, encoded: Any, reader: _DatasetReader
    ) -> CompactQuestion:
        return cls(
            question.template_id,
            question.id,
            question.question_text,
            None,
            None,
            None,
            {},
            index,
            encoded,
            reader.source,
            reader.check_step,
            reader.compact,
        )

    def load(self) -> ReferenceQuestion:
        """The question parsed again (its notices were taken when it was first read)."""
        assert self.decode is not None
        reader = _DatasetReader(self.source, self.check_step, Diagnostics())
        return _parse_question(self.decode(self.encoded), self.template_id, self.index, reader)


def parse_reference(
    data: Any,
    *,
    source: str = REFERENCE_LABEL,
    check_step: ReferenceCheck | None = None,
    diagnostics: Diagnostics | None = None,
    compact: Callable[[Any], Any] | None = None,
) -> list[ReferenceQuestion]:
    """Validate a reference dataset (a list of templates) into questions, in dataset order.

    ``check_step`` inspects each step's data (for example that a SPARQL output parses) and
    returns a problem or ``None``; problems become ``reference_data`` notices and the step
    scores as unmatched. Structural errors raise :class:`InputError`. ``compact``: the
    questions are encoded (``inputs/compact.py``) and decoded by it, each kept compact.
    """
    diagnostics = diagnostics if diagnostics is not None else Diagnostics()
    if _looks_like_responses(data):
        raise InputError(_RESPONSES_NOT_REFERENCE, file=source)
    if not isinstance(data, list | tuple):
        raise InputError(f"expected a list of templates, got {describe_kind(data)}", file=source)
    if not data:
        raise InputError(
            "the reference dataset is empty (no templates): nothing to evaluate", file=source
        )
    reader = _DatasetReader(source, check_step, diagnostics, compact=compact)
    for index, template in enumerate(data):
        reader.read_template(template, index)
    if not reader.questions:
        raise InputError(
            f"the reference dataset has no questions ({count_noun(len(data), 'template')}, "
            "without questions): nothing to evaluate",
            file=source,
        )
    for key, count in reader.unknown_keys.items():
        diagnostics.add(unused_field(source, key, count_noun(count, "time")))
    return reader.questions


def _parse_question(
    raw: Any, template_id: str, index: int, reader: _DatasetReader
) -> ReferenceQuestion:
    source = reader.source
    where = f"template '{template_id}', questions[{index}]"
    if not isinstance(raw, Mapping):
        raise InputError(
            f"expected a question mapping, got {describe_kind(raw)}", file=source, item=where
        )
    qid = raw.get("id")
    if qid is None or isinstance(qid, bool | Mapping | list) or str(qid) == "":
        raise InputError("missing or not a string", file=source, item=where, field="id")
    where = f"question '{qid}'"
    text = raw.get("question_text")
    if not isinstance(text, str) or not text.strip():
        raise InputError(
            "missing or not a non-empty string", file=source, item=where, field="question_text"
        )
    answer = _reference_answer(raw.get("reference_answer"), source, where)
    steps = parse_reference_steps(
        raw.get("reference_steps"), where, source, reader.check_step, reader.diagnostics
    )
    contexts = raw.get("reference_contexts")
    if contexts is not None and not isinstance(contexts, list | tuple):
        raise InputError(
            f"expected a list of contexts, got {describe_kind(contexts)}",
            file=source,
            item=where,
            field="reference_contexts",
        )
    parse_human_labels(raw.get("human_labels"), source, where, str(qid))  # checked here
    return ReferenceQuestion(
        template_id=template_id,
        id=str(qid),
        question_text=text,
        reference_answer=answer,
        reference_steps=steps,
        reference_contexts=tuple(contexts) if contexts is not None else None,
        raw=raw,
    )


def _reference_answer(answer: Any, source: str, where: str) -> str | None:
    """The reference answer as text: a number is taken as its text, anything else raises."""
    if answer is None or isinstance(answer, str):
        return answer
    if isinstance(answer, int | float) and not isinstance(answer, bool):
        return str(answer)
    raise InputError(
        f"expected a string, got {describe_kind(answer)}",
        file=source,
        item=where,
        field="reference_answer",
    )
