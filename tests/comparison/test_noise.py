"""The two-level bootstrap of a difference of judge repeats' means, on data whose answer can be
worked out by hand (docs/report.md, "Judge noise in a comparison")."""

from __future__ import annotations

import math

import numpy as np
import pytest

from graphrag_eval.comparison.bootstrap import bootstrap_interval, scope_generator
from graphrag_eval.comparison.noise import RunRepeats, two_level_interval

Z = 1.959963984540054  # the normal quantile of a 95% interval
Z_POWER = 0.8416212335729143  # of 80% power


def rng(seed: int = 0) -> np.random.Generator:
    return scope_generator(seed, "", ["q"])


def test_without_judge_noise_it_is_the_one_level_interval_draw_for_draw() -> None:
    """Repeats that agree (and a run without repeats): the questions' draws are the one-level
    bootstrap's, and nothing is added to them."""
    values = np.random.default_rng(5).normal(0.1, 0.2, 40)
    agreeing = RunRepeats.of(np.repeat(values[:, None], 3, axis=1))
    two = two_level_interval(values, RunRepeats.exact(40), agreeing, rng(), 5_000, 0.95)
    assert (two.low, two.high) == bootstrap_interval(values, rng(), 5_000, 0.95)
    assert (two.low_questions, two.high_questions) == (two.low, two.high)
    assert two.judge_variance == 0 and two.judge_share == 0


def test_pure_judge_noise_around_one_difference() -> None:
    """Every question moved by exactly +0.5, but run B's judge said 0 once and 1 once on each:
    the one-level interval is the point 0.5, the two-level one has the standard error of the
    judge's noise, sqrt(s^2 / k / n) = sqrt(0.5 / 2 / 400) = 0.025."""
    n = 400
    b = np.tile([0.0, 1.0], (n, 1))
    differences = np.full(n, 0.5)
    assert bootstrap_interval(differences, rng(), 10_000) == (0.5, 0.5)
    two = two_level_interval(
        differences, RunRepeats.exact(n), RunRepeats.of(b), rng(), 10_000, 0.95
    )
    assert two.judge_variance == pytest.approx(0.025**2)
    assert two.question_variance == 0 and two.judge_share == 1
    assert two.standard_error == pytest.approx(0.025, rel=0.03)
    assert two.low == pytest.approx(0.5 - Z * 0.025, abs=0.003)
    assert two.high == pytest.approx(0.5 + Z * 0.025, abs=0.003)
    assert (two.low_questions, two.high_questions) == pytest.approx((0.5, 0.5))
    assert two.detectable(0.95) == pytest.approx((Z + Z_POWER) * two.standard_error)


def test_pure_judge_noise_widens_the_interval_by_the_expected_factor() -> None:
    """No difference between questions, only the judge's: the one-level interval's variance is
    the spread of the question means, s_d^2 (n - 1) / n / n, the two-level one's the pooled
    judge variance mean(v_i) / n; their widths are in the ratio of the square roots."""
    generator = np.random.default_rng(11)
    n, k = 300, 3
    a = generator.normal(0.5, 0.3, (n, k))
    b = generator.normal(0.6, 0.3, (n, k))
    differences = b.mean(axis=1) - a.mean(axis=1)
    one_low, one_high = bootstrap_interval(differences, rng(), 20_000)
    two = two_level_interval(differences, RunRepeats.of(a), RunRepeats.of(b), rng(), 20_000, 0.95)
    within = (a.var(axis=1, ddof=1) + b.var(axis=1, ddof=1)).mean() / k
    spread = differences.var(ddof=1) * (n - 1) / n
    expected = math.sqrt(within / spread)
    assert (two.high - two.low) / (one_high - one_low) == pytest.approx(expected, rel=0.04)
    assert two.judge_variance == pytest.approx(within / n)


@pytest.mark.parametrize("repeats", [3, 7])  # 7: too many to table each question's draws
def test_ragged_and_failed_repeats_give_both_variances(repeats: int) -> None:
    """Questions with 1 to ``repeats`` valid repeats (NaN: a failed repeat): the resampled
    means' variance is sigma_b^2 / n + mean(s_i^2 / k_i) / n, from the estimates."""
    generator = np.random.default_rng(repeats)
    n = 500
    own = generator.normal(0.0, 0.2, n)
    b = own[:, None] + generator.normal(0.0, 0.3, (n, repeats))
    counts = generator.integers(1, repeats + 1, n)
    b[np.arange(repeats) >= counts[:, None]] = np.nan
    run_b = RunRepeats.of(b)
    differences = np.nanmean(b, axis=1)
    assert list(run_b.counts) == list(counts)
    two = two_level_interval(differences, RunRepeats.exact(n), run_b, rng(), 10_000, 0.95)
    squares = np.nansum((b - differences[:, None]) ** 2, axis=1)
    within = np.where(counts > 1, squares / np.maximum(counts - 1, 1) / counts, 0.0)
    assert two.judge_variance == pytest.approx(within.mean() / n)
    between = differences.var(ddof=1) - within.mean()
    assert two.question_variance == pytest.approx(between / n)
    total = two.question_variance + two.judge_variance
    assert two.standard_error**2 == pytest.approx(total, rel=0.06)


def test_the_same_seed_gives_the_same_interval() -> None:
    generator = np.random.default_rng(2)
    a = generator.random((30, 3))
    differences = -a.mean(axis=1)
    first = two_level_interval(
        differences, RunRepeats.of(a), RunRepeats.exact(30), rng(), 2_000, 0.9
    )
    again = two_level_interval(
        differences, RunRepeats.of(a), RunRepeats.exact(30), rng(), 2_000, 0.9
    )
    other = two_level_interval(
        differences, RunRepeats.of(a), RunRepeats.exact(30), rng(1), 2_000, 0.9
    )
    assert first == again
    assert (other.low, other.high) != (first.low, first.high)


def test_coverage_of_a_known_difference() -> None:
    """Simulated pairs of runs (30 questions, 3 repeats each, true difference 0.1): the 95%
    two-level interval covers 0.1 in about 95% of them (60 pairs: at least 52 of 60, which a
    true 95% rate misses with probability under 1%)."""
    generator = np.random.default_rng(2026)
    covered = 0
    for pair in range(60):
        questions = generator.normal(0.0, 0.1, 30)
        a = generator.normal(0.0, 0.3, (30, 3)) + 0.5
        b = (questions + 0.1)[:, None] + generator.normal(0.0, 0.3, (30, 3)) + 0.5
        differences = b.mean(axis=1) - a.mean(axis=1)
        two = two_level_interval(
            differences, RunRepeats.of(a), RunRepeats.of(b), rng(pair), 2_000, 0.95
        )
        covered += two.low <= 0.1 <= two.high
    assert covered >= 52


@pytest.mark.parametrize("repeats", [3, 6])  # 6: too many draws to table them all
def test_both_runs_noisy_give_the_sum_of_their_judge_variances(repeats: int) -> None:
    generator = np.random.default_rng(repeats + 100)
    n = 400
    a = generator.normal(0.5, 0.2, (n, repeats))
    b = generator.normal(0.5, 0.4, (n, repeats))
    differences = b.mean(axis=1) - a.mean(axis=1)
    two = two_level_interval(differences, RunRepeats.of(a), RunRepeats.of(b), rng(), 10_000, 0.95)
    within = (a.var(axis=1, ddof=1) + b.var(axis=1, ddof=1)).mean() / repeats
    assert two.judge_variance == pytest.approx(within / n)
    total = two.question_variance + two.judge_variance
    assert two.standard_error**2 == pytest.approx(total, rel=0.06)
