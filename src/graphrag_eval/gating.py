"""CI gating: thresholds on a run's means, and regressions between two runs.

``--fail-under METRIC=VALUE`` fails a run whose mean of METRIC (over all questions, as in
``aggregates.yaml`` ``micro``) is under VALUE; ``--fail-over METRIC=VALUE`` one whose mean is
over VALUE (for costs, tokens and seconds). Either fails a run that has no value of METRIC
at all: a gate that cannot be checked does not pass. In a comparison they also fail when
METRIC got significantly worse, even if its mean is still on the right side of VALUE.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graphrag_eval.compare import Comparison, format_interval
from graphrag_eval.errors import ConfigError
from graphrag_eval.metrics.base import Aggregation, declared_outputs

__all__ = [
    "Threshold",
    "check_known",
    "check_regressions",
    "check_thresholds",
    "parse_threshold",
]


@dataclass(frozen=True, slots=True)
class Threshold:
    metric: str
    value: float
    upper: bool = False
    """An upper bound (``--fail-over``): the mean must not exceed ``value``."""

    def __str__(self) -> str:
        return f"{self.metric}={self.value:g}"


def parse_threshold(text: str, upper: bool = False) -> Threshold:
    """``METRIC=VALUE`` -> :class:`Threshold`; raises ValueError with a one-line reason."""
    metric, sep, value = text.partition("=")
    metric = metric.strip()
    if not sep or not metric:
        raise ValueError(f"expected METRIC=VALUE, got {text!r}")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{metric}: the threshold {value.strip()!r} is not a number") from None
    if not math.isfinite(number):
        raise ValueError(f"{metric}: the threshold must be a finite number")
    return Threshold(metric, number, upper)


def check_known(thresholds: Iterable[Threshold], extra: Iterable[str] = ()) -> None:
    """Raise :class:`ConfigError` for a threshold on a key no metric writes as a number (a
    typo would otherwise fail every run, or pass a misspelt gate)."""
    known = {
        name
        for name, (spec, _) in declared_outputs().items()
        if spec.aggregation is Aggregation.NUMERIC
    }
    known.update(extra)
    for threshold in thresholds:
        if threshold.metric not in known:
            close = difflib.get_close_matches(threshold.metric, sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            option = "--fail-over" if threshold.upper else "--fail-under"
            raise ConfigError(f"{option}: no metric writes {threshold.metric!r}{hint}")


def check_thresholds(micro: Mapping[str, Any], thresholds: Sequence[Threshold]) -> list[str]:
    """The thresholds a run's overall means do not meet, one message each."""
    failures = []
    for threshold in thresholds:
        stats = micro.get(threshold.metric)
        scored = micro.get("coverage", {}).get(threshold.metric, {}).get("scored")
        if not isinstance(stats, Mapping) or "mean" not in stats or scored == 0:
            failures.append(
                f"{threshold.metric}: no question has a value, so it cannot meet "
                f"{threshold.value:g}"
            )
        elif threshold.upper and stats["mean"] > threshold.value:
            failures.append(
                f"{threshold.metric}: mean {stats['mean']:.4g} is over {threshold.value:g}"
            )
        elif not threshold.upper and stats["mean"] < threshold.value:
            failures.append(
                f"{threshold.metric}: mean {stats['mean']:.4g} is under {threshold.value:g}"
            )
    return failures


def check_regressions(comparison: Comparison, metrics: Iterable[str]) -> list[str]:
    """The given metrics that got significantly worse overall, one message each."""
    failures = []
    for name in metrics:
        change = comparison.overall.get(name)
        if change is None or change.verdict != "worse" or change.difference is None:
            continue
        failures.append(
            f"{name}: significantly worse, {change.mean_a:.4g} -> {change.mean_b:.4g} "
            f"({change.difference:+.4g}, {comparison.confidence:.0%} interval "
            f"{format_interval(change.ci_low, change.ci_high, 4)}, {change.pairs} pairs)"
        )
    return failures
