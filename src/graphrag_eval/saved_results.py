"""Reading the per-question results a run saved (``results.jsonl``, or JSON or YAML), with
each bad record located by file and line or item (docs/outputs.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from graphrag_eval.errors import InputError
from graphrag_eval.files import JSONL_SUFFIXES, BrokenLine, iter_jsonl, read_document

__all__ = ["load_results"]

_REQUIRED = ("template_id", "question_id", "status")


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
    for where, value in _records(path, problems):
        if not isinstance(value, dict):
            _problem(InputError("expected a result mapping", file=label, item=where), problems)
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
