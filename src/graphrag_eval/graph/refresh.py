"""Refreshing a reference: every ``sparql_query`` reference step's query executed against the
store, the drift of its output, and the reference's text with the outputs that drifted
replaced (docs/knowledge-graph.md, "Refreshing references: drift"). Also what ``validate``
executes: each reference query once, and the ones that fail or give nothing.
"""

from __future__ import annotations

import asyncio
import codecs
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphrag_eval.errors import InputError
from graphrag_eval.files.documents import read_bounded
from graphrag_eval.files.textcheck import decode_utf8
from graphrag_eval.graph.drift import (
    Drift,
    DriftReport,
    QuestionDrift,
    StepDrift,
    fresh_output,
    reference_query,
    step_drift,
)
from graphrag_eval.graph.execution import Execution, GraphStore
from graphrag_eval.graph.rewrite import RewriteError, StepKey, rewrite_outputs
from graphrag_eval.inputs import Notice, ReferenceQuestion, ReferenceStep
from graphrag_eval.inputs.reference import load_reference, parse_reference

__all__ = [
    "SPARQL_STEP",
    "ReferenceFile",
    "Refreshed",
    "check_reference_queries",
    "execute_queries",
    "read_reference_file",
    "refresh_reference",
    "sparql_steps",
]

SPARQL_STEP = "sparql_query"
"""The reference steps whose queries are executed."""


@dataclass(frozen=True, slots=True)
class Refreshed:
    """What refreshing a reference gave."""

    report: DriftReport
    text: str
    """The reference file's text with the new outputs (as it was when none changed)."""
    refreshed: int
    """How many outputs were replaced or added."""
    queries: int
    """How many distinct queries were executed."""
    unusable: str | None
    """Why the store became unusable during the refresh (the steps it left are now
    failing), or ``None``."""


def sparql_steps(
    question: ReferenceQuestion,
) -> Iterator[tuple[int, int, ReferenceStep]]:
    """The ``sparql_query`` steps of a question, with their group's and own index."""
    for g, group in enumerate(question.reference_steps or ()):
        for s, step in enumerate(group):
            if step.name == SPARQL_STEP:
                yield g, s, step


async def execute_queries(store: GraphStore, queries: Iterable[str]) -> dict[str, Execution]:
    """Each distinct query executed once (at most ``sparql.concurrency`` at once, as the store
    allows), by its text."""
    distinct = list(dict.fromkeys(queries))
    done = await asyncio.gather(*(store.execute(query) for query in distinct))
    return dict(zip(distinct, done, strict=True))


@dataclass(frozen=True, slots=True)
class ReferenceFile:
    """A reference dataset file read for refreshing: its data, its questions, its text."""

    path: Path
    data: list[Any]
    questions: list[ReferenceQuestion]
    text: str
    bom: bool
    """The file starts with a byte order mark (kept in the text written)."""


def read_reference_file(path: Path) -> ReferenceFile:
    """The reference at ``path``; an unreadable or invalid file raises :class:`InputError`
    (before any store is opened)."""
    data = load_reference(path)
    questions = parse_reference(data, source=str(path))
    try:
        raw = read_bounded(path)
        text = decode_utf8(raw)
    except (OSError, ValueError) as exc:
        raise InputError(str(exc), file=str(path)) from None
    return ReferenceFile(path, data, questions, text, raw.startswith(codecs.BOM_UTF8))


async def refresh_reference(reference: Path | ReferenceFile, store: GraphStore) -> Refreshed:
    """Execute every reference query of the file ``reference`` against ``store``; the drift
    of each step and the file's text with the outputs that changed or became empty replaced
    (the ones now failing keep their old output).

    Raises :class:`InputError` when the file cannot be read or rewritten."""
    file = reference if isinstance(reference, ReferenceFile) else read_reference_file(reference)
    located = list(_question_places(file.data, file.questions))
    executions = await execute_queries(
        store,
        (
            query
            for _, question in located
            for _, _, step in sparql_steps(question)
            if (query := reference_query(step)) is not None
        ),
    )
    report = DriftReport(store.identity.as_record())
    outputs: dict[StepKey, Any] = {}
    for (t, q), question in located:
        drifts: list[StepDrift] = []
        for g, s, step in sparql_steps(question):
            query = reference_query(step)
            execution = executions[query] if query is not None else None
            drift = step_drift(step, f"reference_steps[{g}][{s}]", execution)
            drifts.append(drift)
            if drift.drift in (Drift.CHANGED, Drift.NOW_EMPTY) and execution is not None:
                assert execution.results is not None
                outputs[(t, q, g, s)] = fresh_output(step.output, execution.results)
        report.questions.append(QuestionDrift(question.template_id, question.id, tuple(drifts)))
    is_json = file.path.suffix.lower() == ".json"
    try:
        rewritten = rewrite_outputs(file.text, is_json, file.data, outputs)
    except RewriteError as exc:
        raise InputError(
            f"cannot write the new outputs into it: {exc}", file=str(file.path)
        ) from None
    if file.bom:
        rewritten = "\ufeff" + rewritten
    return Refreshed(report, rewritten, len(outputs), len(executions), store.unusable)


def _question_places(
    data: Sequence[Any], questions: Sequence[ReferenceQuestion]
) -> Iterator[tuple[tuple[int, int], ReferenceQuestion]]:
    """Each question with its template's and own index in the file (the questions are in
    file order)."""
    places = [(t, q) for t, template in enumerate(data) for q in range(len(template["questions"]))]
    yield from zip(places, questions, strict=True)


async def check_reference_queries(
    questions: Sequence[ReferenceQuestion], store: GraphStore, source: str
) -> list[Notice]:
    """Each reference query executed once: a ``reference_query`` notice for each step whose
    query fails or gives no rows (docs/inputs.md, "Checking inputs before a run")."""
    steps = [
        (question, g, s, query)
        for question in questions
        for g, s, step in sparql_steps(question)
        if (query := reference_query(step)) is not None
    ]
    executions = await execute_queries(store, (query for *_, query in steps))
    label = store.identity.label
    notices = []
    for question, g, s, query in steps:
        execution = executions[query]
        if not execution.ok:
            kind = f" ({execution.error_kind.value})" if execution.error_kind is not None else ""
            error = " ".join(str(execution.error).split())
            message = f"the query fails against {label}: {error}{kind}"
        elif execution.rows == 0:
            message = f"the query gives no rows against {label}"
        else:
            continue
        notices.append(
            Notice(
                "reference_query",
                message,
                file=source,
                item=f"question '{question.id}'",
                field=f"reference_steps[{g}][{s}].args.query",
            )
        )
    return notices
