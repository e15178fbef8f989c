"""Why an actual SPARQL result does not match the reference one (docs/steps.md, "Why a step
did not match").

Computed only for a pair that scored below a full match, and bounded: results of more than
:data:`EXPLAIN_BUDGET_CELLS` cells get a reason from their sizes only; otherwise the column
correspondence is chosen greedily (same signature first, then the most values in common,
measured on at most :data:`OVERLAP_BUDGET_CELLS` cells), and rows are compared once on that
correspondence. The result (:class:`SparqlDiff`) gives the one-line reason, how close the
actual result came (to choose the nearest actual step) and the rows the report shows side by
side.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from operator import eq
from typing import Final

from graphrag_eval.steps.sparql import (
    Normalizer,
    actual_columns,
    normalizer,
    reference_side,
)
from graphrag_eval.steps.sparql_values import Cell, SparqlResults

__all__ = [
    "EXPLAIN_BUDGET_CELLS",
    "OVERLAP_BUDGET_CELLS",
    "SparqlDiff",
    "describe_cell",
    "diff_sparql",
    "not_sparql",
]

EXPLAIN_BUDGET_CELLS: Final = 250_000
"""Results with more cells than this (reference and actual, on the required columns) get a
short reason from their sizes only: the explanation stays bounded, whatever the results."""

OVERLAP_BUDGET_CELLS: Final = 1_000_000
"""At most this many cells are compared to find the closest actual column of a required
column that has no exact counterpart (the first rows only, beyond it)."""

_SHOWN_CHARACTERS = 120


@dataclass(slots=True)
class SparqlDiff:
    """What differs between a reference and an actual SELECT or ASK result."""

    reason: str
    closeness: float = 0.0
    """How close the actual result came, in [0, 1] (the share of reference rows found)."""
    columns: list[tuple[str, str | None]] = field(default_factory=list)
    """Each required reference column and the actual column it was compared with."""
    missing: set[tuple[Cell, ...]] = field(default_factory=set)
    """Reference rows (projected) the actual result lacks."""
    extra: set[tuple[Cell, ...]] = field(default_factory=set)
    """Actual rows (projected) the reference lacks."""
    reference_rows: list[tuple[Cell, ...]] = field(default_factory=list)
    actual_rows: list[tuple[Cell, ...]] = field(default_factory=list)


def describe_cell(cell: Cell) -> str:
    """A cell as the reasons and the report show it."""
    if cell is None:
        return "unbound"
    if isinstance(cell, str):
        return repr(cell)
    if isinstance(cell, bool | int | float):
        return repr(cell)
    value = getattr(cell, "value", None)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(getattr(cell, "lexical", cell))


def _row_text(row: Sequence[Cell]) -> str:
    text = "(" + ", ".join(describe_cell(cell) for cell in row) + ")"
    return text if len(text) <= _SHOWN_CHARACTERS else text[: _SHOWN_CHARACTERS - 4] + "...)"


_LOOKS_LIKE: Final = (
    (re.compile(r"^\s*(@prefix|@base|PREFIX\b|<[^>]*>\s+<)", re.IGNORECASE), "Turtle"),
    (re.compile(r"^\s*<\?xml|^\s*<sparql\b", re.IGNORECASE), "SPARQL results XML"),
    (re.compile(r"^\s*<(!doctype html|html)\b", re.IGNORECASE), "HTML"),
    (re.compile(r"^[^\n,]*,[^\n]*\n"), "CSV"),
)


def not_sparql(output: object) -> str:
    """The reason for an actual output that is not SPARQL results JSON."""
    if isinstance(output, str):
        for pattern, kind in _LOOKS_LIKE:
            if pattern.search(output):
                return f"actual output is not SPARQL results JSON (looks like {kind})"
        start = output.strip()[:40]
        if start[:1] in "{[" and start:
            return "actual output is JSON but not SPARQL results JSON"
        return f"actual output is not SPARQL results JSON (starts with {start!r})"
    return f"actual output is not SPARQL results JSON ({type(output).__name__})"


def diff_sparql(
    reference: SparqlResults,
    actual: SparqlResults,
    required_columns: Sequence[str] | None = None,
    *,
    ordered: bool = False,
    ignore_duplicates: bool = True,
) -> SparqlDiff:
    """What differs between two parsed results, under the comparison's settings."""
    if reference.is_ask or actual.is_ask:
        if reference.is_ask and actual.is_ask:
            closeness = float(reference.boolean == actual.boolean)
            return SparqlDiff(f"ASK result {actual.boolean} vs {reference.boolean}", closeness)
        kinds = ["ASK" if result.is_ask else "SELECT" for result in (actual, reference)]
        return SparqlDiff(f"{kinds[0]} result vs {kinds[1]} result")
    required = tuple(dict.fromkeys(required_columns or reference.vars))
    if len(actual.vars) < len(required):
        return SparqlDiff(
            f"fewer actual columns ({len(actual.vars)}) than required ({len(required)})"
        )
    if reference.row_count == 0 or actual.row_count == 0:
        return SparqlDiff(
            f"{actual.row_count:,} actual rows vs {reference.row_count:,} reference rows"
        )
    cells = (reference.row_count + actual.row_count) * len(required)
    if cells > EXPLAIN_BUDGET_CELLS:
        return SparqlDiff(
            f"rows differ: {actual.row_count:,} actual rows vs {reference.row_count:,} reference "
            f"rows (too large to say more: over {EXPLAIN_BUDGET_CELLS:,} cells)"
        )
    normalize = normalizer(ordered, ignore_duplicates)
    side = reference_side(reference, required, normalize)
    act_columns = actual_columns(actual, side)
    chosen, column_reason, unmatched = _correspondence(
        required, side.columns, side.signatures, actual.vars, act_columns, normalize, ordered
    )
    diff = SparqlDiff(
        "",
        columns=list(
            zip(required, [actual.vars[a] if a is not None else None for a in chosen], strict=True)
        ),
    )
    filler = (None,) * actual.row_count
    diff.reference_rows = list(zip(*side.columns, strict=True))
    diff.actual_rows = list(
        zip(*(act_columns[a] if a is not None else filler for a in chosen), strict=True)
    )
    rows_reason = _rows_reason(diff, ordered=ordered, ignore_duplicates=ignore_duplicates)
    # Rows only missing, or only extra, say more than the column whose values they took
    # away; values changed in place (rows both missing and extra) are the column's doing
    # when other columns do have their exact counterpart (so the blame is specific).
    exact = len(required) - unmatched
    in_place = bool(diff.missing and diff.extra) and exact > 0
    reason, kind_clash = column_reason
    diff.reason = reason if reason and (in_place or kind_clash) else rows_reason
    return diff


