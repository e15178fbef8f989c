"""How each metric moved over a scope of paired questions (all of them, or one template's):
the means, the bootstrap interval of their difference, the verdict, and the questions that
moved most (docs/report.md, "The method")."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from graphrag_eval.comparison.bootstrap import bootstrap_intervals, scope_generator
from graphrag_eval.comparison.model import ItemChange, MetricChange, NoiseSummary, Verdict
from graphrag_eval.comparison.noisy import noisy_intervals
from graphrag_eval.comparison.pairing import PairedRuns
from graphrag_eval.comparison.units import unit_of

__all__ = ["MIN_PAIRS", "Resampling", "scope_changes"]

MIN_PAIRS = 6
"""Fewer paired questions than this get no verdict: with 5 pairs even a change in the same
direction on all of them is within chance (a sign test gives p = 0.06), and a bootstrap of
so few values cannot show otherwise."""

_TOLERANCE = 1e-12  # differences below this are float noise, not changes


@dataclass(frozen=True, slots=True)
class Resampling:
    """How the intervals are drawn: the seed, the number of resamples, the confidence."""

    seed: int
    resamples: int
    confidence: float


def scope_changes(
    paired: PairedRuns,
    scope: str,
    rows: np.ndarray,
    resampling: Resampling,
    top: int,
) -> dict[str, MetricChange]:
    """Each metric's change over the paired questions ``rows`` of ``scope`` ("" overall, else
    a template id); metrics no question of the scope has are left out."""
    a = paired.a[rows]
    b = paired.b[rows]
    has_a = ~np.isnan(a)
    has_b = ~np.isnan(b)
    both = has_a & has_b
    only_a = (has_a & ~has_b).sum(axis=0)
    only_b = (has_b & ~has_a).sum(axis=0)
    differences = b - a
    intervals = _intervals(paired, scope, rows, both, differences, resampling)
    noise: dict[int, NoiseSummary] = {}
    if paired.repeats_a or paired.repeats_b:
        # The judge's repeats: the two-level interval replaces the one-level one.
        for column, found in noisy_intervals(
            paired, scope, rows, both, differences, intervals,
            resampling.seed, resampling.resamples, resampling.confidence,
        ).items():  # fmt: skip
            intervals[column] = (found.low, found.high)
            noise[column] = found.noise
    changes: dict[str, MetricChange] = {}
    for column, name in enumerate(paired.names):
        where = np.flatnonzero(both[:, column])
        if not len(where) and not only_a[column] and not only_b[column]:
            continue  # the metric is not about these questions
        changes[name] = _metric_change(
            paired,
            name,
            rows[where],
            a[where, column],
            b[where, column],
            intervals.get(column),
            int(only_a[column]),
            int(only_b[column]),
            top,
            noise.get(column),
        )
    return changes


def _intervals(
    paired: PairedRuns,
    scope: str,
    rows: np.ndarray,
    both: np.ndarray,
    differences: np.ndarray,
    resampling: Resampling,
) -> dict[int, tuple[float, float]]:
    """The interval of each column that some question has in both runs."""
    # Metrics scored on the same questions share their resamples: one draw serves them all.
    groups: dict[bytes, list[int]] = {}
    for column in range(len(paired.names)):
        if both[:, column].any():
            groups.setdefault(np.packbits(both[:, column]).tobytes(), []).append(column)
    intervals: dict[int, tuple[float, float]] = {}
    for columns in groups.values():
        where = np.flatnonzero(both[:, columns[0]])
        question_ids = [paired.question_ids[rows[index]] for index in where]
        rng = scope_generator(resampling.seed, scope, question_ids)
        found = bootstrap_intervals(
            differences[where][:, columns], rng, resampling.resamples, resampling.confidence
        )
        intervals.update(zip(columns, found, strict=True))
    return intervals


def _metric_change(
    paired: PairedRuns,
    name: str,
    rows: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    interval: tuple[float, float] | None,
    only_a: int,
    only_b: int,
    top: int,
    noise: NoiseSummary | None = None,
) -> MetricChange:
    spec = paired.keys[name]
    if not len(rows) or interval is None:
        return MetricChange(
            name, 0, None, None, None, None, None, "no pairs", spec.lower_is_better,
            0, 0, 0, only_a, only_b, unit=unit_of(spec),
        )  # fmt: skip
    low, high = interval
    gains = (a - b) if spec.lower_is_better else (b - a)
    improved = np.flatnonzero(gains > _TOLERANCE)
    regressed = np.flatnonzero(gains < -_TOLERANCE)
    # Largest change first; among equal changes, the questions' order.
    improved = improved[np.argsort(-gains[improved], kind="stable")]
    regressed = regressed[np.argsort(gains[regressed], kind="stable")]

    def listed(indices: np.ndarray) -> list[ItemChange]:
        return [
            ItemChange(
                paired.question_ids[rows[index]],
                paired.templates[rows[index]],
                float(a[index]),
                float(b[index]),
            )
            for index in (indices[:top] if top else indices)
        ]

    mean_a = math.fsum(a.tolist()) / len(a)
    mean_b = math.fsum(b.tolist()) / len(b)
    return MetricChange(
        metric=name,
        pairs=len(rows),
        mean_a=mean_a,
        mean_b=mean_b,
        difference=mean_b - mean_a,
        ci_low=low,
        ci_high=high,
        verdict=_verdict(len(rows), low, high, spec.lower_is_better),
        lower_is_better=spec.lower_is_better,
        improved=len(improved),
        regressed=len(regressed),
        unchanged=len(rows) - len(improved) - len(regressed),
        scored_only_in_a=only_a,
        scored_only_in_b=only_b,
        better_items=listed(improved),
        worse_items=listed(regressed),
        unit=unit_of(spec),
        noise=noise,
    )


def _verdict(pairs: int, low: float, high: float, lower_is_better: bool) -> Verdict:
    """Better or worse when the interval excludes 0, unless there are too few pairs."""
    if pairs < MIN_PAIRS:
        return "too few pairs"
    if low > _TOLERANCE:
        return "worse" if lower_is_better else "better"
    if high < -_TOLERANCE:
        return "better" if lower_is_better else "worse"
    return "unchanged"
