"""Pair two runs' item values by ``question_id``: the questions both have, their scores side
by side as question x metric matrices, and what only one run has (docs/report.md, "The
method")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from graphrag_eval.metrics.base import OutputKey
from graphrag_eval.results.item_values import ItemIdentity, ItemValues

__all__ = ["PairedRuns", "pair_runs"]

_Row = tuple[ItemIdentity, dict[str, float]]


@dataclass(frozen=True, slots=True)
class PairedRuns:
    """The questions both runs have, and their scores side by side."""

    question_ids: list[str]
    """The paired question ids, sorted: the resamples do not depend on either file's order."""
    templates: list[str]
    """Run B's template of each paired question."""
    names: list[str]
    keys: dict[str, OutputKey]
    a: np.ndarray
    """Question x metric scores of run A, NaN where the question was not scored."""
    b: np.ndarray
    scopes: dict[str, list[int]]
    """Template -> its rows, templates in the order run B lists them."""
    questions_a: int
    questions_b: int
    only_in_a: list[str]
    only_in_b: list[str]
    status_changes: dict[str, list[str]]
    repeats_a: dict[str, np.ndarray] = field(default_factory=dict)
    """Key -> question x repeats values of run A (NaN: no such repeat), for the keys it has
    judge repeats of (docs/report.md, "Judge noise in a comparison")."""
    repeats_b: dict[str, np.ndarray] = field(default_factory=dict)


def pair_runs(values_a: ItemValues, values_b: ItemValues) -> PairedRuns:
    """Pair the questions of two runs (with their numeric values) by question id."""
    by_id_a = _by_question(values_a)
    by_id_b = _by_question(values_b)
    paired_ids = sorted(qid for qid in by_id_a if qid in by_id_b)
    keys = dict(values_a.keys)
    keys.update((name, spec) for name, spec in values_b.keys.items() if name not in keys)
    names = list(keys)
    templates = [by_id_b[qid][0].template_id for qid in paired_ids]
    # Templates in the order run B lists them; their questions in sorted order, as above.
    scopes: dict[str, list[int]] = {
        by_id_b[qid][0].template_id: [] for qid in by_id_b if qid in by_id_a
    }
    for index, template in enumerate(templates):
        scopes[template].append(index)
    return PairedRuns(
        question_ids=paired_ids,
        templates=templates,
        names=names,
        keys=keys,
        a=_matrix(by_id_a, paired_ids, names),
        b=_matrix(by_id_b, paired_ids, names),
        scopes=scopes,
        questions_a=len(by_id_a),
        questions_b=len(by_id_b),
        only_in_a=[qid for qid in by_id_a if qid not in by_id_b],
        only_in_b=[qid for qid in by_id_b if qid not in by_id_a],
        status_changes=_status_changes(by_id_a, by_id_b, paired_ids),
    )


def _by_question(values: ItemValues) -> dict[str, _Row]:
    """Rows by question id; a repeated id keeps its first row, as evaluation does."""
    by_id: dict[str, _Row] = {}
    for question, row in zip(values.questions, values.values, strict=True):
        by_id.setdefault(question.question_id, (question, row))
    return by_id


def _matrix(by_id: Mapping[str, _Row], question_ids: list[str], names: list[str]) -> np.ndarray:
    """Question x metric values of one run, NaN where the question was not scored."""
    matrix = np.full((len(question_ids), len(names)), np.nan)
    for column, name in enumerate(names):
        matrix[:, column] = [by_id[qid][1].get(name, np.nan) for qid in question_ids]
    return matrix


def _status_changes(
    by_id_a: Mapping[str, _Row], by_id_b: Mapping[str, _Row], question_ids: list[str]
) -> dict[str, list[str]]:
    """``"success -> error"`` (and the other way) -> the question ids whose status changed."""
    changes: dict[str, list[str]] = {}
    for qid in question_ids:
        before = by_id_a[qid][0].status
        after = by_id_b[qid][0].status
        if before != after:
            changes.setdefault(f"{before} -> {after}", []).append(qid)
    return changes
