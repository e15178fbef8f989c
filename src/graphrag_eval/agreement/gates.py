"""``--fail-under agreement.METRIC=VALUE``: a gate on a metric's agreement with the humans
(docs/report.md). It reads the judge's statistic against the humans: Cohen's kappa for
categories and pass/fail, the quadratic-weighted kappa for grades, Spearman's rho for
scores; a metric without that statistic (too few labels, not defined) fails it, as a gate
that cannot be checked does not pass."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from graphrag_eval.agreement.model import Agreement
from graphrag_eval.agreement.scales import did_you_mean
from graphrag_eval.errors import ConfigError

__all__ = ["PREFIX", "AgreementGate", "check_gates", "parse_gate"]

PREFIX = "agreement."


@dataclass(frozen=True, slots=True)
class AgreementGate:
    metric: str
    value: float

    def __str__(self) -> str:
        return f"{PREFIX}{self.metric}={self.value:g}"


def parse_gate(text: str) -> AgreementGate:
    """``agreement.METRIC=VALUE``; raises ValueError with a one-line reason."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name.startswith(PREFIX) or len(name) == len(PREFIX):
        raise ValueError(f"expected agreement.METRIC=VALUE, got {text!r}")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"the threshold {value.strip()!r} is not a number") from None
    if not -1 <= number <= 1:
        raise ValueError(f"{number:g} is off the statistics' -1 to 1 range")
    return AgreementGate(name.removeprefix(PREFIX), number)


def check_gates(
    agreement: Agreement, gates: Sequence[AgreementGate], known: Iterable[str]
) -> list[str]:
    """The failed gates, one line each. ``known``: the metrics the run has (a gate on one
    of them without labels fails; on a name the run lacks, :class:`ConfigError`)."""
    known = set(known)
    failures: list[str] = []
    for gate in gates:
        found = agreement.metrics.get(gate.metric)
        if found is None and gate.metric not in known:
            raise ConfigError(
                f"--fail-under {gate}: no question-level score or label {gate.metric!r} in the "
                f"run{did_you_mean(gate.metric, known)}"
            )
        if found is None:
            failures.append(f"{gate}: no human label of {gate.metric} could be used")
            continue
        value = found.judge.value
        if value is None:
            failures.append(f"{gate}: {found.statistic} has no value ({found.judge.note})")
        elif value < gate.value:
            failures.append(f"{gate}: {found.statistic} {value:.3f} is under {gate.value:g}")
    return failures
