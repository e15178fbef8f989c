"""The TSV files of ``answer-correctness``: reading the rows to judge, writing them back with
the judge's outcome (docs/metrics.md)."""

from __future__ import annotations

import csv
import decimal
import io
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from graphrag_eval.errors import InputError, locate
from graphrag_eval.files.documents import decode_utf8, open_for_append, write_text_atomic
from graphrag_eval.metrics.base import Failed, Outcome, Scored

__all__ = [
    "TSV_COLUMNS",
    "TSV_OUTPUTS",
    "RefusedRow",
    "StreamedRows",
    "neutralise_formula",
    "read_answer_rows",
    "write_judged_rows",
]

TSV_COLUMNS = ("Question", "Reference answer", "Actual answer")
TSV_OUTPUTS = (
    "answer_reference_claims_count",
    "answer_actual_claims_count",
    "answer_matching_claims_count",
    "answer_correctness_reason",
    "answer_recall",
    "answer_precision",
    "answer_f1",
    "answer_correctness_cost",
    "answer_eval_error",
)


class RefusedRow(dict[str, str]):
    """A row that cannot be judged (a carriage return or a tab inside a value): its cells as
    far as they could be read, and ``problem``, the one-line error naming the file, the line
    and the column, which is the row's ``answer_eval_error``."""

    def __init__(self, cells: dict[str, str], problem: str) -> None:
        super().__init__(cells)
        self.problem = problem


def read_answer_rows(path: Path) -> list[dict[str, str]]:
    """The rows of the TSV file ``path``, which must have the :data:`TSV_COLUMNS`. A row that
    cannot be read is a :class:`RefusedRow`, and the others are read.

    Raises :class:`InputError` for a file that cannot be read as such."""
    label = str(path)
    try:
        text = decode_utf8(path.read_bytes())
    except FileNotFoundError:
        raise InputError("file not found", file=label) from None
    except ValueError as exc:  # not UTF-8: the line and column of the first bad byte
        raise InputError(str(exc), file=label) from None
    # Lines end at a line feed only: a lone carriage return is inside its line, and the
    # reader refuses it there (a value with one must be quoted).
    lines = [line + "\n" for line in text.split("\n")]
    if lines[-1] == "\n":
        lines.pop()
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, len(text)))  # a long value is read, not refused
    try:
        return _read_rows(label, lines)
    finally:
        csv.field_size_limit(limit)


def _read_rows(label: str, lines: list[str]) -> list[dict[str, str]]:
    """The rows of ``lines`` (each ending with its line feed) below their header line."""
    reader = csv.reader(lines, delimiter="\t")
    try:
        header = next(reader, [])
    except csv.Error:
        problem = "a carriage return inside a column name (remove it)"
        raise InputError(problem, file=label, item="line 1") from None
    missing = [column for column in TSV_COLUMNS if column not in header]
    if missing:
        raise InputError(
            f"missing column(s) {', '.join(missing)} (the header has: "
            f"{', '.join(header) or 'nothing'})",
            file=label,
            item="line 1",
        )
    rows: list[dict[str, str]] = []
    start = reader.line_num
    while start < len(lines):
        start = _read_from(label, header, lines, start, rows)
    if not rows:
        raise InputError("no answers to judge: the file has its header and no row", file=label)
    return rows


def _read_from(
    label: str, header: list[str], lines: list[str], start: int, rows: list[dict[str, str]]
) -> int:
    """Add the rows read from ``lines[start]`` on to ``rows``, until the end (return
    ``len(lines)``) or a value that a quote opens and none closes well: that line is
    refused and the index of the next one returned, to read on from there (the lines the
    value took in are rows of their own)."""
    reader = csv.reader((lines[i] for i in range(start, len(lines))), delimiter="\t")
    while True:
        first = start + reader.line_num  # the index of the record's first line
        try:
            cells = next(reader)
        except StopIteration:
            return len(lines)
        except csv.Error:
            line = start + reader.line_num
            rows.append(_refused_row(label, header, lines[line - 1], line))
            continue
        end = start + reader.line_num
        if any("\n" in cell for cell in cells) and not _well_quoted(lines[first:end]):
            rows.append(_unclosed_quote_row(label, header, lines[first], first + 1))
            return first + 1
        if cells:
            rows.append(_row(label, header, cells, first + 1))


def _well_quoted(lines: list[str]) -> bool:
    """Whether the record of several ``lines`` is quoted by the rules (each quoted value
    closed by a quote that a tab or the line's end follows)."""
    try:
        for _ in csv.reader(lines, delimiter="\t", strict=True):
            pass
    except csv.Error:
        return False
    return True


def _unclosed_quote_row(label: str, header: list[str], text: str, line: int) -> RefusedRow:
    """The row of line ``text``, where a quote opens a value that no quote closes well."""
    problem = (
        'a quote opens the value and no quote closes it (double it, "", or quote the whole '
        "value); not judged"
    )
    return _refused(label, header, text, line, lambda cell: cell.startswith('"'), problem)