def _correspondence(
    required: Sequence[str],
    ref_columns: Sequence[tuple[Cell, ...]],
    ref_signatures: Sequence[Hashable],
    act_names: Sequence[str],
    act_columns: Sequence[tuple[Cell, ...]],
    normalize: Normalizer,
    ordered: bool,
) -> tuple[list[int | None], tuple[str, bool], int]:
    """The actual column each required column is compared with (same signature first,
    preferring the same name; else the unused one with the most values in common), and the
    reason about the first column that has no exact counterpart, if any, and how many have
    none."""
    signatures: dict[Hashable, list[int]] = {}
    for index, column in enumerate(act_columns):
        signatures.setdefault(normalize(column), []).append(index)
    chosen: list[int | None] = [None] * len(required)
    used: set[int] = set()
    for r, signature in enumerate(ref_signatures):
        found = [a for a in signatures.get(signature, ()) if a not in used]
        if found:
            same_name = [a for a in found if act_names[a] == required[r]]
            pick = (same_name or found)[0]
            chosen[r] = pick
            used.add(pick)
    reason: tuple[str, bool] = ("", False)
    unmatched = sum(1 for pick in chosen if pick is None)
    for r, column in enumerate(ref_columns):
        if chosen[r] is not None:
            continue
        free = [a for a in range(len(act_columns)) if a not in used]
        if not free:
            continue
        rows = max(1, OVERLAP_BUDGET_CELLS // (len(free) * 2))
        best = max(
            free,
            key=lambda a: (
                _agreement(column[:rows], act_columns[a][:rows], ordered),
                act_names[a] == required[r],
            ),
        )
        chosen[r] = best
        used.add(best)
        if not reason[0]:
            reason = _column_reason(
                required[r], column, act_names[best], act_columns[best], ordered
            )
    return chosen, reason, unmatched


def _agreement(reference: Sequence[Cell], actual: Sequence[Cell], ordered: bool) -> int:
    if ordered:
        return sum(map(eq, reference, actual))
    return sum(map(set(actual).__contains__, reference))


def _column_reason(
    name: str, reference: Sequence[Cell], act_name: str, actual: Sequence[Cell], ordered: bool
) -> tuple[str, bool]:
    """Why a required column has no exact counterpart, and whether it is a clash of literal
    kinds (``'1'`` against ``1``)."""
    kind_clash = _kind_clash(reference, actual)
    if kind_clash:
        return f"{kind_clash} in column {name!r}", True
    differing = len(reference) - _agreement(reference, actual, ordered)
    reason = (
        f"required column {name!r} has no matching actual column (closest: {act_name!r}, "
        f"{differing:,} of {len(reference):,} values differ)"
    )
    return reason, False


def _loose(cell: Cell) -> Hashable:
    """A cell without its kind: text that reads as a number is that number."""
    if isinstance(cell, str):
        text = cell.strip()
        for convert in (int, float):
            try:
                return convert(text)
            except ValueError:
                pass
        return text.casefold()
    value = getattr(cell, "value", None)
    return str(value).casefold() if isinstance(value, bool) else cell


def _kind_of(cell: Cell) -> str:
    if isinstance(cell, str):
        return "plain literal"
    if type(cell) is int:
        return "xsd:integer"
    if type(cell) is float:
        return "xsd number"
    return "xsd:boolean" if isinstance(getattr(cell, "value", None), bool) else "typed literal"


def _kind_clash(reference: Sequence[Cell], actual: Sequence[Cell]) -> str:
    """``'1' (plain literal) vs 1 (xsd:integer)``: the first reference cell whose value the
    actual column has as another kind of literal (among the first differing cells only)."""
    limit = OVERLAP_BUDGET_CELLS // 4
    in_actual, in_reference = set(actual), set(reference)
    differing = [cell for cell in reference if cell is not None and cell not in in_actual]
    others = [cell for cell in actual if cell is not None and cell not in in_reference]
    loose: dict[Hashable, Cell] = {}
    for cell in others[:limit]:
        loose.setdefault(_loose(cell), cell)
    for cell in differing[:limit]:
        other = loose.get(_loose(cell))
        if other is not None and _kind_of(other) != _kind_of(cell):
            return (
                f"{describe_cell(other)} ({_kind_of(other)}) vs "
                f"{describe_cell(cell)} ({_kind_of(cell)})"
            )
    return ""


def _rows_reason(diff: SparqlDiff, *, ordered: bool, ignore_duplicates: bool) -> str:
    ref_rows, act_rows = diff.reference_rows, diff.actual_rows
    if ignore_duplicates:
        ref_set, act_set = set(ref_rows), set(act_rows)
        diff.missing, diff.extra = ref_set - act_set, act_set - ref_set
        total, missing_count, extra_count = len(ref_set), len(diff.missing), len(diff.extra)
    else:
        ref_count, act_count = Counter(ref_rows), Counter(act_rows)
        missing, extra = ref_count - act_count, act_count - ref_count
        diff.missing, diff.extra = set(missing), set(extra)
        total = len(ref_rows)
        missing_count, extra_count = sum(missing.values()), sum(extra.values())
    diff.closeness = 1 - missing_count / total if total else 0.0
    parts = []
    if missing_count:
        first = next(row for row in ref_rows if row in diff.missing)
        parts.append(
            f"{missing_count:,} of {total:,} reference rows missing (first: {_row_text(first)})"
        )
    if extra_count:
        first = next(row for row in act_rows if row in diff.extra)
        plural = "s" if extra_count != 1 else ""
        parts.append(f"{extra_count:,} extra row{plural} (first: {_row_text(first)})")
    if parts:
        return "; ".join(parts)
    if ordered:
        ref_sequence = list(dict.fromkeys(ref_rows)) if ignore_duplicates else ref_rows
        act_sequence = list(dict.fromkeys(act_rows)) if ignore_duplicates else act_rows
        for position, (a, b) in enumerate(zip(act_sequence, ref_sequence, strict=False)):
            if a != b:
                return f"same rows, order differs (ordered) from row {position + 1}"
    return "no assignment of the required columns to actual columns gives the reference rows"
