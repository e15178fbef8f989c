"""Drift: how a reference step's stored output compares with what its query gives against the
graph now (docs/knowledge-graph.md, "Refreshing references: drift").

Outputs are compared as steps are scored (docs/steps.md, "SPARQL results comparison"): on the
step's required columns, as sets unless it is ``ordered``, numbers within tolerance. An output
that compares equal is unchanged, and is kept as it is written (a store that returns the rows
in another order changes nothing).
"""

from __future__ import annotations

import enum
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from graphrag_eval.graph.execution import Execution
from graphrag_eval.inputs import ReferenceStep
from graphrag_eval.steps.sparql import compare_sparql_results, parse_sparql_results
from graphrag_eval.steps.sparql_diff import describe_cell, diff_sparql
from graphrag_eval.steps.sparql_values import Cell, SparqlResults

__all__ = [
    "DRIFTED",
    "SHOWN_ROWS",
    "Drift",
    "DriftReport",
    "QuestionDrift",
    "StepDrift",
    "fresh_output",
    "reference_query",
    "step_drift",
]

SHOWN_ROWS: Final = 5
"""How many of the rows added and removed a changed step lists."""


class Drift(enum.Enum):
    """What became of a reference step's output (``drift`` in the drift report)."""

    UNCHANGED = "unchanged"
    """The query gives what the output holds (as steps are compared)."""
    CHANGED = "changed"
    """Rows were added or removed (or the ASK answer flipped, or there was no usable output)."""
    NOW_EMPTY = "now_empty"
    """The query gives no rows any more."""
    NOW_FAILING = "now_failing"
    """The query fails (its error), or gives more rows than ``sparql.row_limit``: the old
    output is kept."""
    NO_QUERY = "no_query"
    """A ``sparql_query`` step without ``args.query`` (or a question without such a step)."""


DRIFTED: Final = frozenset({Drift.CHANGED, Drift.NOW_EMPTY, Drift.NOW_FAILING})
"""What ``--fail-on-drift`` fails on."""

_SEVERITY: Final = (Drift.NOW_FAILING, Drift.NOW_EMPTY, Drift.CHANGED, Drift.UNCHANGED)


@dataclass(frozen=True, slots=True)
class StepDrift:
    """The drift of one reference ``sparql_query`` step."""

    step: str
    """Where it is in its question: ``reference_steps[0][1]``."""
    drift: Drift
    reason: str | None = None
    rows_before: int | None = None
    rows_after: int | None = None
    added: tuple[Mapping[str, str], ...] = ()
    """The first :data:`SHOWN_ROWS` rows added, on the required columns."""
    added_count: int = 0
    removed: tuple[Mapping[str, str], ...] = ()
    removed_count: int = 0
    error: str | None = None
    error_kind: str | None = None

    def as_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"step": self.step, "drift": self.drift.value}
        optional = {
            "reason": self.reason,
            "error": self.error,
            "error_kind": self.error_kind,
            "rows_before": self.rows_before,
            "rows_after": self.rows_after,
        }
        record.update((key, value) for key, value in optional.items() if value is not None)
        if self.drift in (Drift.CHANGED, Drift.NOW_EMPTY):
            record["added_count"] = self.added_count
            record["added"] = [dict(row) for row in self.added]
            record["removed_count"] = self.removed_count
            record["removed"] = [dict(row) for row in self.removed]
        return record


@dataclass(frozen=True, slots=True)
class QuestionDrift:
    """The drift of one question: the most severe of its steps'."""

    template_id: str
    question_id: str
    steps: tuple[StepDrift, ...]

    @property
    def drift(self) -> Drift:
        kinds = {step.drift for step in self.steps}
        return next((kind for kind in _SEVERITY if kind in kinds), Drift.NO_QUERY)

    def as_record(self) -> dict[str, Any]:
        return {
            "question_id": self.question_id,
            "template_id": self.template_id,
            "drift": self.drift.value,
            "steps": [step.as_record() for step in self.steps],
        }


@dataclass(slots=True)
class DriftReport:
    """The drift of every question of a reference, against one store."""

    store: Mapping[str, Any]
    """The store's identity (:meth:`StoreIdentity.as_record`)."""
    questions: list[QuestionDrift] = field(default_factory=list)

    @property
    def steps(self) -> Iterable[StepDrift]:
        return (step for question in self.questions for step in question.steps)

    def step_counts(self) -> dict[Drift, int]:
        return _counts(step.drift for step in self.steps)

    def question_counts(self) -> dict[Drift, int]:
        return _counts(question.drift for question in self.questions)

    def per_template(self) -> dict[str, dict[Drift, int]]:
        """Question counts by drift, per template (in reference order)."""
        grouped: dict[str, list[Drift]] = {}
        for question in self.questions:
            grouped.setdefault(question.template_id, []).append(question.drift)
        return {template: _counts(drifts) for template, drifts in grouped.items()}

    @property
    def drifted(self) -> int:
        """Steps that changed, are now empty or now fail."""
        return sum(1 for step in self.steps if step.drift in DRIFTED)

    def as_record(self) -> dict[str, Any]:
        """The drift report as ``--drift-report`` writes it."""

        def named(counts: Mapping[Drift, int]) -> dict[str, int]:
            return {kind.value: count for kind, count in counts.items()}

        return {
            "store": dict(self.store),
            "steps": named(self.step_counts()),
            "questions": named(self.question_counts()),
            "templates": [
                {"template_id": template, "questions": named(counts)}
                for template, counts in self.per_template().items()
            ],
            "drift": [question.as_record() for question in self.questions],
        }


