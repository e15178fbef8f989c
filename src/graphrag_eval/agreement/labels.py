"""Reading human labels: a labels file (CSV or JSON Lines: question_id, metric, value,
annotator) or the ``human_labels`` of a reference dataset (docs/inputs.md, docs/report.md).

A bad row of a labels file costs that row only: it is one located line in ``problems``
(``labels.csv: line 4: value: empty``) and the other rows are kept. A file that cannot be
read at all (missing, not UTF-8, a CSV without the columns) is an :class:`InputError`.
"""

from __future__ import annotations

import csv
import io
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphrag_eval.errors import InputError
from graphrag_eval.files.documents import read_bounded
from graphrag_eval.files.jsonl import BrokenLine, iter_jsonl
from graphrag_eval.files.textcheck import decode_utf8
from graphrag_eval.inputs.human_labels import (
    DEFAULT_ANNOTATOR,
    HumanLabel,
    label_value,
    name_of,
    parse_human_labels,
)
from graphrag_eval.inputs.reference import load_reference, parse_reference
from graphrag_eval.inputs.shapes import describe_kind

__all__ = [
    "LabelSet",
    "may_have_labels",
    "read_labels_file",
    "reference_labels",
    "run_reference",
    "text_value",
]

COLUMNS = ("question_id", "metric", "value", "annotator")
REQUIRED = COLUMNS[:3]
MAX_LABELS_BYTES = 64 * 1024 * 1024
"""The largest labels file read (a CSV of a million labels is about 40 MB)."""
MAX_PROBLEMS = 10_000
"""Problems kept beyond this are counted, not listed."""


