"""The report's charts (src/graphrag_eval/report/charts.py): a histogram counts each value in
the bin ``int((value - low) / width)`` (values past either end in the end bins), whatever
loop does the counting."""

from __future__ import annotations

import random
import re

import pytest

from graphrag_eval.report.charts import histogram


def _bars(svg: str) -> list[int]:
    return [
        int(value.replace(",", "")) for value in re.findall(r'<desc class="value">([\d,]+)<', svg)
    ]


def _counted(values: list[float], maximum: float | None) -> list[int]:
    """The definition, value by value."""
    low = 0.0 if maximum is not None else min(values)
    high = float(maximum) if maximum is not None else max(values)
    width = (high - low) / 10 if high > low else 1.0
    counts = [0] * 10
    for value in values:
        index = int((value - low) / width) if high > low else 0
        counts[min(max(index, 0), 9)] += 1
    return counts


EDGES = [i / 10 for i in range(11)] + [0.3, 0.7, 0.1 + 0.2, 1 - 1e-17, 1e-300, -0.0]


@pytest.mark.parametrize(
    ("values", "maximum"),
    [
        (EDGES, 1),  # bin edges, float noise at them, the maximum itself
        ([-0.5, 1.5, 2.0, -3.0, 0.95], 1),  # past either end
        ([random.Random(3).random() for _ in range(5_000)], 1),
        ([random.Random(4).uniform(-7, 250) for _ in range(2_000)], None),
        ([3.0, 3.0, 3.0], None),  # no spread: one bin
        ([2.5], 10),
        ([1, 2, 3, 40], 40),  # whole numbers
    ],
)
def test_histogram_bins_each_value_as_the_definition_does(
    values: list[float], maximum: float | None
) -> None:
    bars = _bars(histogram("m", values, maximum))
    assert bars == _counted(values, maximum)
    assert sum(bars) == len(values)
