"""The report's view of reference steps that did not match (docs/report.md, "Steps that did
not match"): the reason (``mismatch_reason``), the nearest actual step, why its query is wrong
(``query_diagnosis``, docs/knowledge-graph.md), and for SPARQL a
compact side-by-side of the first reference and actual rows, with missing and extra rows
marked and differing cells highlighted; without an actual step to compare (none of its name,
or a group not scored or compared), the reference's first rows alone.

Everything is read from the saved result; the SPARQL outputs are parsed again only for the
steps shown, and only when they are not larger than :data:`PARSED_CHARACTERS`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import eq
from typing import Any, Final

from graphrag_eval.steps.sparql_diff import SparqlDiff, describe_cell, diff_sparql
from graphrag_eval.steps.sparql_values import parse_sparql_results

__all__ = [
    "PARSED_CHARACTERS",
    "SHOWN_ROWS",
    "DiagnosisView",
    "MismatchView",
    "diagnosis_views",
    "execution_line",
    "mismatch_views",
]

SHOWN_ROWS: Final = 10
"""Rows of each side shown."""
PARSED_CHARACTERS: Final = 2_000_000
"""Outputs longer than this (as text) get the reason but no side-by-side."""

_SPARQL_JSON = "application/sparql-results+json"
_PAIRED = 50  # extra rows a missing row may be paired with


@dataclass(frozen=True, slots=True)
class CellView:
    text: str
    differs: bool = False


@dataclass(frozen=True, slots=True)
class RowView:
    reference: list[CellView]
    actual: list[CellView]
    reference_mark: str = ""
    """``missing`` when the actual result lacks this reference row."""
    actual_mark: str = ""
    """``extra`` when the reference lacks this actual row."""


@dataclass(frozen=True, slots=True)
class DiagnosisView:
    """One label of a step's ``query_diagnosis`` (docs/knowledge-graph.md), with the terms
    the reference expects and those the actual query has."""

    label: str
    expected: list[str]
    found: list[str]


_SHOWN_TERMS = 10  # terms of each side of a label shown (the results keep no more either)
_SHOWN_LABELS = 13  # labels shown (the vocabulary's size)
_TERM_CHARACTERS = 200  # characters of a term shown (as the results write them)


def diagnosis_views(diagnosis: Any) -> list[DiagnosisView]:
    """The labels of a saved ``query_diagnosis``; what is not a label is left out."""
    views = []
    for finding in diagnosis[:_SHOWN_LABELS] if isinstance(diagnosis, list) else ():
        if isinstance(finding, Mapping) and isinstance(finding.get("label"), str):
            views.append(
                DiagnosisView(
                    finding["label"], _terms(finding.get("expected")), _terms(finding.get("found"))
                )
            )
    return views


def _terms(terms: Any) -> list[str]:
    if not isinstance(terms, list):
        return []
    shown = [t if isinstance(t, str) else json.dumps(t, default=str) for t in terms[:_SHOWN_TERMS]]
    return [t if len(t) <= _TERM_CHARACTERS else t[: _TERM_CHARACTERS - 3] + "..." for t in shown]


@dataclass(slots=True)
class MismatchView:
    """One reference step below a full match."""

    label: str
    name: str
    reason: str
    nearest: str
    columns: list[tuple[str, str]] = field(default_factory=list)
    """Reference column and the actual column compared with it (side-by-side only)."""
    rows: list[RowView] = field(default_factory=list)
    more_rows: str = ""
    reference_only: bool = False
    """No actual step to compare with: ``rows`` hold the reference's first rows alone (what
    the step expects)."""
    diagnosis: list[DiagnosisView] = field(default_factory=list)
    """Why the actual query is wrong (``query_diagnosis``), shown beside the rows."""
    diagnosed: bool = False
    """The step has a ``query_diagnosis`` (empty: the queries do not differ)."""
    executions: list[str] = field(default_factory=list)
    """Where the outputs compared came from when they were executed against the graph
    (``execution``: docs/knowledge-graph.md, "Execution-based scoring")."""


def mismatch_views(fields: Mapping[str, Any]) -> list[MismatchView]:
    """The reference steps of a saved result that carry a ``mismatch_reason``."""
    actual_by_label = _actual_by_label(fields.get("actual_steps"))
    views = []
    for g, group in enumerate(fields.get("reference_steps") or ()):
        for i, step in enumerate(group if isinstance(group, list) else ()):
            if not isinstance(step, Mapping) or not isinstance(step.get("mismatch_reason"), str):
                continue
            nearest = step.get("nearest_match")
            view = MismatchView(
                label=f"{g + 1}.{i + 1}",
                name=str(step.get("name")),
                reason=step["mismatch_reason"],
                nearest=str(nearest) if nearest is not None else "",
                diagnosis=diagnosis_views(step.get("query_diagnosis")),
                diagnosed=isinstance(step.get("query_diagnosis"), list),
            )
            actual = actual_by_label.get(str(nearest)) if nearest is not None else None
            view.executions = [
                line
                for side, saved in (("reference", step), ("actual", actual))
                if (line := execution_line(side, saved)) is not None
            ]
            if step.get("output_media_type") == _SPARQL_JSON:
                if actual is not None:
                    _side_by_side(view, step, actual)
                elif nearest is None:
                    _expected_rows(view, step)
            views.append(view)
    return views


def execution_line(side: str, step: Mapping[str, Any] | None) -> str | None:
    """One line on where a step's output came from, when it was executed (its saved
    ``execution``), else ``None``."""
    execution = step.get("execution") if step is not None else None
    if not isinstance(execution, Mapping):
        return None
    where = f"{side} output executed against {execution.get('source', 'the store')}"
    seconds = execution.get("elapsed_s")
    took = f" in {seconds:.3g} s" if isinstance(seconds, int | float) else ""
    error = execution.get("error")
    if error is not None:
        kind = execution.get("error_kind")
        return f"{where}: failed{took}{f' ({kind})' if kind else ''}: {error}"
    rows = execution.get("rows")
    counted = f"{rows} rows" if isinstance(rows, int) else "an answer"
    cut = ", truncated at the row limit" if execution.get("truncated") is True else ""
    return f"{where}: {counted}{took}{cut}"


def _actual_by_label(steps: Any) -> dict[str, Mapping[str, Any]]:
    found: dict[str, Mapping[str, Any]] = {}
    for number, step in enumerate(steps if isinstance(steps, list) else (), start=1):
        if isinstance(step, Mapping):
            label = step.get("id")
            found[str(label) if label is not None else f"actual_steps[{number - 1}]"] = step
    return found


def _side_by_side(
    view: MismatchView, reference: Mapping[str, Any], actual: Mapping[str, Any]
) -> None:
    outputs = [reference.get("output"), actual.get("output")]
    if any(isinstance(o, str) and len(o) > PARSED_CHARACTERS for o in outputs):
        return
    try:
        ref, act = (parse_sparql_results(o) for o in outputs)  # type: ignore[arg-type]
    except (ValueError, TypeError):
        return
    if ref.is_ask or act.is_ask:
        return
    required = reference.get("required_columns")
    try:
        diff = diff_sparql(
            ref,
            act,
            [str(c) for c in required] if isinstance(required, list) else None,
            ordered=reference.get("ordered") is True,
            ignore_duplicates=reference.get("ignore_duplicates") is not False,
        )
    except ValueError:
        return
    view.columns = [(name, other or "-") for name, other in diff.columns]
    if not view.columns:
        return
    ordered = reference.get("ordered") is True
    pairs = _by_position(diff) if ordered else _by_value(diff)
    differs = [pair[0] in diff.missing or pair[1] in diff.extra for pair in pairs]
    differing = [pair for pair, flag in zip(pairs, differs, strict=True) if flag]
    same = [pair for pair, flag in zip(pairs, differs, strict=True) if not flag]
    # The rows that differ first (they are why), then rows in both, up to SHOWN_ROWS.
    for ref_row, act_row in (differing + same)[:SHOWN_ROWS]:
        missing = ref_row is not None and ref_row in diff.missing
        extra = act_row is not None and act_row in diff.extra
        # Cells are compared where a missing row faces an extra one: values changed in place.
        view.rows.append(
            RowView(
                reference=_cells(ref_row, act_row if missing and extra else None),
                actual=_cells(act_row, ref_row if missing and extra else None),
                reference_mark="missing" if missing else "",
                actual_mark="extra" if extra else "",
            )
        )
    if len(pairs) > SHOWN_ROWS:
        view.more_rows = (
            f"{SHOWN_ROWS} of {len(diff.reference_rows):,} reference and "
            f"{len(diff.actual_rows):,} actual rows, those that differ first"
        )


def _expected_rows(view: MismatchView, reference: Mapping[str, Any]) -> None:
    """The first rows of a SPARQL SELECT reference output, alone."""
    output = reference.get("output")
    if isinstance(output, str) and len(output) > PARSED_CHARACTERS:
        return
    try:
        parsed = parse_sparql_results(output)  # type: ignore[arg-type]
    except (ValueError, TypeError):
        return
    if parsed.is_ask or not parsed.vars:
        return
    view.reference_only = True
    view.columns = [(name, "") for name in parsed.vars]
    shown = min(parsed.row_count, SHOWN_ROWS)
    view.rows = [
        RowView(
            reference=[CellView(describe_cell(parsed.columns[name][n])) for name in parsed.vars],
            actual=[],
        )
        for n in range(shown)
    ]
    if parsed.row_count > SHOWN_ROWS:
        view.more_rows = f"{SHOWN_ROWS} of {parsed.row_count:,} reference rows"


Row = tuple[Any, ...] | None


def _by_position(diff: SparqlDiff) -> list[tuple[Row, Row]]:
    """Ordered results: row i beside row i."""
    ref_rows, act_rows = diff.reference_rows, diff.actual_rows
    return [
        (
            ref_rows[i] if i < len(ref_rows) else None,
            act_rows[i] if i < len(act_rows) else None,
        )
        for i in range(max(len(ref_rows), len(act_rows)))
    ]


def _by_value(diff: SparqlDiff) -> list[tuple[Row, Row]]:
    """Unordered results: each reference row beside the same actual row; a missing one beside
    the extra row it shares most cells with (among the first extra rows), if any; the other
    extra rows after them."""
    extras = [row for row in dict.fromkeys(diff.actual_rows) if row in diff.extra][:_PAIRED]
    pairs: list[tuple[Row, Row]] = []
    paired = 0  # missing rows looked at for a partner: only those that can be shown
    for ref_row in dict.fromkeys(diff.reference_rows):
        if ref_row not in diff.missing:
            pairs.append((ref_row, ref_row))
            continue
        if paired >= SHOWN_ROWS:
            pairs.append((ref_row, None))
            continue
        paired += 1
        shared = [(sum(map(eq, ref_row, row)), -n) for n, row in enumerate(extras)]
        best = max(shared, default=(0, 0))
        if best[0] > 0:
            pairs.append((ref_row, extras.pop(-best[1])))
        else:
            pairs.append((ref_row, None))
    placed = {act for _, act in pairs}
    pairs.extend((None, row) for row in dict.fromkeys(diff.actual_rows) if row not in placed)
    return pairs


def _cells(row: Sequence[Any] | None, other: Sequence[Any] | None) -> list[CellView]:
    if row is None:
        return []
    return [
        CellView(
            describe_cell(cell),
            differs=other is not None and (index >= len(other) or other[index] != cell),
        )
        for index, cell in enumerate(row)
    ]