@dataclass(slots=True)
class LabelSet:
    """Labels read from one source, with the rows that could not be used."""

    source: str
    labels: list[HumanLabel] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """One located line per row (or label) left out, the first :data:`MAX_PROBLEMS`."""
    unlisted: int = 0
    """Rows left out beyond those listed."""

    def problem(self, message: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(message)
        else:
            self.unlisted += 1


def text_value(text: str) -> bool | float | str:
    """A value as a CSV cell writes it: ``true``/``false``, a number, or a label."""
    folded = text.strip().lower()
    if folded in ("true", "false"):
        return folded == "true"
    try:
        number = float(folded)
    except ValueError:
        return text
    return number if number == number and abs(number) != float("inf") else text


def read_labels_file(path: str | Path) -> LabelSet:
    """The labels of a ``.csv`` or ``.jsonl`` file; its bad rows as problems."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl", ".ndjson"):
        raise InputError(
            "a labels file is .csv or .jsonl (columns question_id, metric, value, annotator)",
            file=str(path),
        )
    try:
        size = path.stat().st_size
        if size > MAX_LABELS_BYTES:
            raise ValueError(
                f"the file is {size:,} bytes, over the limit of {MAX_LABELS_BYTES:,} bytes "
                "for a labels file"
            )
        data = read_bounded(path, MAX_LABELS_BYTES) if suffix == ".csv" else b""
    except FileNotFoundError:
        raise InputError("file not found", file=str(path)) from None
    except (OSError, ValueError) as exc:
        raise InputError(str(exc), file=str(path)) from None
    found = LabelSet(str(path))
    rows = _csv_rows(data, str(path)) if suffix == ".csv" else _jsonl_rows(path)
    seen: dict[tuple[str, str, str], int] = {}
    for line, row in rows:
        label = _row_label(row, found, line)
        if label is None:
            continue
        key = (label.question_id, label.metric, label.annotator)
        if key in seen:
            found.problem(
                f"{label.where}: a second label of {label.metric} on {label.question_id!r} by "
                f"{label.annotator!r} (the first is on line {seen[key]}): left out"
            )
            continue
        seen[key] = line
        found.labels.append(label)
    return found


def _csv_rows(data: bytes, source: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
    try:
        text = decode_utf8(data)
    except ValueError as exc:
        raise InputError(str(exc), file=source) from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = [name.strip() for name in reader.fieldnames or []]
    missing = [name for name in REQUIRED if name not in header]
    separator = next((one for one in ";\t|" if len(header) == 1 and one in header[0]), None)
    if missing and separator is not None:
        raise InputError(
            f"the header line has its columns separated by {separator!r}, not commas: a "
            f"labels CSV has the columns {', '.join(COLUMNS)} separated by commas (export "
            "it again with commas, or write JSON Lines)",
            file=source,
            item="line 1",
        )
    if missing:
        raise InputError(
            f"no column {', '.join(missing)} in the header line (the columns are "
            f"{', '.join(COLUMNS)}; annotator is optional)",
            file=source,
            item="line 1",
        )
    reader.fieldnames = header
    try:
        for row in reader:
            cell = row.get("value")
            if isinstance(cell, str) and cell.strip():
                row["value"] = text_value(cell)
            yield reader.line_num, row
    except csv.Error as exc:
        raise InputError(f"not CSV: {exc}", file=source, item=f"line {reader.line_num}") from None


def _jsonl_rows(path: Path) -> Iterator[tuple[int, Any]]:
    yield from iter_jsonl(path, max_line_bytes=1024 * 1024)


def _row_label(row: Any, found: LabelSet, line: int) -> HumanLabel | None:
    """The label of a row, or ``None`` with the row's problem noted."""
    where = f"{found.source}: line {line}"
    if isinstance(row, BrokenLine):
        found.problem(f"{where}: {row}: left out")
        return None
    if not isinstance(row, Mapping):
        kind = describe_kind(row)
        found.problem(
            f"{where}: expected an object with {', '.join(REQUIRED)}, got {kind}: left out"
        )
        return None
    if None in row:  # a CSV row with more cells than the header
        found.problem(f"{where}: more cells than the header's {len(row) - 1} columns: left out")
        return None
    values: dict[str, Any] = {}
    for name in COLUMNS:
        cell = row.get(name)
        try:
            if name == "annotator" and (cell is None or cell == ""):
                values[name] = DEFAULT_ANNOTATOR
            elif cell is None or cell == "":
                raise ValueError("missing")
            elif name == "value":
                values[name] = label_value(cell)
            else:
                values[name] = name_of(cell, f"a {name.replace('_', ' ')}")
        except ValueError as exc:
            found.problem(f"{where}: {name}: {exc}: left out")
            return None
    return HumanLabel(
        values["question_id"], values["metric"], values["value"], values["annotator"], where
    )


def reference_labels(path: str | Path) -> LabelSet:
    """The ``human_labels`` of every question of a reference dataset file (its shape checked
    as ``evaluate`` checks it: a bad label is an :class:`InputError`)."""
    found = LabelSet(str(path))
    questions = parse_reference(load_reference(path), source=str(path))
    for question in questions:
        found.labels.extend(
            parse_human_labels(
                question.raw.get("human_labels"),
                str(path),
                f"question '{question.id}'",
                question.id,
            )
        )
    return found


_LABELS_KEY = b"human_labels"
_SCAN_CHUNK = 1 << 20


def may_have_labels(path: Path) -> bool:
    """Whether the regular file at ``path`` holds the text ``human_labels`` at all (a scan of
    its bytes, not a parse: a large reference without labels costs no parsing). It is read in
    chunks of 1 MiB, each searched with the end of the one before, so the scan adds nothing
    to a run's memory (a mapping of the whole file counted its pages: the reference's size)."""
    try:  # opened without blocking: a FIFO named as the reference never hangs the report
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(descriptor, "rb") as stream:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                return False
            tail = b""
            while chunk := stream.read(_SCAN_CHUNK):
                if _LABELS_KEY in tail + chunk[: len(_LABELS_KEY)] or _LABELS_KEY in chunk:
                    return True
                tail = chunk[-(len(_LABELS_KEY) - 1) :]
    except OSError:
        return False
    return False


def run_reference(info: Mapping[str, Any], run_directory: Path) -> Path | None:
    """The reference dataset a run was evaluated against (``run.yaml``'s ``reference``, as
    given to ``evaluate``: from the current directory, else beside the run), when it is
    still there."""
    named = info.get("reference")
    if not isinstance(named, str) or not named or named.startswith("<"):
        return None
    path = Path(named)
    for candidate in (path, run_directory / path, run_directory.parent / path):
        if candidate.is_file():
            return candidate
    return None
