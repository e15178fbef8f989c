"""The agreement statistics (docs/report.md, "Agreement with human labels"): published values
and hand-checked cases, and the bootstrap's intervals seeded and reproducible."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from graphrag_eval.agreement.statistics import (
    alpha,
    bootstrap,
    confusion,
    interval_alpha,
    kappa,
    spearman,
)

NAN = math.nan

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the example of four
# observers and twelve units with missing values: alpha 0.743 (nominal), 0.815 (ordinal),
# 0.849 (interval).
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
]


def grant_example() -> tuple[list[int], list[int]]:
    """Cohen's kappa's textbook case: two readers of 50 grant proposals, yes/yes 20, A yes
    and B no 5, A no and B yes 10, no/no 15: p_o = 0.7, p_e = 0.5, kappa = 0.4."""
    first = [1] * 25 + [0] * 25
    second = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    return first, second


def test_kappa_of_the_textbook_example_is_0_4() -> None:
    first, second = grant_example()

    assert kappa(first, second, [0, 1]) == pytest.approx(0.4)


def test_the_confusion_matrix_counts_human_rows_by_judge_columns() -> None:
    judge, human = grant_example()

    # Human no: the judge said no 15 times, yes 5; human yes: judge no 10, yes 20.
    assert confusion(judge, human, [0, 1]) == [[15, 5], [10, 20]]


def test_quadratic_weighted_kappa_by_hand() -> None:
    """Three grades; kappa_w = 1 - sum(w * observed) / sum(w * expected), w = (i - j)^2 / 4."""
    judge = [0, 0, 1, 1, 2, 2, 2, 1]
    human = [0, 1, 1, 2, 2, 2, 0, 1]
    k = 3
    observed = np.zeros((k, k))
    for j, h in zip(judge, human, strict=True):
        observed[h, j] += 1
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / len(judge)
    weights = np.array([[(i - j) ** 2 / (k - 1) ** 2 for j in range(k)] for i in range(k)])
    by_hand = 1 - (weights * observed).sum() / (weights * expected).sum()

    found = kappa(judge, human, range(k), quadratic=True)

    assert found == pytest.approx(by_hand)
    assert found == pytest.approx(cohen_kappa_score(human, judge, weights="quadratic"))
    assert found != pytest.approx(kappa(judge, human, range(k)))


def test_kappa_with_weights_counts_pairs_so_many_times() -> None:
    judge, human = [0, 1, 1, 0], [0, 1, 0, 0]

    weighted = kappa(judge, human, [0, 1], weights=[2, 1, 3, 1])

    assert weighted == pytest.approx(kappa([0, 0, 1, 1, 1, 1, 0], [0, 0, 1, 0, 0, 0, 0], [0, 1]))


def test_kappa_of_one_category_only_is_undefined() -> None:
    assert kappa([1, 1, 1], [1, 1, 1], [0, 1]) is None


def test_spearman_against_scipy_and_by_hand() -> None:
    judge = [0.1, 0.4, 0.35, 0.8, 0.9]
    human = [0.2, 0.3, 0.5, 0.7, 1.0]

    # Ranks 1 3 2 4 5 against 1 2 3 4 5: d^2 = 2, rho = 1 - 6 * 2 / (5 * 24) = 0.9.
    assert spearman(judge, human) == pytest.approx(0.9)
    assert spearman(judge, human) == pytest.approx(spearmanr(judge, human).statistic)
    assert spearman([1, 1, 1], [1, 2, 3]) is None


@pytest.mark.parametrize(
    ("level", "domain", "published"),
    [
        ("nominal", [1, 2, 3, 4, 5], 0.743),
        ("ordinal", [1, 2, 3, 4, 5], 0.815),
        ("interval", None, 0.849),
    ],
)
def test_alpha_of_the_published_example(
    level: str, domain: list[int] | None, published: float
) -> None:
    assert alpha(np.array(KRIPPENDORFF_2011), level, domain) == pytest.approx(published, abs=5e-4)


def test_alpha_of_one_value_only_is_undefined() -> None:
    assert alpha(np.array([[1.0, 1.0], [1.0, 1.0]]), "nominal", [1]) is None
    assert alpha(np.array([[1.0, 1.0], [1.0, 1.0]]), "nominal", [0, 1]) is None


def test_the_bootstrap_is_seeded_and_covers_the_estimate() -> None:
    judge, human = grant_example()
    codes = [0, 1]
    question = np.arange(len(judge))

    def statistic(drawn: np.ndarray) -> float | None:
        return kappa(judge, human, codes, weights=drawn[question])

    first = bootstrap(statistic, len(judge), seed=3, resamples=300, confidence=0.9)
    again = bootstrap(statistic, len(judge), seed=3, resamples=300, confidence=0.9)
    other = bootstrap(statistic, len(judge), seed=4, resamples=300, confidence=0.9)

    assert (first.low, first.high) == (again.low, again.high)
    assert (first.low, first.high) != (other.low, other.high)
    assert first.low is not None and first.high is not None
    assert first.low < 0.4 < first.high
    assert first.defined == 300


def test_interval_alpha_is_the_librarys_in_linear_memory() -> None:
    """Computed from the definition (the library holds a questions x values x values array,
    too large for scores that are all distinct): the same value on the published example and
    on random scores with gaps, and with weights the same as columns repeated."""
    rng = np.random.default_rng(5)
    scores = rng.random((3, 40))
    scores[rng.random((3, 40)) < 0.2] = NAN
    drawn = rng.integers(0, 3, size=40)

    assert interval_alpha(KRIPPENDORFF_2011) == pytest.approx(0.849, abs=5e-4)
    assert interval_alpha(scores) == pytest.approx(
        krippendorff.alpha(reliability_data=scores, level_of_measurement="interval")
    )
    assert interval_alpha(scores, drawn) == pytest.approx(
        krippendorff.alpha(
            reliability_data=scores[:, np.repeat(np.arange(40), drawn)],
            level_of_measurement="interval",
        )
    )
    assert interval_alpha(np.array([[0.5, 0.5], [0.5, 0.5]])) is None


def test_alpha_over_too_many_labels_is_refused_not_computed() -> None:
    matrix = np.zeros((2, 5000))

    with pytest.raises(ValueError, match="alpha over 40 labels needs fewer questions or labels"):
        alpha(matrix, "nominal", range(40))
