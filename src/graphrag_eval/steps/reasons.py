"""Why each reference step that did not fully match did not, and the actual step it came
closest to: ``mismatch_reason`` and ``nearest_match`` in the per-question results
(docs/steps.md, "Why a step did not match").

Computed after matching, only for reference steps below a full match in the groups that were
matched, on at most :data:`MAX_CANDIDATES` actual steps each (the latest ones, which the
matching prefers); each pair's explanation is bounded by its rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from graphrag_eval.inputs import ActualStep, ReferenceStep
from graphrag_eval.steps.explain import Mismatch
from graphrag_eval.steps.matching import StepMatch, StepsOutcome
from graphrag_eval.steps.rules import Overrides, PairScore, explain_pair, rule_for, step_rules

__all__ = ["MAX_CANDIDATES", "REASON_CHARACTERS", "StepExplanation", "explain_steps"]

MAX_CANDIDATES: Final = 5
"""Actual steps explained per reference step at most (the latest candidates)."""

Known = Callable[[ReferenceStep, ActualStep], PairScore | None]
"""A pair's score when matching already computed it."""


REASON_CHARACTERS: Final = 500
"""A reason is cut to this length (it may quote values from the outputs)."""


@dataclass(frozen=True, slots=True)
class StepExplanation:
    """Why reference step (group, index) did not fully match, and the index of the actual
    step it came closest to (``None`` when there was no actual step to compare)."""

    reason: str
    nearest: int | None = None

    def __post_init__(self) -> None:
        if len(self.reason) > REASON_CHARACTERS:
            object.__setattr__(self, "reason", self.reason[: REASON_CHARACTERS - 3] + "...")


def explain_steps(
    groups: Sequence[Sequence[ReferenceStep]],
    actual_steps: Sequence[ActualStep],
    outcome: StepsOutcome,
    *,
    all_groups: bool,
    known: Known,
    rules: Overrides = None,
) -> dict[tuple[int, int], StepExplanation]:
    """The explanation of every sound reference step below a full match, by (group, index)."""
    scores = {(m.group, m.index): m for m in outcome.matches}
    first = _first_compared(groups, scores) if all_groups else len(groups) - 1
    found: dict[tuple[int, int], StepExplanation] = {}
    for g in range(first, len(groups)):
        for i, reference in enumerate(groups[g]):
            match = scores.get((g, i))
            if reference.problem is not None or (match is not None and match.score >= 1):
                continue
            if match is not None:
                actual = actual_steps[match.actual_index]
                why = explain_pair(reference, actual, known(reference, actual), rules)
                found[(g, i)] = StepExplanation(why.reason, actual.index)
            else:
                found[(g, i)] = _unmatched(reference, actual_steps, outcome, known, rules)
    for g in range(first if all_groups else 0):  # matching stopped before these
        for i, reference in enumerate(groups[g]):
            if reference.problem is None:
                found[(g, i)] = StepExplanation(
                    f"not compared: reference group {first + 1} was not fully matched"
                )
    return found


def _first_compared(
    groups: Sequence[Sequence[ReferenceStep]], scores: Mapping[tuple[int, int], StepMatch]
) -> int:
    """The earliest group that ``all_groups`` matching reached (it stops after the first
    group, from the last, that is not fully matched)."""
    for g in range(len(groups) - 1, -1, -1):
        if any((g, i) not in scores for i in range(len(groups[g]))):
            return g
    return 0


def _unmatched(
    reference: ReferenceStep,
    actual_steps: Sequence[ActualStep],
    outcome: StepsOutcome,
    known: Known,
    rules: Overrides,
) -> StepExplanation:
    candidates = [a for a in actual_steps if rule_for(reference, a, rules) is not None]
    if not candidates:
        names = [reference.name] if rules and reference.name in rules else _names(reference)
        return StepExplanation(f"no actual step named {' or '.join(names)}")
    succeeded = [a for a in candidates if a.succeeded]
    if not succeeded:
        last = candidates[-1]
        return StepExplanation(explain_pair(reference, last, None, rules).reason, last.index)
    best: tuple[float, int, Mismatch] | None = None
    for actual in succeeded[-MAX_CANDIDATES:]:
        pair = known(reference, actual)
        owner = outcome.reference_for(actual.index)
        if pair is not None and pair.score > 0:
            where = (
                f"reference step {owner[0] + 1}.{owner[1] + 1}"
                if owner is not None
                else "no reference step: it comes after the steps the next group matched"
            )
            why = Mismatch(f"actual step {actual.label} matches, but was matched to {where}", 1.0)
        else:
            why = explain_pair(reference, actual, pair, rules)
        if best is None or (why.closeness, actual.index) >= (best[0], best[1]):
            best = (why.closeness, actual.index, why)
    assert best is not None
    reason = best[2].reason
    if len(succeeded) > 1:
        reason += f" (the nearest of {len(succeeded)} candidate actual steps)"
    return StepExplanation(reason, best[1])


def _names(reference: ReferenceStep) -> list[str]:
    for rule in step_rules():
        if rule.actual_steps and rule.handles_reference(reference):
            return sorted(rule.actual_steps)
    return [reference.name]