def _counts(drifts: Iterable[Drift]) -> dict[Drift, int]:
    counted = Counter(drifts)
    return {kind: counted[kind] for kind in Drift}


def reference_query(step: ReferenceStep) -> str | None:
    """The query of a reference step (``args.query``), or ``None`` when it has none."""
    query = step.args.get("query") if isinstance(step.args, Mapping) else None
    return query if isinstance(query, str) and query.strip() else None


def step_drift(step: ReferenceStep, where: str, execution: Execution | None) -> StepDrift:
    """The drift of ``step`` (at ``where`` in its question) given its query's
    ``execution`` (``None``: the step has no query)."""
    if execution is None:
        return StepDrift(where, Drift.NO_QUERY, reason="the step has no args.query")
    if not execution.ok:
        kind = execution.error_kind.value if execution.error_kind is not None else None
        error = " ".join(str(execution.error).split())  # one line, whatever the store said
        return StepDrift(where, Drift.NOW_FAILING, error=error, error_kind=kind)
    if execution.truncated:
        return StepDrift(
            where,
            Drift.NOW_FAILING,
            error=f"more than {execution.rows:,} rows (sparql.row_limit): raise the limit to "
            "refresh this output",
            error_kind="truncated",
        )
    assert execution.results is not None
    new = parse_sparql_results(execution.results)
    try:
        old = parse_sparql_results(step.output) if step.output is not None else None
    except ValueError:
        old = None
    if old is None:
        reason = "no output before" if step.output is None else "the output was not SPARQL results"
        return _all_new(where, new, reason)
    return _compared(step, where, old, new)


def _all_new(where: str, new: SparqlResults, reason: str) -> StepDrift:
    rows = _rows(new)
    drift = Drift.NOW_EMPTY if not new.is_ask and not new.row_count else Drift.CHANGED
    return StepDrift(
        where,
        drift,
        reason=reason,
        rows_after=None if new.is_ask else new.row_count,
        added=tuple(rows[:SHOWN_ROWS]),
        added_count=len(rows),
    )


def _compared(step: ReferenceStep, where: str, old: SparqlResults, new: SparqlResults) -> StepDrift:
    settings: dict[str, Any] = {
        "ordered": step.ordered,
        "ignore_duplicates": step.ignore_duplicates,
    }
    required = step.required_columns
    if required is not None and not all(name in old.columns for name in required):
        required = None  # the old output lacks a required column: compare all of it
    try:
        same = compare_sparql_results(old, new, required, **settings)
    except ValueError:
        same = 0
    base = StepDrift(
        where,
        Drift.UNCHANGED,
        rows_before=None if old.is_ask else old.row_count,
        rows_after=None if new.is_ask else new.row_count,
    )
    if same:
        return base
    if not new.is_ask and not old.is_ask and new.row_count == 0:
        lost = _rows(old)
        return replace(
            base,
            drift=Drift.NOW_EMPTY,
            reason="the query gives no rows any more",
            removed=tuple(lost[:SHOWN_ROWS]),
            removed_count=len(lost),
        )
    diff = diff_sparql(old, new, required, **settings)
    names = [name for name, _ in diff.columns]
    added = [row for row in dict.fromkeys(diff.actual_rows) if row in diff.extra]
    removed = [row for row in dict.fromkeys(diff.reference_rows) if row in diff.missing]
    return replace(
        base,
        drift=Drift.CHANGED,
        reason=diff.reason,
        added=tuple(_row(names, row) for row in added[:SHOWN_ROWS]),
        added_count=len(added),
        removed=tuple(_row(names, row) for row in removed[:SHOWN_ROWS]),
        removed_count=len(removed),
    )


def _rows(results: SparqlResults) -> list[Mapping[str, str]]:
    """A SELECT result's distinct rows (none for ASK)."""
    if results.is_ask or not results.vars:
        return []
    columns = [results.columns[name] for name in results.vars]
    return [_row(results.vars, row) for row in dict.fromkeys(zip(*columns, strict=True))]


def _row(names: Sequence[str], row: Sequence[Cell]) -> Mapping[str, str]:
    return {
        name: cell if isinstance(cell, str) else describe_cell(cell)
        for name, cell in zip(names, row, strict=True)
    }


def fresh_output(old: Any, results: Mapping[str, Any]) -> Any:
    """The new output in the form the old one has: a mapping stays a mapping; else SPARQL
    results JSON text, indented when the old text was (compact as ``examples/reference.yaml``
    writes it otherwise)."""
    if isinstance(old, Mapping):
        return json.loads(json.dumps(results))  # plain dicts and lists
    indent = 2 if isinstance(old, str) and "\n" in old.strip() else None
    return json.dumps(results, ensure_ascii=False, indent=indent)