def _row(label: str, header: list[str], cells: list[str], line: int) -> dict[str, str]:
    row = dict(zip(header, cells, strict=False))
    row.update(dict.fromkeys(header[len(cells) :], ""))
    if len(cells) <= len(header):
        return row
    problem = "more values than columns (a tab inside a value?); not judged"
    return RefusedRow(row, f"{locate(label, f'line {line}')}: {problem}")


def _refused_row(label: str, header: list[str], text: str, line: int) -> RefusedRow:
    """The row of line ``text``, which has a carriage return inside an unquoted value."""
    problem = (
        "a carriage return inside the value (quote the value, or remove the carriage "
        "return); not judged"
    )
    return _refused(label, header, text, line, lambda cell: "\r" in cell.rstrip("\r"), problem)


def _refused(
    label: str,
    header: list[str],
    text: str,
    line: int,
    faulty: Callable[[str], bool],
    problem: str,
) -> RefusedRow:
    """The row of line ``text``, split at its tabs, refused for ``problem`` in its first cell
    that is ``faulty`` (the first column if none is)."""
    cells = text.removesuffix("\n").split("\t")
    column = next((i for i, cell in enumerate(cells) if faulty(cell)), 0)
    name = header[column] if column < len(header) else f"column {column + 1}"
    row = {key: cells[i] if i < len(cells) else "" for i, key in enumerate(header)}
    return RefusedRow(row, f"{locate(label, f'line {line}', name)}: {problem}")


def write_judged_rows(
    path: Path, rows: Sequence[dict[str, str]], outcomes: Sequence[Outcome | None]
) -> None:
    """Write ``rows`` with the :data:`TSV_OUTPUTS` of their outcomes to the TSV file ``path``,
    in input order (a row without an outcome, not judged before an interruption, is left
    out); a cell that would run as a spreadsheet formula is neutralised
    (:func:`neutralise_formula`)."""
    fieldnames = _fieldnames(rows)
    lines = [_line(fieldnames, None, None)]
    lines += [
        _line(fieldnames, row, outcome)
        for row, outcome in zip(rows, outcomes, strict=True)
        if outcome is not None
    ]
    write_text_atomic(path, "".join(lines))


class StreamedRows:
    """The output file while rows are judged: the header at once, then each row appended
    as it finishes (in the order they finish), so that what finished is kept whatever stops
    the run; :func:`write_judged_rows` replaces it with the rows in input order at the end
    (docs/llm.md, "The answer-correctness command")."""

    def __init__(self, path: Path, rows: Sequence[dict[str, str]]) -> None:
        self.fieldnames = _fieldnames(rows)
        write_text_atomic(path, _line(self.fieldnames, None, None))
        self._stream: IO[bytes] | None = open_for_append(path)

    def add(self, row: dict[str, str], outcome: Outcome) -> None:
        """Append one judged row (one write: a kill leaves whole rows)."""
        if self._stream is not None:
            self._stream.write(_line(self.fieldnames, row, outcome).encode("utf-8"))

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None


def _fieldnames(rows: Sequence[dict[str, str]]) -> list[str]:
    fieldnames = [*(rows[0].keys() if rows else TSV_COLUMNS)]
    return fieldnames + [name for name in TSV_OUTPUTS if name not in fieldnames]


def _line(fieldnames: list[str], row: dict[str, str] | None, outcome: Outcome | None) -> str:
    """One TSV line: the header (without a row), or a row with its outcome's keys."""
    buffer = io.StringIO()
    # A carriage return counts as a line end, so a value holding one is quoted (the line
    # itself ends with a line feed only).
    writer = csv.DictWriter(buffer, fieldnames, delimiter="\t", lineterminator="\r\n")
    if row is None:
        writer.writeheader()
        return buffer.getvalue().removesuffix("\r\n") + "\n"
    values: dict[str, Any] = dict(row)
    if isinstance(outcome, Scored):
        values.update({key: _plain(value) for key, value in outcome.values.items()})
    elif isinstance(outcome, Failed):
        values["answer_eval_error"] = outcome.error
    writer.writerow({key: neutralise_formula(value) for key, value in values.items()})
    return buffer.getvalue().removesuffix("\r\n") + "\n"


_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise_formula(value: Any) -> Any:
    """A text cell that a spreadsheet would run as a formula (it starts with ``=``, ``+``,
    ``-``, ``@``, a tab or a carriage return) with a ``'`` in front, as OWASP advises
    against CSV injection (docs/security.md); numbers and other text as they are."""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def _plain(value: Any) -> Any:
    """A float as a plain decimal for the TSV: ``0.00005``, not ``5e-05``, with 12
    significant digits, so that float noise (``0.000044099999999999995``) is not written;
    other values as they are."""
    if isinstance(value, float) and math.isfinite(value):
        text = format(decimal.Decimal(f"{value:.12g}"), "f")
        return text if "." in text or "e" in text else f"{text}.0"
    return value
