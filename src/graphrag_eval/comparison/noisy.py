"""The two-level intervals of a scope's metrics that either run has judge repeats of, with the
judge's part of each (docs/report.md, "Judge noise in a comparison")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphrag_eval.comparison.bootstrap import scope_generator
from graphrag_eval.comparison.model import NoiseSummary
from graphrag_eval.comparison.noise import POWER, RunRepeats, two_level_interval
from graphrag_eval.comparison.pairing import PairedRuns

__all__ = ["NoisyInterval", "noisy_intervals"]


@dataclass(frozen=True, slots=True)
class NoisyInterval:
    low: float
    high: float
    noise: NoiseSummary


def noisy_intervals(
    paired: PairedRuns,
    scope: str,
    rows: np.ndarray,
    both: np.ndarray,
    differences: np.ndarray,
    one_level: dict[int, tuple[float, float]],
    seed: int,
    resamples: int,
    confidence: float,
) -> dict[int, NoisyInterval]:
    """Per column some question of the scope has repeats of (in either run): the two-level
    interval of its difference and what part of it is the judge's. ``one_level`` gives the
    columns' intervals resampling questions only. Each interval's generator is the one the
    one-level interval of that column alone would have (same seed, scope and questions)."""
    found: dict[int, NoisyInterval] = {}
    for column, name in enumerate(paired.names):
        if column not in one_level or not (name in paired.repeats_a or name in paired.repeats_b):
            continue
        where = np.flatnonzero(both[:, column])
        taken = rows[where]
        run_a = _run_repeats(paired.repeats_a.get(name), taken)
        run_b = _run_repeats(paired.repeats_b.get(name), taken)
        if run_a.counts.max() < 2 and run_b.counts.max() < 2:
            continue  # no question of the scope has two repeats: nothing to add
        question_ids = [paired.question_ids[row] for row in taken]
        rng = scope_generator(seed, scope, question_ids)
        two = two_level_interval(
            differences[where, column], run_a, run_b, rng, resamples, confidence
        )
        low_one, high_one = one_level[column]
        found[column] = NoisyInterval(
            two.low,
            two.high,
            NoiseSummary(
                repeats_a=float(run_a.counts.mean()),
                repeats_b=float(run_b.counts.mean()),
                one_level_ci_low=low_one,
                one_level_ci_high=high_one,
                without_judge_ci_low=two.low_questions,
                without_judge_ci_high=two.high_questions,
                question_variance=two.question_variance,
                judge_variance=two.judge_variance,
                judge_share=two.judge_share,
                narrows_most="repeats" if two.judge_share > 0.5 else "questions",
                detectable_difference=two.detectable(confidence),
                power=POWER,
            ),
        )
    return found


def _run_repeats(matrix: np.ndarray | None, rows: np.ndarray) -> RunRepeats:
    """One run's repeats of the questions ``rows``; exact values where it has none."""
    if matrix is None:
        return RunRepeats.exact(len(rows))
    return RunRepeats.of(matrix[rows])
