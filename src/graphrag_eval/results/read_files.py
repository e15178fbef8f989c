"""Reading the per-question results a run saved (``results.jsonl``, or JSON or YAML), with
each bad record located by file and line or item (docs/outputs.md)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from graphrag_eval.errors import InputError
from graphrag_eval.files.documents import JSONL_SUFFIXES, BrokenLine, iter_jsonl, read_document

__all__ = ["NOT_A_RUN", "load_results"]

_REQUIRED = ("template_id", "question_id", "status")
_A_RUN = "a run is the output directory of graphrag-eval evaluate"
NOT_A_RUN = {
    "responses": f"this is a responses file, not a run ({_A_RUN})",
    "reference": f"this is a reference dataset, not a run ({_A_RUN})",
}
"""The message of a file that holds the inputs of a run instead of its results, by kind."""
_ANSWERED = frozenset({"actual_answer", "actual_steps", "retrieved_contexts"})


def load_results(
    path: str | Path, problems: list[InputError] | None = None
) -> list[dict[str, Any]]:
    """Read per-question results saved by ``graphrag-eval evaluate`` (JSONL, JSON or YAML).

    Raises :class:`InputError` naming the file and line or item when they cannot be used. With
    a ``problems`` list, a bad line or item is appended to it and skipped instead, so one
    broken record (the torn last line of a killed run) does not lose the others.
    """
    path = Path(path)
    label = str(path)
    results = []
    records = _records(path, problems)
    kind = _input_kind([value for _, value in records])
    if kind is not None:
        raise InputError(NOT_A_RUN[kind], file=label)
    # JSON's names are text; YAML's may be numbers, booleans, null or dates (unquoted).
    names_checked = path.suffix.lower() not in (*JSONL_SUFFIXES, ".json")
    for where, value in records:
        if not isinstance(value, dict):
            _problem(InputError("expected a result mapping", file=label, item=where), problems)
            continue
        name = _not_text(value) if names_checked else None
        if name is not None:
            message = "a field name must be text (quote it in YAML)"
            _problem(InputError(message, file=label, item=where, field=name), problems)
            continue
        missing = [f for f in _REQUIRED if f not in value]
        if missing:
            _problem(
                InputError(
                    "missing (is this a results file?)", file=label, item=where, field=missing[0]
                ),
                problems,
            )
            continue
        results.append(value)
    return results


def _not_text(record: dict[Any, Any]) -> str | None:
    """The first of a record's field names that is not text, as written, if any."""
    for name in record:
        if type(name) is not str:
            return str(name)
    return None


def _input_kind(values: list[Any]) -> str | None:
    """``responses`` or ``reference`` when every record is one of a run's inputs (no record
    of results has ``questions``, or lacks ``template_id``), else None."""
    if not values or not all(isinstance(value, Mapping) for value in values):
        return None
    if all("questions" in value and "question_id" not in value for value in values):
        return "reference"
    if _are_responses(values):
        return "responses"
    return None


def _are_responses(values: list[Mapping[str, Any]]) -> bool:
    """Responses (each names its question, not its template, and some has what a system
    answered) rather than results that lost their ``template_id``."""
    return all("question_id" in value and "template_id" not in value for value in values) and any(
        not _ANSWERED.isdisjoint(value) for value in values
    )


def _by_question_id(data: Mapping[Any, Any]) -> bool:
    """Whether a document is responses by question id (``{id: response}``)."""
    values = list(data.values())
    return (
        bool(values)
        and all(isinstance(value, Mapping) and "template_id" not in value for value in values)
        and any(not _ANSWERED.isdisjoint(value) for value in values)
    )


def _records(path: Path, problems: list[InputError] | None) -> list[tuple[str, Any]]:
    """The file's records with where they are (``line N`` or ``results[N]``)."""
    label = str(path)
    records: list[tuple[str, Any]]
    try:
        if path.suffix.lower() in JSONL_SUFFIXES:
            records = []
            for number, value in iter_jsonl(path):
                if isinstance(value, BrokenLine):
                    _problem(InputError(str(value), file=label, item=f"line {number}"), problems)
                    continue
                records.append((f"line {number}", value))
        else:
            data = read_document(path)
            if isinstance(data, Mapping) and _by_question_id(data):
                raise InputError(NOT_A_RUN["responses"], file=label)
            if not isinstance(data, list):
                raise InputError("expected a list of results", file=label)
            records = [(f"results[{index}]", value) for index, value in enumerate(data)]
    except FileNotFoundError:
        raise InputError("file not found", file=label) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a results file", file=label) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(str(exc), file=label) from None
    return records


def _problem(error: InputError, problems: list[InputError] | None) -> None:
    if problems is None:
        raise error
    problems.append(error)
