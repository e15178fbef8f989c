"""The TSV files of ``answer-correctness``: reading the rows to judge, writing them back with
the judge's outcome (docs/metrics.md)."""

from __future__ import annotations

import csv
import decimal
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graphrag_eval.errors import InputError
from graphrag_eval.files import decode_utf8, write_text_atomic
from graphrag_eval.metrics.base import Failed, Outcome, Scored

__all__ = [
    "TSV_COLUMNS",
    "TSV_OUTPUTS",
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


def read_answer_rows(path: Path) -> list[dict[str, str]]:
    """The rows of the TSV file ``path``, which must have the :data:`TSV_COLUMNS`.

    Raises :class:`InputError` for a file that cannot be read as such."""
    label = str(path)
    try:
        text = decode_utf8(path.read_bytes())
    except FileNotFoundError:
        raise InputError("file not found", file=label) from None
    except ValueError as exc:  # not UTF-8: the line and column of the first bad byte
        raise InputError(str(exc), file=label) from None
    reader = csv.DictReader(io.StringIO(text), delimiter="\t")
    header = reader.fieldnames or []
    missing = [column for column in TSV_COLUMNS if column not in header]
    if missing:
        raise InputError(
            f"missing column(s) {', '.join(missing)} (the header has: "
            f"{', '.join(header) or 'nothing'})",
            file=label,
            item="line 1",
        )
    rows = []
    for number, row in enumerate(reader, start=2):
        if None in row:
            raise InputError(
                "more values than columns (a tab inside a value?)",
                file=label,
                item=f"line {number}",
            )
        rows.append({key: value or "" for key, value in row.items()})
    return rows


def write_judged_rows(
    path: Path, rows: Sequence[dict[str, str]], outcomes: Sequence[Outcome]
) -> None:
    """Write ``rows`` with the :data:`TSV_OUTPUTS` of their outcomes to the TSV file ``path``;
    a cell that would run as a spreadsheet formula is neutralised (:func:`neutralise_formula`)."""
    fieldnames = [*(rows[0].keys() if rows else TSV_COLUMNS)]
    fieldnames += [name for name in TSV_OUTPUTS if name not in fieldnames]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames, delimiter="\t", lineterminator="\n")
    writer.writeheader()
    for row, outcome in zip(rows, outcomes, strict=True):
        values: dict[str, Any] = dict(row)
        if isinstance(outcome, Scored):
            values.update({key: _plain(value) for key, value in outcome.values.items()})
        elif isinstance(outcome, Failed):
            values["answer_eval_error"] = outcome.error
        writer.writerow({key: neutralise_formula(value) for key, value in values.items()})
    write_text_atomic(path, buffer.getvalue())


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
