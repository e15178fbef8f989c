"""The two-level bootstrap of a paired difference whose values are means of judge repeats:
questions are resampled, then each drawn question's repeats, so that the interval includes
the judge's noise; and how the interval's variance splits between the questions and the judge
(docs/report.md, "Judge noise in a comparison").

The model is the one-way random-effects model of each question's difference ``d_i = mean of
B's repeats - mean of A's repeats``: ``d_i = delta + q_i + e_i``, ``q_i`` the question's own
difference (variance ``sigma_b^2``), ``e_i`` the judge's noise on its repeats (variance
``v_i = s_Ai^2 / k_Ai + s_Bi^2 / k_Bi``). Resampling the observed ``d_i`` and then their repeats
as they are would count the judge's noise twice (the spread of the ``d_i`` already holds it),
so the questions' stage resamples the ``d_i`` shrunk towards their mean by
``sqrt(sigma_b^2 / s_d^2)`` and the repeats' stage resamples each question's residuals scaled
by ``sqrt(k / (k - 1))``: the resampled mean then has the variance
``sigma_b^2 / n + mean(v_i) / n``, both sources once each.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

__all__ = ["POWER", "RunRepeats", "TwoLevel", "two_level_interval"]

POWER = 0.8
"""The power at which the minimum detectable difference is given."""
_CELLS_PER_CHUNK = 2_000_000  # resamples x questions drawn at once
_MAX_DRAWS = 256  # 4^4: up to 4 repeats, every draw of a question's repeats is tabled
_SAMPLED_DRAWS = 1_024  # more repeats: at most this many draws per question
_MAX_PAIRED_DRAWS = 8_192  # both runs' draws in one table: up to 3 and 4 repeats


@dataclass(frozen=True, slots=True)
class RunRepeats:
    """One run's repeats of one metric over the paired questions of a scope."""

    residuals: np.ndarray
    """Questions x repeats: each valid repeat's deviation from its question's mean, scaled by
    ``sqrt(k / (k - 1))``, packed to the left; 0 where there is no repeat."""
    counts: np.ndarray
    """Per question, its valid repeats (1 for a value without repeats: no noise measured)."""
    within: np.ndarray
    """Per question, the judge's variance of its mean, ``s^2 / k`` (0 where k is 1)."""

    @classmethod
    def of(cls, repeats: np.ndarray) -> RunRepeats:
        """From a questions x repeats matrix of values, NaN for a failed or absent repeat."""
        valid = ~np.isnan(repeats)
        counts = valid.sum(axis=1)
        safe = np.maximum(counts, 1)
        # About the first valid repeat: repeats that agree have residuals of exactly 0.
        first = np.take_along_axis(repeats, np.argmax(valid, axis=1)[:, None], axis=1)
        offsets = np.where(valid, repeats - np.nan_to_num(first), 0.0)
        means = offsets.sum(axis=1) / safe
        deviations = np.where(valid, offsets - means[:, None], 0.0)
        squares = (deviations**2).sum(axis=1)
        several = counts > 1
        variance = np.where(several, squares / np.maximum(counts - 1, 1), 0.0)
        scale = np.where(several, np.sqrt(safe / np.maximum(counts - 1, 1)), 0.0)
        order = np.argsort(~valid, axis=1, kind="stable")  # valid repeats first
        packed = np.take_along_axis(deviations * scale[:, None], order, axis=1)
        return cls(packed, safe, variance / safe)

    @classmethod
    def exact(cls, questions: int) -> RunRepeats:
        """A run without repeats: one value per question, no judge noise measured."""
        return cls(
            np.zeros((questions, 1)), np.ones(questions, dtype=np.int64), np.zeros(questions)
        )

    @property
    def noisy(self) -> bool:
        return bool(np.any(self.residuals))


