"""The agreement statistics, each from a well-kept library (the ``agreement`` extra,
docs/report.md): Cohen's kappa and the confusion matrix from scikit-learn, Spearman's rho from
SciPy, Krippendorff's alpha from ``krippendorff``; and the bootstrap over questions that gives
each its interval.

The libraries are imported when first used, so the core install does without them; missing,
the error names the extra. A statistic a sample cannot define (one category only, a constant
score) is ``None``, never NaN, with the libraries' warnings about it silenced.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from graphrag_eval.errors import GraphragEvalError

__all__ = [
    "Interval",
    "alpha",
    "bootstrap",
    "confusion",
    "interval_alpha",
    "kappa",
    "libraries",
    "mean_offset",
    "spearman",
]

EXTRA_HINT = "pip install 'graphrag-eval[agreement]'"


@dataclass(frozen=True, slots=True)
class _Libraries:
    numpy: ModuleType
    sklearn_metrics: ModuleType
    scipy_stats: ModuleType
    krippendorff: ModuleType


_loaded: list[_Libraries] = []


def libraries() -> _Libraries:
    """numpy, scikit-learn's metrics, SciPy's stats and krippendorff, imported once; a
    :class:`GraphragEvalError` naming the ``agreement`` extra when one is missing."""
    if not _loaded:
        try:
            import krippendorff
            import numpy
            import scipy.stats
            import sklearn.metrics
        except ImportError as exc:
            raise GraphragEvalError(
                f"agreement statistics need the agreement extra ({exc.name or exc} is not "
                f"installed): {EXTRA_HINT}"
            ) from None
        _loaded.append(_Libraries(numpy, sklearn.metrics, scipy.stats, krippendorff))
    return _loaded[0]


def _defined(value: Any) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None


def kappa(
    judge: Sequence[float],
    human: Sequence[float],
    codes: Sequence[int],
    quadratic: bool = False,
    weights: Any = None,
) -> float | None:
    """Cohen's kappa of the pairs (quadratic-weighted for ordered grades); ``weights``: how
    many times each pair counts (a bootstrap resample)."""
    lib = libraries()
    with warnings.catch_warnings(), lib.numpy.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        value = lib.sklearn_metrics.cohen_kappa_score(
            human,
            judge,
            labels=list(codes),
            weights="quadratic" if quadratic else None,
            sample_weight=weights,
        )
    return _defined(value)


def confusion(
    judge: Sequence[float], human: Sequence[float], codes: Sequence[int]
) -> list[list[int]]:
    """Counts of the pairs: a row per human label, a column per judge label (``codes``'
    order)."""
    lib = libraries()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        matrix = lib.sklearn_metrics.confusion_matrix(human, judge, labels=list(codes))
    return [[int(count) for count in row] for row in matrix]


def spearman(judge: Sequence[float], human: Sequence[float], weights: Any = None) -> float | None:
    """Spearman's rank correlation of the pairs (``weights``: each pair repeated so many
    times); ``None`` when either side is constant."""
    lib = libraries()
    np = lib.numpy
    if weights is not None:
        judge = np.repeat(np.asarray(judge, dtype=float), weights)
        human = np.repeat(np.asarray(human, dtype=float), weights)
    if len(judge) < 2:
        return None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        result = lib.scipy_stats.spearmanr(judge, human)
    return _defined(result.statistic)


def mean_offset(
    judge: Sequence[float], human: Sequence[float], weights: Any = None
) -> float | None:
    """The mean of judge minus human over the pairs (positive: the judge scores higher)."""
    np = libraries().numpy
    difference = np.asarray(judge, dtype=float) - np.asarray(human, dtype=float)
    if weights is not None:
        total = float(np.sum(weights))
        return float(np.dot(difference, weights) / total) if total else None
    return float(np.mean(difference)) if len(difference) else None


MAX_ALPHA_CELLS = 4_000_000
"""The krippendorff library holds a questions x values x values array: beyond so many cells
alpha over labels is not computed (too many distinct labels), so memory stays bounded."""


def alpha(matrix: Any, level: str, domain: Sequence[int] | None = None) -> float | None:
    """Krippendorff's alpha of a raters x questions matrix (NaN: no value), at the level of
    measurement ``level`` (nominal, ordinal: the krippendorff library over ``domain``, the
    codes in order; interval: :func:`interval_alpha`); ``None`` when it is not defined (one
    value only)."""
    lib = libraries()
    np = lib.numpy
    if level == "interval":
        return interval_alpha(matrix)
    cells = np.shape(matrix)[1] * len(domain or ()) ** 2
    if domain is None or cells > MAX_ALPHA_CELLS:
        raise ValueError(f"alpha over {len(domain or ())} labels needs fewer questions or labels")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            value = lib.krippendorff.alpha(
                reliability_data=matrix, level_of_measurement=level, value_domain=list(domain)
            )
        except (ValueError, ZeroDivisionError):  # one value in the domain
            return None
    return _defined(value)


def interval_alpha(matrix: Any, weights: Any = None) -> float | None:
    """Krippendorff's alpha at the interval level, from its definition
    (1 - observed / expected disagreement, squared differences over the pairable values):
    the same value as the krippendorff library's (tests/agreement), in memory linear in the
    values, where the library's grows with the square of the distinct values (every score
    may be one). ``weights``: how many times each question (column) counts."""
    np = libraries().numpy
    values = np.asarray(matrix, dtype=float)
    present = ~np.isnan(values)
    counts = present.sum(axis=0)
    weight = np.ones(values.shape[1]) if weights is None else np.asarray(weights, dtype=float)
    weight = np.where(counts >= 2, weight, 0.0)
    filled = np.where(present, values, 0.0)
    sums, squares = filled.sum(axis=0), (filled**2).sum(axis=0)
    n = float(np.dot(weight, counts))
    if n < 2:
        return None
    with np.errstate(all="ignore"):
        within = np.where(counts >= 2, (counts * squares - sums**2) / (counts - 1), 0.0)
    observed = 2 * float(np.dot(weight, within)) / n
    total, total_squares = float(np.dot(weight, sums)), float(np.dot(weight, squares))
    expected = 2 * (n * total_squares - total**2) / (n * (n - 1))
    if expected <= 0:
        return None
    return 1 - observed / expected


@dataclass(frozen=True, slots=True)
class Interval:
    """A percentile bootstrap interval; ``None`` bounds when too few resamples defined the
    statistic."""

    low: float | None
    high: float | None
    resamples: int
    defined: int
    """Resamples in which the statistic was defined (the interval is over these)."""


def bootstrap(
    statistic: Callable[[Any], float | None],
    questions: int,
    *,
    seed: int,
    resamples: int,
    confidence: float,
) -> Interval:
    """The interval of ``statistic`` over resamples of the questions (drawn with
    replacement; ``statistic`` is given how many times each question is drawn), seeded."""
    np = libraries().numpy
    rng = np.random.default_rng(seed)
    values: list[float] = []
    for _ in range(resamples):
        drawn = np.bincount(rng.integers(0, questions, size=questions), minlength=questions)
        value = statistic(drawn)
        if value is not None:
            values.append(value)
    if len(values) * 2 < resamples:
        return Interval(None, None, resamples, len(values))
    tail = (1 - confidence) / 2
    low, high = np.quantile(np.asarray(values), [tail, 1 - tail])
    return Interval(float(low), float(high), resamples, len(values))
