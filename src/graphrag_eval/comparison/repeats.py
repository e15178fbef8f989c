"""Each paired question's judge repeats of a metric, as questions x repeats matrices, for the
two-level bootstrap (docs/report.md, "Judge noise in a comparison"). The repeats are those
:attr:`~graphrag_eval.results.item_values.ItemValues.repeats` reads (docs/outputs.md,
"Repeats")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from graphrag_eval.comparison.model import JudgeRepeats
from graphrag_eval.comparison.pairing import PairedRuns
from graphrag_eval.results.item_values import ItemValues
from graphrag_eval.results.repeated import RepeatValues

__all__ = ["MAX_REPEATS", "judge_repeats", "repeat_matrices", "with_repeats"]

MAX_REPEATS = 100
"""Repeats taken per question and key: a results file may be hostile, the rest is ignored."""


def with_repeats(paired: PairedRuns, values_a: ItemValues, values_b: ItemValues) -> PairedRuns:
    """``paired`` with the judge repeats each run has of its keys over the paired questions."""
    matrices = [
        repeat_matrices(_by_question(values), paired.question_ids, paired.names)
        for values in (values_a, values_b)
    ]
    if not matrices[0] and not matrices[1]:
        return paired
    return replace(paired, repeats_a=matrices[0], repeats_b=matrices[1])


def _by_question(values: ItemValues) -> dict[str, dict[str, RepeatValues]]:
    """Question id -> key -> its repeats; a repeated id keeps its first result, as the
    pairing does."""
    found: dict[str, dict[str, RepeatValues]] = {}
    for question, row in zip(values.questions, values.repeats, strict=False):
        found.setdefault(question.question_id, row)
    return found


def repeat_matrices(
    repeats: dict[str, dict[str, RepeatValues]],
    question_ids: Sequence[str],
    names: Sequence[str],
) -> dict[str, np.ndarray]:
    """Key -> paired questions x repeats (NaN for a failed or absent repeat; a question without
    repeats has its row empty), for the keys some paired question has repeats of."""
    matrices: dict[str, np.ndarray] = {}
    for name in names:
        rows = [repeats.get(qid, {}).get(name, ())[:MAX_REPEATS] for qid in question_ids]
        if not any(rows):
            continue
        matrix = np.full((len(question_ids), max(len(row) for row in rows)), np.nan)
        for index, row in enumerate(rows):
            if row:
                matrix[index, : len(row)] = [np.nan if v is None else v for v in row]
        matrices[name] = matrix
    return matrices


def judge_repeats(paired: PairedRuns) -> JudgeRepeats | None:
    """The most valid repeats of a paired question in each run, where either has two or more."""
    counts = [
        max((int((~np.isnan(matrix)).sum(axis=1).max()) for matrix in found.values()), default=1)
        for found in (paired.repeats_a, paired.repeats_b)
    ]
    return JudgeRepeats(counts[0], counts[1]) if max(counts) > 1 else None