@dataclass(frozen=True, slots=True)
class TwoLevel:
    """The two-level interval of a mean difference and the split of its variance."""

    low: float
    high: float
    low_questions: float
    """The interval with the judge's noise taken out (the questions' stage alone)."""
    high_questions: float
    question_variance: float
    """``sigma_b^2 / n``: the part of the mean's variance that more questions reduce."""
    judge_variance: float
    """``mean(v_i) / n``: the part that more repeats (or more questions) reduce."""
    standard_error: float
    """The standard deviation of the resampled means."""

    @property
    def judge_share(self) -> float:
        total = self.question_variance + self.judge_variance
        return self.judge_variance / total if total > 0 else 0.0

    def detectable(self, confidence: float, power: float = POWER) -> float:
        """The minimum detectable difference: ``(z_(1 - alpha/2) + z_power) x SE``."""
        normal = NormalDist()
        return (normal.inv_cdf(1 - (1 - confidence) / 2) + normal.inv_cdf(power)) * (
            self.standard_error
        )


def two_level_interval(
    differences: np.ndarray,
    run_a: RunRepeats,
    run_b: RunRepeats,
    rng: np.random.Generator,
    resamples: int,
    confidence: float,
) -> TwoLevel:
    """The percentile interval of the mean of ``differences`` (one per question, B - A of
    the means of the repeats) by the two-level bootstrap of the module's docstring.

    The questions are drawn from ``rng`` exactly as the one-level bootstrap draws them (the
    same chunks), the repeats from a generator spawned from it: without judge noise the
    interval is the one-level one, draw for draw.
    """
    n = len(differences)
    within = run_a.within + run_b.within
    judge = float(within.mean())
    spread = float(differences.var(ddof=1)) if n > 1 else 0.0
    between = max(0.0, spread - judge)
    shrink = math.sqrt(between / spread) if spread > 0 else 1.0
    centre = float(differences.mean())
    shrunk = differences - (1.0 - shrink) * (differences - centre)
    repeats_rng = rng.spawn(1)[0]
    tables = _tables(run_a, run_b, repeats_rng)
    means = np.empty(resamples)
    question_means = np.empty(resamples)
    chunk = max(1, min(resamples, _CELLS_PER_CHUNK // n))
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        drawn = rng.integers(0, n, size=(rows, n), dtype=np.int32 if n < 2**31 else np.int64)
        question_means[start : start + rows] = shrunk[drawn].mean(axis=1)
        noise = np.zeros(rows)
        for sign, table in tables:
            noise += sign * table.draw(drawn, repeats_rng).mean(axis=1)
        means[start : start + rows] = question_means[start : start + rows] + noise
    tail = (1 - confidence) / 2 * 100
    if np.all(differences == differences[0]) and judge == 0:
        low = high = low_q = high_q = float(differences[0])
    else:
        low, high = (float(x) for x in np.percentile(means, [tail, 100 - tail]))
        low_q, high_q = (float(x) for x in np.percentile(question_means, [tail, 100 - tail]))
    return TwoLevel(
        low, high, low_q, high_q, between / n, judge / n,
        float(means.std(ddof=1)) if resamples > 1 else 0.0,
    )  # fmt: skip


def _tables(
    run_a: RunRepeats, run_b: RunRepeats, rng: np.random.Generator
) -> list[tuple[float, _Table]]:
    """What to draw the judge's noise from: where both runs have repeats, one table of B's
    minus A's draws (one draw per question and resample for both runs); else the noisy
    run's."""
    tables = [
        (sign, _Table.of(run, rng)) for sign, run in ((1.0, run_b), (-1.0, run_a)) if run.noisy
    ]
    if len(tables) == 2:
        return [(1.0, _Table.difference(tables[0][1], tables[1][1], rng))]
    return tables


def _sampled_width(questions: int) -> int:
    """Draws tabled per question when not every draw is: 64 to 1,024, fewer for many
    questions (the table stays under 4 million cells from 4,000 questions to 62,500)."""
    return min(_SAMPLED_DRAWS, max(64, _CELLS_PER_CHUNK * 2 // questions))


@dataclass(frozen=True, slots=True)
class _Table:
    """Per question, the mean of its residuals for every ordered draw of ``k`` of its ``k``
    repeats with replacement (``k^k`` of them, equally likely): one uniform draw per question
    and resample then picks the mean of a whole draw of its repeats."""

    values: np.ndarray
    """Questions x draws; a question's first ``sizes[i]`` columns are its draws."""
    sizes: np.ndarray

    @classmethod
    def of(cls, run: RunRepeats, rng: np.random.Generator) -> _Table:
        """Every draw of each question's repeats where there are few (up to 4 repeats: 4^4
        draws); else as many draws as fit (64 to 1,024 per question), drawn from ``rng``."""
        sizes = run.counts.astype(np.int64) ** run.counts
        width = int(sizes.max())
        if width > _MAX_DRAWS or width * len(sizes) > _CELLS_PER_CHUNK * 2:
            return cls.sampled(run, rng)
        values = np.zeros((len(sizes), width))
        for count in np.unique(run.counts):
            if count < 2:
                continue  # one value: no noise, its row stays 0
            rows = np.flatnonzero(run.counts == count)
            draws = np.array(list(itertools.product(range(count), repeat=count)))
            values[rows, : len(draws)] = run.residuals[rows][:, draws].mean(axis=2)
        return cls(values, sizes.astype(np.float64))

    @classmethod
    def sampled(cls, run: RunRepeats, rng: np.random.Generator) -> _Table:
        """Per question, ``width`` draws of its repeats with replacement (as many as it has),
        their residuals' means: a sample of the draws, each equally likely to be picked."""
        questions = len(run.counts)
        width = _sampled_width(questions)
        values = np.zeros((questions, width))
        for count in np.unique(run.counts):
            if count < 2:
                continue
            rows = np.flatnonzero(run.counts == count)
            step = max(1, _CELLS_PER_CHUNK // (width * int(count)))
            for start in range(0, len(rows), step):
                block = rows[start : start + step]
                picks = rng.integers(0, count, size=(len(block), width, int(count)))
                values[block] = run.residuals[block[:, None, None], picks].mean(axis=2)
        return cls(values, np.full(questions, float(width)))

    @classmethod
    def difference(cls, b: _Table, a: _Table, rng: np.random.Generator) -> _Table:
        """Every draw of B's repeats minus every draw of A's, per question; where that would
        be too large, a sample of such pairs of draws (64 to 1,024 per question)."""
        sizes_a = a.sizes.astype(np.int64)
        sizes_b = b.sizes.astype(np.int64)
        sizes = sizes_a * sizes_b
        width = int(sizes.max())
        if width > _MAX_PAIRED_DRAWS or width * len(sizes) > _CELLS_PER_CHUNK * 2:
            return cls._sampled_difference(b, a, rng)
        values = np.zeros((len(sizes), width))
        for size_a, size_b in {(int(x), int(y)) for x, y in zip(sizes_a, sizes_b, strict=True)}:
            rows = np.flatnonzero((sizes_a == size_a) & (sizes_b == size_b))
            pairs = b.values[rows, None, :size_b] - a.values[rows, :size_a, None]
            values[rows, : size_a * size_b] = pairs.reshape(len(rows), -1)
        return cls(values, sizes.astype(np.float64))

    @classmethod
    def _sampled_difference(cls, b: _Table, a: _Table, rng: np.random.Generator) -> _Table:
        questions = len(a.sizes)
        width = _sampled_width(questions)
        rows = np.arange(questions)[:, None]
        pick_b = (rng.random((questions, width)) * b.sizes[:, None]).astype(np.intp)
        pick_a = (rng.random((questions, width)) * a.sizes[:, None]).astype(np.intp)
        values = b.values[rows, pick_b] - a.values[rows, pick_a]
        return cls(values, np.full(questions, float(width)))

    def draw(self, drawn: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """For each drawn question (resamples x questions), the mean of one draw of its
        repeats' residuals: a random column of its row, gathered from the flat table (much
        faster than indexing rows and columns)."""
        width = self.values.shape[1]
        kind = np.int32 if self.values.size < 2**31 else np.int64
        index: np.ndarray = drawn.astype(kind, copy=False) * np.asarray(width, dtype=kind)
        index += self.codes(drawn, rng)
        gathered: np.ndarray = np.take(self.values.ravel(), index)
        return gathered

    def codes(self, drawn: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One draw of each drawn question's repeats (a column of its row)."""
        size = int(self.sizes[0])
        if np.all(self.sizes == size):  # the same repeats everywhere: integers are faster
            codes: np.ndarray = rng.integers(
                0, size, size=drawn.shape, dtype=np.int16 if size < 2**15 else np.int32
            )
            return codes
        scaled: np.ndarray = rng.random(drawn.shape) * self.sizes[drawn]
        return scaled.astype(np.intp)
