"""Per-question results as a table for analysis: CSV or Parquet, one row per question and a
column per output key of the records (docs/outputs.md, "Tables: CSV and Parquet").

The columns are the records' top-level keys, in the order they first appear. A column's type
is read from its values: all ``true``/``false`` a boolean, all integers an integer, numbers a
float, texts a text; a column with a list or a mapping (``actual_steps``, ``skipped``,
``failure_kinds``, ...) or with values of different types is a JSON column: each value is
written as its JSON text, which ``json.loads`` reads back. A key a record lacks is a null.

The records are read twice (the types first, then the rows), never held: the export of a
large run takes the memory of one batch of rows. CSV cells of text that a spreadsheet would
run as a formula are neutralised (docs/security.md); Parquet needs the ``parquet`` extra
(pyarrow), imported only when a Parquet file is written.
"""

from __future__ import annotations

import csv
import enum
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from graphrag_eval.errors import GraphragEvalError
from graphrag_eval.files.documents import JSON_TEXT_ERRORS, atomic_stream
from graphrag_eval.metrics.registry import declared_outputs
from graphrag_eval.version import __version__

if TYPE_CHECKING:
    import pyarrow

__all__ = [
    "TABLE_FILE_NAMES",
    "TABLE_FORMATS",
    "TABLE_SUFFIXES",
    "Column",
    "ColumnType",
    "TableFormat",
    "require_parquet",
    "spreadsheet_safe",
    "table_columns",
    "table_format_of",
    "write_run_table",
    "write_table",
]

TableFormat = Literal["csv", "parquet"]
TABLE_SUFFIXES: dict[str, TableFormat] = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
"""The file extensions that name a table format (``-o results.parquet``)."""
TABLE_FORMATS: dict[str, TableFormat] = {"csv": "csv", "parquet": "parquet"}
TABLE_FILE_NAMES: dict[TableFormat, str] = {"csv": "results.csv", "parquet": "results.parquet"}
"""The tables ``evaluate --format csv`` / ``parquet`` writes beside ``results.jsonl``."""

_PARQUET_MISSING = (
    "--format parquet needs pyarrow, which is not installed: pip install 'graphrag-eval[parquet]'"
)
_BATCH_ROWS = 1024
_INT64 = (-(2**63), 2**63 - 1)
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""What a cell a spreadsheet would read as a formula begins with (OWASP, "CSV Injection")."""
_SURROGATE = re.compile("[\ud800-\udfff]")


class ColumnType(enum.Enum):
    """What a column holds."""

    BOOL = "bool"
    INT = "int"
    FLOAT = "float"
    TEXT = "text"
    JSON = "json"
    """Each value as its JSON text (lists, mappings, or values of different types)."""


@dataclass(slots=True)
class Column:
    """One column of the table: an output key and the kinds of values seen under it."""

    name: str
    seen: set[str] = field(default_factory=set)

    def add(self, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, bool):
            self.seen.add("bool")
        elif isinstance(value, int):
            self.seen.add("int" if _INT64[0] <= value <= _INT64[1] else "nested")
        elif isinstance(value, float):
            self.seen.add("float")
        elif isinstance(value, str):
            self.seen.add("str")
        else:
            self.seen.add("nested")

    @property
    def type(self) -> ColumnType:
        if not self.seen or self.seen == {"str"}:
            return ColumnType.TEXT
        if self.seen == {"bool"}:
            return ColumnType.BOOL
        if self.seen == {"int"}:
            return ColumnType.INT
        if self.seen <= {"int", "float"}:
            return ColumnType.FLOAT
        return ColumnType.JSON


def table_columns(records: Iterable[Mapping[str, Any]]) -> list[Column]:
    """The columns of ``records``: every top-level key, in order of first appearance, with
    the kinds of its values."""
    columns: dict[str, Column] = {}
    for record in records:
        for key, value in record.items():
            column = columns.get(key)
            if column is None:
                column = columns[key] = Column(key)
            column.add(value)
    return list(columns.values())


def table_format_of(path: Path) -> TableFormat | None:
    """The table format ``path``'s extension names, if any."""
    return TABLE_SUFFIXES.get(path.suffix.lower())


def require_parquet() -> None:
    """Raise a one-line :class:`GraphragEvalError` naming the ``parquet`` extra when pyarrow
    cannot be imported (checked before a run, not after it)."""
    _pyarrow()


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise GraphragEvalError(_PARQUET_MISSING) from None
    return pyarrow


