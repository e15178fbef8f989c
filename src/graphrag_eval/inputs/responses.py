"""Responses of the system under test: from a file or Python data to validated responses
(docs/inputs.md).

Responses are messy, so nothing in them raises: a malformed response or step gets an error
on that item or step, a response for an unknown question is a warning, and the rest is
evaluated. Only an unreadable file or a value that is no collection raises
:class:`InputError`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from graphrag_eval.collector import input_reading
from graphrag_eval.errors import InputError, locate
from graphrag_eval.files.bounded import MAX_DEPTH
from graphrag_eval.files.documents import JSONL_SUFFIXES, BrokenLine, read_document
from graphrag_eval.files.jsonl import LineAt, iter_jsonl_at, read_jsonl_at
from graphrag_eval.files.textcheck import binary_problem
from graphrag_eval.inputs.compact import COMPACT_ABOVE_BYTES
from graphrag_eval.inputs.notices import Notice, unused_field
from graphrag_eval.inputs.shapes import (
    RESPONSES_LABEL,
    SWAP_HINT,
    TEMPLATE_KEYS,
    ResponseShape,
    count_noun,
    describe_kind,
    error_message,
    error_path,
    unsupported_format,
)
from graphrag_eval.inputs.steps import ActualStep, parse_actual_step
from graphrag_eval.inputs.traces import AUTO, Converted, Reading, convert_data, convert_jsonl

__all__ = [
    "LazyResponses",
    "Response",
    "ResponseSet",
    "load_responses",
    "parse_responses",
    "question_id_in_text",
]

_RESPONSE_KEYS = frozenset(ResponseShape.model_fields)
_QUESTION_ID_IN_TEXT = re.compile(r'"question_id"\s*:\s*"([^"\\]+)"')


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


class LazyResponses(MutableMapping[str, "Response"]):
    """Responses by question id, each of a JSON Lines file kept as its line's place and parsed
    again when asked for (an unusable one is kept as it is); a line that changed since it was
    read gives an unusable response, never an error."""

    def __init__(self, path: Path, source: str) -> None:
        self.path = path
        self.source = source
        self._entries: dict[str, Response | tuple[int, LineAt]] = {}

    def locate(self, question_id: str, number: int, at: LineAt) -> None:
        """Keep the response of ``question_id`` as the record of line ``number`` at ``at``."""
        self._entries[question_id] = (number, at)

    def __getitem__(self, question_id: str) -> Response:
        entry = self._entries[question_id]
        if isinstance(entry, Response):
            return entry
        number, at = entry
        where = f"line {number}"
        try:
            value = read_jsonl_at(self.path, number, at, max_depth=MAX_DEPTH)
        except OSError as exc:
            value = BrokenLine(f"could not be read again: {exc.strerror or exc}", "")
        response = None
        if not isinstance(value, BrokenLine):
            response = _parse_response(value, where, self.source, None, [])
        if response is None or response.question_id != question_id:
            message = f"{locate(self.source, where, None)}: the file changed while it was read"
            return _unusable(question_id, None, message)
        return response

    def __setitem__(self, question_id: str, response: Response) -> None:
        self._entries[question_id] = response

    def __delitem__(self, question_id: str) -> None:
        del self._entries[question_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, question_id: object) -> bool:
        return question_id in self._entries


@dataclass(slots=True)
class ResponseSet:
    """Responses by question id, with the notices produced while reading them."""

    responses: MutableMapping[str, Response]
    notices: list[Notice]
    source: str
    records: int = 0
    """How many records (lines, list items, dict entries) the input had, readable or not."""
    unreadable: set[str] = field(default_factory=set)
    """The question ids in ``responses`` whose response could not be read (a broken line, a
    value that is no mapping): an error result each, nothing to evaluate."""


def load_responses(
    path: str | Path, *, lazy_above: int = COMPACT_ABOVE_BYTES, reading: Reading = AUTO
) -> ResponseSet:
    """Read and validate a responses file: JSON (a dict by question id, or a list), JSONL (one
    response per line) or YAML, of the format ``reading`` gives (docs/integrations.md). A broken
    line or malformed response is recorded, not raised; only an unreadable file raises
    :class:`InputError`. A JSONL file over ``lazy_above`` bytes is read item by item."""
    path = Path(path)
    label = str(path)
    unsupported = unsupported_format(path, "JSONL, JSON or YAML")
    if unsupported is not None:
        raise InputError(unsupported, file=label)
    if path.suffix.lower() in JSONL_SUFFIXES:
        try:
            with path.open("rb") as stream:
                binary = binary_problem(stream.read(8192), "a JSON Lines text file")
            if binary is not None:
                raise InputError(binary, file=label)
            # A line that is not UTF-8, or nested too deeply, is a broken line.
            if (converted := convert_jsonl(path, label, reading)) is not None:
                return parse_responses(converted, source=label)
            return _read_jsonl_responses(path, label, path.stat().st_size > lazy_above)
        except FileNotFoundError:
            raise InputError("file not found", file=label) from None
    try:
        data = read_document(path, split_items=True)  # a bomb costs its item only
    except FileNotFoundError:
        raise InputError("file not found", file=label) from None
    except ValueError as exc:  # not JSON/YAML, or not UTF-8: the file cannot be split
        raise InputError(str(exc), file=label) from None
    return parse_responses(data, source=label, reading=reading)


def parse_responses(
    data: Any, *, source: str = RESPONSES_LABEL, reading: Reading = AUTO
) -> ResponseSet:
    """Validate responses given as a dict ``question_id -> response`` or a list of responses.

    Only a value that is neither raises :class:`InputError`; everything else is recorded.
    """
    if isinstance(data, ResponseSet):
        return data
    converted = data if isinstance(data, Converted) else convert_data(data, source, reading)
    if converted is not None:  # a transcript or trace format (docs/integrations.md)
        found = _parse_response_records(converted.records, source, converted.keys)
        found.notices[:0], found.records = converted.notices, found.records + converted.skipped
        return found
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
        "expected a mapping of question id to response, or a list of responses, "
        f"got {describe_kind(data)}",
        file=source,
    )


def question_id_in_text(text: str) -> str | None:
    """The ``question_id`` a broken JSON line still shows, if any."""
    match = _QUESTION_ID_IN_TEXT.search(text)
    return match.group(1) if match else None


@dataclass(slots=True)
class _RecordReader:
    """The state of reading the records of one responses input."""

    source: str
    responses: MutableMapping[str, Response] = field(default_factory=dict)
    notices: list[Notice] = field(default_factory=list)
    unused: Counter[str] = field(default_factory=Counter)
    unreadable: set[str] = field(default_factory=set)

    def read_broken_line(self, where: str, line: BrokenLine, key: str | None = None) -> None:
        # Attribute a broken line to its question when the id is still readable, so the
        # question shows the error instead of being merely "missing".
        qid = key or line.question_id or question_id_in_text(line.text)
        item = f"{where} (question '{qid}')" if qid and key is None else where
        self.notices.append(Notice("malformed_response", str(line), file=self.source, item=item))
        if qid is not None and qid not in self.responses:
            message = locate(self.source, item, None) + f": unparsable response: {line}"
            self.responses[qid] = _unusable(qid, None, message)
            self.unreadable.add(qid)

    def read(self, where: str, value: Any, key: str | None) -> Response | None:
        response = _parse_response(value, where, self.source, key, self.notices)
        if response is None:
            return None
        if isinstance(value, Mapping):
            self.unused.update(k for k in value if k not in _RESPONSE_KEYS)
            self.unreadable.discard(response.question_id)
        else:
            self.unreadable.add(response.question_id)
        if response.question_id in self.responses:
            self.notices.append(
                Notice(
                    "duplicate_response",
                    "another response for this question came earlier; the later one is used",
                    file=self.source,
                    item=f"{where} (question '{response.question_id}')",
                )
            )
        self.responses[response.question_id] = response
        return response


def _parse_response_records(
    records: Iterable[tuple[str, Any]],
    source: str,
    keys: list[str] | None = None,
) -> ResponseSet:
    reader = _RecordReader(source)
    position = -1
    for position, (where, value) in enumerate(records):
        if isinstance(value, BrokenLine):
            reader.read_broken_line(where, value, keys[position] if keys is not None else None)
        else:
            reader.read(where, value, keys[position] if keys is not None else None)
    return _response_set(reader, position + 1)


@input_reading()  # the responses read hold no cycles (collector.py)
def _read_jsonl_responses(path: Path, source: str, lazy: bool) -> ResponseSet:
    """The responses of a JSON Lines file; ``lazy``: each is validated (its notices taken),
    dropped, and read again when asked for (:class:`LazyResponses`), so none is held."""
    responses = LazyResponses(path, source)
    reader = _RecordReader(source, responses if lazy else {})
    records = 0
    for number, value, at in iter_jsonl_at(path, max_depth=MAX_DEPTH):
        records += 1
        if isinstance(value, BrokenLine):
            reader.read_broken_line(f"line {number}", value)
        elif (response := reader.read(f"line {number}", value, None)) is not None and lazy:
            responses.locate(response.question_id, number, at)  # read from a mapping
    return _response_set(reader, records)


def _response_set(reader: _RecordReader, records: int) -> ResponseSet:
    source = reader.source
    for name, count in reader.unused.items():
        reader.notices.append(unused_field(source, name, count_noun(count, "response")))
    return ResponseSet(
        responses=reader.responses,
        notices=reader.notices,
        source=source,
        records=records,
        unreadable=reader.unreadable,
    )


def _parse_response(
    value: Any,
    where: str,
    source: str,
    key: str | None,
    notices: list[Notice],
) -> Response | None:
    if not isinstance(value, Mapping):
        message = f"expected a response mapping, got {describe_kind(value)}"
        notices.append(Notice("malformed_response", message, file=source, item=where))
        # In a dict the key still says which question failed; in a list nothing does.
        return None if key is None else _unusable(key, value, f"{locate(source, where)}: {message}")
    problems: list[str] = []
    data = _with_key_as_question_id(dict(value), key, where, source, problems)
    item = where
    if isinstance(data.get("question_id"), str | int) and not isinstance(data["question_id"], bool):
        item = where if key is not None else f"{where} (question '{data['question_id']}')"
    shape = _validate_dropping_bad_fields(data, item, source, notices, problems)
    if shape is None:
        return None
    steps: tuple[ActualStep, ...] | None = None
    if shape.actual_steps is not None:
        steps = tuple(
            parse_actual_step(index, raw, item, source, notices)
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


def _with_key_as_question_id(
    data: dict[str, Any], key: str | None, where: str, source: str, problems: list[str]
) -> dict[str, Any]:
    """In a dict by question id the key is the question id, whatever the response says."""
    if key is None:
        return data
    qid = data.get("question_id")
    if qid is None:
        data["question_id"] = key
    elif str(qid) != key:
        problem = f"question_id {qid!r} differs from its key; the key is used"
        problems.append(locate(source, where, "question_id") + ": " + problem)
        data["question_id"] = key
    return data


def _validate_dropping_bad_fields(
    data: dict[str, Any], item: str, source: str, notices: list[Notice], problems: list[str]
) -> ResponseShape | None:
    """Validate; drop each malformed top-level field (recording it) and try again. ``None``
    when the question id itself is unusable."""
    for _ in range(len(data) + 1):
        try:
            return ResponseShape.model_validate(data)
        except ValidationError as exc:
            error = exc.errors()[0]
        top = error["loc"][0] if error["loc"] else None
        message = error_message(error)
        if top == "question_id" or top is None:
            if "question_id" not in data and data.keys() & TEMPLATE_KEYS:
                message += f" (this looks like a reference template; {SWAP_HINT})"
            notices.append(
                Notice("malformed_response", message, file=source, item=item, field="question_id")
            )
            return None
        path = error_path("", error["loc"])
        ignored = f"{message}; field ignored"
        notices.append(Notice("malformed_response", ignored, file=source, item=item, field=path))
        problems.append(locate(source, item, path) + f": {message}")
        data.pop(str(top), None)
    return None  # pragma: no cover - every loop pass removes a field


def _unusable(question_id: str, raw: Any, message: str) -> Response:
    nothing = (None,) * 7  # the answer, steps, tokens, elapsed_sec and contexts
    return Response(question_id, True, message, *nothing, raw=raw, problems=(message,))
