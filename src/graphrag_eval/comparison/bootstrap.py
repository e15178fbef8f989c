"""Paired bootstrap confidence intervals of mean differences, reproducible from a seed.

The paired differences are resampled with replacement ``resamples`` times and the interval is
the percentiles of the resampled means (docs/report.md, "The method").
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from graphrag_eval.comparison.model import DEFAULT_CONFIDENCE

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_RESAMPLES",
    "auto_resamples",
    "bootstrap_interval",
    "bootstrap_intervals",
    "scope_generator",
]

DEFAULT_RESAMPLES = 10_000
_CELLS_PER_CHUNK = 2_000_000  # resamples x items drawn at once: about 55 MB at the peak
_AUTO_BUDGET = 200_000_000  # pairs x resamples drawn per interval by default


def scope_generator(seed: int, scope: str, question_ids: Sequence[str]) -> np.random.Generator:
    """The generator of one scope and set of paired questions: an interval depends on the
    seed and on its own pairs only, not on which other metrics or templates the runs have."""
    digest = zlib.crc32("\n".join(question_ids).encode("utf-8"))
    return np.random.default_rng([seed, zlib.crc32(scope.encode("utf-8")), digest])


def auto_resamples(pairs: int) -> int:
    """The default number of resamples: 10,000, fewer for runs so large that this would take
    long (each resample costs one draw per pair), but never fewer than 2,000."""
    return max(2_000, min(DEFAULT_RESAMPLES, _AUTO_BUDGET // max(pairs, 1)))


def bootstrap_interval(
    differences: np.ndarray,
    rng: np.random.Generator,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of the paired ``differences``."""
    return bootstrap_intervals(np.asarray(differences)[:, None], rng, resamples, confidence)[0]


def bootstrap_intervals(
    differences: np.ndarray,
    rng: np.random.Generator,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
) -> list[tuple[float, float]]:
    """Percentile bootstrap intervals of the column means of ``differences`` (pairs x
    metrics), resampling the rows (the questions) together for every column.

    Each resample draws as many row indices as there are rows, with replacement. A chunk of
    resamples is drawn at a time, so memory stays bounded at any size.
    """
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    n, columns = differences.shape
    if n == 0:
        raise ValueError("no differences to resample")
    means = _resampled_means(differences, rng, resamples)
    tail = (1 - confidence) / 2 * 100
    intervals = []
    for column in range(columns):
        values = differences[:, column]
        if np.all(values == values[0]):
            intervals.append((float(values[0]), float(values[0])))  # no spread to resample
            continue
        low, high = np.percentile(means[:, column], [tail, 100 - tail])
        intervals.append((float(low), float(high)))
    return intervals


def _resampled_means(
    differences: np.ndarray, rng: np.random.Generator, resamples: int
) -> np.ndarray:
    """The column means of ``resamples`` resamples of the rows (resamples x columns)."""
    n, columns = differences.shape
    means = np.empty((resamples, columns), dtype=np.float64)
    chunk = max(1, min(resamples, _CELLS_PER_CHUNK // n))
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        drawn = rng.integers(0, n, size=(rows, n), dtype=np.int32 if n < 2**31 else np.int64)
        if columns < 3:  # gathering is cheaper than counting for one or two metrics
            for column in range(columns):
                means[start : start + rows, column] = differences[drawn, column].mean(axis=1)
        else:
            offsets = (np.arange(rows, dtype=np.int64) * n)[:, None]
            counts = np.bincount((drawn + offsets).ravel(), minlength=rows * n)
            means[start : start + rows] = counts.reshape(rows, n).astype(np.float64) @ (
                differences / n
            )
    return means