def write_table(
    path: Path, records: Callable[[], Iterable[Mapping[str, Any]]], table_format: TableFormat
) -> int:
    """Write the records ``records()`` gives (called twice: the types, then the rows) to
    ``path`` as ``table_format``, atomically; the number of rows written."""
    if table_format == "parquet":
        _pyarrow()  # before the records are read
    columns = table_columns(records())
    with atomic_stream(path) as stream:
        if table_format == "csv":
            return _write_csv(stream, columns, records())
        return _write_parquet(stream, columns, records())


def write_run_table(
    out_dir: str | Path, results_format: str, records: Callable[[], Iterable[Mapping[str, Any]]]
) -> None:
    """The table ``--format csv`` or ``parquet`` asks for, written into a run's ``out_dir``
    (:data:`TABLE_FILE_NAMES`); nothing for another format."""
    table = TABLE_FORMATS.get(results_format)
    if table is not None:
        write_table(Path(out_dir) / TABLE_FILE_NAMES[table], records, table)


def spreadsheet_safe(text: str) -> str:
    """``text`` with a ``'`` before it when a spreadsheet would run it as a formula (it
    begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return): the cell then shows
    the text as it is (OWASP, "CSV Injection"; the rule of the answer-correctness TSV)."""
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def _cells(columns: Sequence[Column], record: Mapping[str, Any]) -> Iterator[Any]:
    """The values of ``record`` in the columns' order, each as its column's type holds it
    (``None`` for a missing key)."""
    for column, kind in ((column, column.type) for column in columns):
        value = record.get(column.name)
        if value is None:
            yield None
        elif kind is ColumnType.JSON:
            yield json.dumps(value, ensure_ascii=False)
        elif kind is ColumnType.FLOAT:
            yield float(value)
        else:
            yield value


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    if isinstance(value, int):
        return str(value)
    return spreadsheet_safe(str(value))


def _write_csv(stream: Any, columns: Sequence[Column], records: Iterable[Mapping[str, Any]]) -> int:
    # A lone surrogate (JSON has them, UTF-8 not) is written as its escape, as in results.jsonl.
    text = io.TextIOWrapper(
        stream, encoding="utf-8", errors=JSON_TEXT_ERRORS, newline="", write_through=True
    )
    writer = csv.writer(text, lineterminator="\r\n")
    writer.writerow([spreadsheet_safe(column.name) for column in columns])
    rows = 0
    for record in records:
        writer.writerow([_csv_cell(value) for value in _cells(columns, record)])
        rows += 1
    text.flush()
    text.detach()  # the stream is closed by atomic_stream, not by the wrapper
    return rows


def _arrow_schema(pa: Any, columns: Sequence[Column]) -> pyarrow.Schema:
    """The Parquet schema: each column's type, its encoding when JSON, and the unit and kind
    of a key a metric declares."""
    types = {
        ColumnType.BOOL: pa.bool_(),
        ColumnType.INT: pa.int64(),
        ColumnType.FLOAT: pa.float64(),
        ColumnType.TEXT: pa.string(),
        ColumnType.JSON: pa.string(),
    }
    declared = declared_outputs()
    fields = []
    for column in columns:
        metadata = {"graphrag_eval.type": column.type.value}
        spec = declared.get(column.name)
        if spec is not None:
            metadata |= {"graphrag_eval.unit": spec[0].unit.value}
            metadata |= {"graphrag_eval.kind": spec[0].kind.value}
        fields.append(pa.field(_utf8(column.name), types[column.type], metadata=metadata))
    return pa.schema(fields, metadata={"graphrag_eval_version": __version__})


def _write_parquet(
    stream: Any, columns: Sequence[Column], records: Iterable[Mapping[str, Any]]
) -> int:
    pa = _pyarrow()
    schema = _arrow_schema(pa, columns)
    rows = 0
    batch: list[list[Any]] = [[] for _ in columns]
    with pa.parquet.ParquetWriter(stream, schema) as writer:
        for record in records:
            for values, value in zip(batch, _cells(columns, record), strict=True):
                values.append(_utf8(value) if isinstance(value, str) else value)
            rows += 1
            if len(batch[0]) >= _BATCH_ROWS:
                writer.write_batch(pa.record_batch(batch, schema=schema))
                batch = [[] for _ in columns]
        if rows == 0 or (batch and batch[0]):
            writer.write_batch(pa.record_batch(batch, schema=schema))
    return rows


def _utf8(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``\\ud800``, which JSON reads
    back as the same character), as ``results.jsonl`` has it: Parquet holds UTF-8 only."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-8", JSON_TEXT_ERRORS).decode("utf-8")
