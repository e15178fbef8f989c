"""CI gating: thresholds on a run's means, and regressions between two runs.

``--fail-under METRIC=VALUE`` fails a run whose mean of METRIC (over all questions, as in
``aggregates.yaml`` ``micro``) is under VALUE; ``--fail-over METRIC=VALUE`` one whose mean is
over VALUE (for costs, tokens and seconds). Either fails a run that has no value of METRIC
at all: a gate that cannot be checked does not pass. In a comparison they read the mean the
comparison shows for run B (over the questions scored in both runs, errors counted as the
comparison counts them), and also fail when METRIC got significantly worse, even if that
mean is still on the right side of VALUE.

A threshold must be on its metric's scale: 0-1 scores take a VALUE from 0 to 1, 0-100 scores
one from 0 to 100 (and not from 0 to 1, which is almost surely a 0-1 value given to a
0-100 score), counts, tokens, costs and seconds any VALUE from 0. See docs/report.md,
"CI gating".
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from graphrag_eval.comparison.model import Comparison
from graphrag_eval.errors import ConfigError
from graphrag_eval.formatting import format_interval, plain_number, plural
from graphrag_eval.metrics.base import Aggregation, OutputKey
from graphrag_eval.metrics.registry import declared_outputs
from graphrag_eval.results.aggregates import GroupAggregates

__all__ = [
    "Threshold",
    "check_comparison_thresholds",
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
    typo would otherwise fail every run, or pass a misspelt gate), or off its metric's scale
    (see :func:`check_scale`)."""
    declared = {
        name: spec
        for name, (spec, _) in declared_outputs().items()
        if spec.aggregation is Aggregation.NUMERIC
    }
    known = set(declared)
    known.update(extra)
    for threshold in thresholds:
        if threshold.metric not in known:
            close = difflib.get_close_matches(threshold.metric, sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ConfigError(f"{_option(threshold)}: no metric writes {threshold.metric!r}{hint}")
        if threshold.metric in declared:
            check_scale(threshold, declared[threshold.metric])


def check_scale(threshold: Threshold, spec: OutputKey) -> None:
    """Raise :class:`ConfigError`, naming the metric's range, for a threshold its metric can
    never take or almost surely meant on another scale.

    A score with a best value (``maximum``, 1 or 100) takes thresholds from 0 to that value;
    on a 0-100 score a threshold over 0 and at most 1 is read as a 0-1 value given by mistake
    (``ragas_score=0.8`` for 80). Costs, tokens and seconds (``lower_is_better``) have no
    upper bound but cannot be negative. Outputs of unknown scale (custom evaluations) take
    any threshold.
    """
    value, name, maximum = threshold.value, threshold.metric, spec.maximum
    if maximum is not None:
        scale = f"{name} is on a 0-{maximum:g} scale"
        if value < 0 or value > maximum:
            hint = (
                f" (did you mean {name}={value / 100:g}?)"
                if maximum == 1 and 10 <= value <= 100  # a percentage, e.g. 80
                else ""
            )
            raise ConfigError(f"{_option(threshold)} {threshold}: {scale}{hint}")
        if maximum == 100 and 0 < value <= 1:
            raise ConfigError(
                f"{_option(threshold)} {threshold}: {scale}, not 0-1 "
                f"(did you mean {name}={value * 100:g}?)"
            )
    elif spec.lower_is_better and value < 0:
        raise ConfigError(f"{_option(threshold)} {threshold}: {name} cannot be negative")


def _option(threshold: Threshold) -> str:
    return "--fail-over" if threshold.upper else "--fail-under"


def check_thresholds(micro: GroupAggregates, thresholds: Sequence[Threshold]) -> list[str]:
    """The thresholds a run's overall means (its aggregates over all questions) do not
    meet, one message each."""
    failures = []
    for threshold in thresholds:
        stats = micro.statistics(threshold.metric)
        counts = micro.coverage.get(threshold.metric)
        if stats is None or (counts is not None and counts.scored == 0):
            failures.append(
                f"{threshold.metric}: no question has a value, so it cannot meet "
                f"{plain_number(threshold.value)}"
            )
            continue
        failure = _missed(threshold, stats.mean)
        if failure:
            failures.append(failure)
    return failures


def check_comparison_thresholds(
    comparison: Comparison, thresholds: Sequence[Threshold]
) -> list[str]:
    """The thresholds that the means a comparison shows for run B do not meet, one message
    each: the mean over the questions scored in both runs (``mean_b``), with the
    comparison's treatment of error responses, the number printed in its table."""
    failures = []
    for threshold in thresholds:
        change = comparison.overall.get(threshold.metric)
        if change is None or change.mean_b is None:
            failures.append(
                f"{threshold.metric}: no question has a value in both runs, so run B's mean "
                f"cannot meet {plain_number(threshold.value)}"
            )
            continue
        failure = _missed(threshold, change.mean_b)
        if failure:
            failures.append(f"{failure} (run B, over {plural(change.pairs, 'paired question')})")
    return failures


def _missed(threshold: Threshold, mean: float) -> str | None:
    """The message of a mean on the wrong side of its threshold, else ``None``."""
    if threshold.upper and mean > threshold.value:
        side = "over"
    elif not threshold.upper and mean < threshold.value:
        side = "under"
    else:
        return None
    limit = plain_number(threshold.value)
    return f"{threshold.metric}: mean {_shown(mean, threshold.value)} is {side} {limit}"


def _shown(mean: float, threshold: float) -> str:
    """The mean with 4 significant digits, or as many more as it takes not to print it
    like the threshold it missed (0.69996 under 0.7 is not "0.7 is under 0.7")."""
    for digits in range(4, 18):
        text = plain_number(mean, digits)
        if text != plain_number(threshold):
            return text
    return plain_number(mean)


def check_regressions(comparison: Comparison, metrics: Iterable[str]) -> list[str]:
    """The given metrics that got significantly worse overall, one message each."""
    failures = []
    for name in metrics:
        change = comparison.overall.get(name)
        if change is None or change.verdict != "worse" or change.difference is None:
            continue
        if change.mean_a is None or change.mean_b is None:  # a verdict has both means
            continue
        sign = "+" if change.difference > 0 else ""
        failures.append(
            f"{name}: significantly worse, {plain_number(change.mean_a, 4)} -> "
            f"{plain_number(change.mean_b, 4)} ({sign}{plain_number(change.difference, 4)}, "
            f"{comparison.confidence:.0%} {'two-level ' if change.noise else ''}interval "
            f"{format_interval(change.ci_low, change.ci_high, 4)}, {change.pairs} pairs"
            + (", judge noise included)" if change.noise else ")")
        )
    return failures
