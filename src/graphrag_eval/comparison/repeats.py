"""Each paired question's judge repeats of a metric, as questions x repeats matrices, for the
two-level bootstrap (docs/report.md, "Judge noise in a comparison")."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from graphrag_eval.comparison.model import JudgeRepeats
from graphrag_eval.comparison.pairing import PairedRuns
from graphrag_eval.results.model import QuestionResult, RunResult

__all__ = [
    "MAX_REPEATS",
    "judge_repeats",
    "repeat_matrices",
    "repeats_by_question",
    "with_repeats",
]

MAX_REPEATS = 100
"""Repeats read per question and metric: a results file may be hostile, the rest is ignored."""

RepeatsByQuestion = dict[str, dict[str, tuple[float | None, ...]]]
"""Question id -> metric key -> its repeat values (None for a failed repeat)."""


def repeats_by_question(
    results: Sequence[Mapping[str, Any]] | RunResult, names: Iterable[str]
) -> RepeatsByQuestion:
    """The repeat values (``KEY_repeats``) of the keys ``names`` in each question's result; a
    repeated question id keeps its first result, as the pairing does."""
    wanted = list(names)
    found: RepeatsByQuestion = {}
    items = results.results if isinstance(results, RunResult) else results
    for item in items:
        fields = item.fields if isinstance(item, QuestionResult) else item
        question_id = str(fields.get("question_id"))
        if question_id in found:
            continue
        row = {}
        for name in wanted:
            values = _repeat_values(fields.get(f"{name}_repeats"))
            if values:
                row[name] = values
        found[question_id] = row
    return found


def _repeat_values(value: object) -> tuple[float | None, ...] | None:
    """A list of numbers (None for a failed repeat), else None."""
    if not isinstance(value, list) or not value:
        return None
    kept: list[float | None] = []
    for entry in value[:MAX_REPEATS]:
        if entry is None:
            kept.append(None)
        elif isinstance(entry, int | float) and not isinstance(entry, bool):
            number = float(entry)
            kept.append(number if math.isfinite(number) else None)
        else:
            return None  # not repeat values: the key is something else
    return tuple(kept) if any(entry is not None for entry in kept) else None


def repeat_matrices(
    repeats: Mapping[str, Mapping[str, Sequence[float | None]]],
    question_ids: Sequence[str],
    names: Iterable[str],
) -> dict[str, np.ndarray]:
    """Key -> paired questions x repeats (NaN for a failed or absent repeat; a question without
    repeats has its row empty), for the keys some paired question has repeats of."""
    matrices: dict[str, np.ndarray] = {}
    for name in names:
        rows = [repeats.get(qid, {}).get(name, ()) for qid in question_ids]
        if not any(rows):
            continue
        matrix = np.full((len(question_ids), max(len(row) for row in rows)), np.nan)
        for index, row in enumerate(rows):
            if row:
                matrix[index, : len(row)] = [np.nan if v is None else v for v in row]
        matrices[name] = matrix
    return matrices


def with_repeats(
    paired: PairedRuns,
    results_a: Sequence[Mapping[str, Any]] | RunResult,
    results_b: Sequence[Mapping[str, Any]] | RunResult,
) -> PairedRuns:
    """``paired`` with the judge repeats each run has of its keys over the paired questions."""
    matrices = [
        repeat_matrices(
            repeats_by_question(results, paired.names), paired.question_ids, paired.names
        )
        for results in (results_a, results_b)
    ]
    if not matrices[0] and not matrices[1]:
        return paired
    return replace(paired, repeats_a=matrices[0], repeats_b=matrices[1])


def judge_repeats(paired: PairedRuns) -> JudgeRepeats | None:
    """The most valid repeats of a paired question in each run, where either has two or more."""
    counts = [
        max((int((~np.isnan(matrix)).sum(axis=1).max()) for matrix in found.values()), default=1)
        for found in (paired.repeats_a, paired.repeats_b)
    ]
    return JudgeRepeats(counts[0], counts[1]) if max(counts) > 1 else None
