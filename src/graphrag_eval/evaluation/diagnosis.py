"""The query diagnosis of an item's SPARQL steps (docs/knowledge-graph.md, "Why a query is
wrong: ``query_diagnosis``"): after matching, each ``sparql_query`` reference step below a
full match whose nearest actual step (as its explanation picked it) is a ``sparql_query``
step too gets the labels of :mod:`graphrag_eval.graph.diagnosis` on its explanation, written
as ``query_diagnosis``. Only when ``sparql.diagnose`` says so (by default: when a store is
configured) and rdflib can be imported; ``unknown_iri`` only with the run's store."""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Mapping
from typing import Any

from graphrag_eval.config.model import EvaluationConfig
from graphrag_eval.graph.diagnosis import (
    Diagnosis,
    Finding,
    diagnose_queries,
    sparql_parser_available,
)
from graphrag_eval.graph.execution import Execution, ExecutionError, GraphStore
from graphrag_eval.graph.iri_check import unknown_iris
from graphrag_eval.inputs import ActualStep, ReferenceQuestion, ReferenceStep, Response
from graphrag_eval.steps.matching import StepsOutcome
from graphrag_eval.steps.reasons import StepExplanation

__all__ = ["SPARQL_STEP", "diagnose_steps", "execution_error_of"]

logger = logging.getLogger("graphrag_eval")

SPARQL_STEP = "sparql_query"


@functools.cache
def _parser() -> bool:
    return sparql_parser_available()


async def diagnose_steps(
    question: ReferenceQuestion,
    response: Response,
    steps: StepsOutcome | None,
    config: EvaluationConfig,
    store: GraphStore | None,
) -> StepsOutcome | None:
    """``steps`` with the query diagnosis on the explanations it applies to; unchanged
    unless ``sparql.diagnose`` (by default: a configured store), without rdflib, and on a bug
    (logged: it costs the diagnosis, never the item)."""
    if steps is None or not steps.explanations or not config.sparql.diagnoses:
        return steps
    if not _parser():
        return steps
    try:
        explanations = dict(steps.explanations)
        for (g, i), why in steps.explanations.items():
            pair = _pair(question, response, g, i, why)
            if pair is not None:
                findings = await diagnose_pair(*pair, store=store)
                if findings is not None:
                    records = tuple(finding.as_record() for finding in findings)
                    explanations[(g, i)] = dataclasses.replace(why, diagnosis=records)
    except Exception:
        logger.exception("the query diagnosis failed for question %r", question.id)
        return steps
    return dataclasses.replace(steps, explanations=explanations)


def _pair(
    question: ReferenceQuestion, response: Response, g: int, i: int, why: Any
) -> tuple[ReferenceStep, ActualStep] | None:
    """The reference step and its nearest actual step, when both are SPARQL steps with a
    query."""
    if not isinstance(why, StepExplanation) or why.nearest is None:
        return None
    groups, actual_steps = question.reference_steps or (), response.actual_steps or ()
    if g >= len(groups) or i >= len(groups[g]) or why.nearest >= len(actual_steps):
        return None
    reference, actual = groups[g][i], actual_steps[why.nearest]
    if reference.name != SPARQL_STEP or actual.name != SPARQL_STEP:
        return None
    if _query(reference.args) is None or _query(actual.args) is None:
        return None
    return reference, actual


def _query(args: Any) -> str | None:
    query = args.get("query") if isinstance(args, Mapping) else None
    return query if isinstance(query, str) and query.strip() else None


async def diagnose_pair(
    reference: ReferenceStep, actual: ActualStep, *, store: GraphStore | None
) -> list[Finding] | None:
    """The findings on one pair of SPARQL steps, ``unknown_iri`` asked of ``store``."""
    reference_query, actual_query = _query(reference.args), _query(actual.args)
    if reference_query is None or actual_query is None:
        return None
    diagnosed = diagnose_queries(
        reference_query,
        actual_query,
        ordered=reference.ordered,
        ignore_duplicates=reference.ignore_duplicates,
        error_kind=execution_error_of(actual),
    )
    if diagnosed is None:
        return None
    findings, reference_shape, actual_shape = diagnosed
    if store is not None and actual_shape is not None and store.unusable is None:
        own = set(reference_shape.iris()) if reference_shape is not None else set()
        try:
            unknown = await unknown_iris(store, [i for i in actual_shape.iris() if i not in own])
        except Exception:  # a store that raises (a bug): no unknown_iri, the rest stands
            logger.exception("asking the store about the IRIs of a query failed")
            unknown = []
        if unknown:
            shown = tuple(actual_shape.show_iri(iri) for iri in unknown)
            findings.append(Finding(Diagnosis.UNKNOWN_IRI, found=shown))
            findings.sort(key=lambda finding: list(Diagnosis).index(finding.label))
    return findings


def execution_error_of(step: ActualStep) -> ExecutionError | None:
    """Why the step's execution gave no results, when it was executed: the
    :class:`~graphrag_eval.graph.Execution` kept in the step's ``memo["execution"]``, or an
    ``execution`` record (``error_kind``) on the step (docs/outputs.md)."""
    execution = step.memo.get("execution")
    if isinstance(execution, Execution):
        return execution.error_kind
    record = step.raw.get("execution") if isinstance(step.raw, Mapping) else None
    kind = record.get("error_kind") if isinstance(record, Mapping) else None
    try:
        return ExecutionError(kind) if isinstance(kind, str) else None
    except ValueError:
        return None
