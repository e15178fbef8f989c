"""What a compared metric measures, and how its means and differences are written: scores
(the verdict is about the system's answers) apart from costs, tokens and seconds (what a run
used), each in its unit (docs/report.md, "Comparing two runs")."""

from __future__ import annotations

import math
from typing import Literal

from graphrag_eval.formatting import (
    Unit as ValueUnit,
)
from graphrag_eval.formatting import (
    format_dollars,
    format_interval,
    format_number,
    format_signed,
)
from graphrag_eval.metrics.base import OutputKey

__all__ = [
    "Unit",
    "format_amount",
    "format_amount_change",
    "format_amount_interval",
    "unit_of",
]

Unit = Literal["score", "dollars", "tokens", "seconds", "amount"]
"""``score``: a score (higher or lower is better); the others are what a run used (a key whose
lower values are better and that is not a score): dollars, tokens, seconds or another
amount, as the key declares its unit (``OutputKey.unit``)."""

_USED: dict[ValueUnit, Unit] = {
    ValueUnit.DOLLARS: "dollars",
    ValueUnit.TOKENS: "tokens",
    ValueUnit.SECONDS: "seconds",
}


def unit_of(spec: OutputKey) -> Unit:
    """The unit a key is compared in: costs, tokens and seconds are the keys whose lower
    values are better (as ``--fail-on-regression`` reads them), in the unit they declare."""
    if not spec.lower_is_better:
        return "score"
    return _USED.get(spec.unit, "amount")


def format_amount(value: float | None, unit: Unit) -> str:
    """A mean in its unit: ``$0.0000573``, ``203,432`` tokens, ``16.9 s``; a score as the
    reports write it; ``-`` for none."""
    if value is None or not math.isfinite(value):
        return "-"
    if unit == "dollars":
        return format_dollars(value)
    if unit == "tokens":
        return f"{value:,.0f}" if abs(value) >= 10 else f"{value:,.1f}".replace(".0", "")
    if unit == "seconds":
        return _seconds(value) + " s"
    return format_number(value)


def format_amount_change(value: float | None, unit: Unit) -> str:
    """A difference in its unit, with its sign: ``-$0.0000001``, ``+1,204``, ``+0.52 s``."""
    if value is None or not math.isfinite(value):
        return "-"
    if unit == "score" or unit == "amount":
        return format_signed(value)
    sign = "-" if value < 0 else "+"
    if value == 0:
        return "0"
    if unit == "dollars":
        return sign + format_dollars(abs(value))
    if unit == "tokens":
        return sign + format_amount(abs(value), unit)
    return sign + _seconds(abs(value)) + " s"


def format_amount_interval(low: float | None, high: float | None, unit: Unit) -> str:
    """``[low, high]`` of a difference in its unit, or ``-``."""
    if unit == "score" or unit == "amount":
        return format_interval(low, high)
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return "-"
    return f"[{format_amount_change(low, unit)}, {format_amount_change(high, unit)}]"


def _seconds(value: float) -> str:
    """Seconds with 3 significant digits under 100 (``0.0521``, ``16.9``), whole above."""
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    decimals = max(0, 2 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"
