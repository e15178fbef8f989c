"""Matching reference step groups to actual steps, and ``steps_score`` (SPEC §4.1).

Within a group the assignment of reference steps to distinct actual steps maximises the total
match score (a greedy first-fit can miss a full match). Among equally good assignments the
most recent actual steps are preferred. Groups are small, so an exact dynamic programme over
subsets of the group's reference steps is cheap.

Score modes:

* ``last_group``: only the last group is matched, against all actual steps;
  ``steps_score = sum of its match scores / its size``.
* ``all_groups``: groups are matched from last to first; group *g* may only use actual steps
  before the earliest actual step group *g+1* matched; matching stops after the first group
  that is not fully matched (a group is fully matched when every reference step in it has a
  match with a positive score; its partial matches still count). ``steps_score`` is the mean
  over all groups of (sum of the group's match scores / group size).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from graphrag_eval.inputs import ActualStep, ReferenceStep

__all__ = ["StepMatch", "StepsOutcome", "evaluate_steps", "match_group"]

ScoreMode = Literal["last_group", "all_groups"]
Scorer = Callable[[ReferenceStep, ActualStep], float]

_PRECISION = 9  # scores equal to 9 decimals are equally good


@dataclass(frozen=True, slots=True)
class StepMatch:
    """Reference step ``index`` of group ``group`` matched actual step ``actual_index``."""

    group: int
    index: int
    actual_index: int
    score: float


@dataclass(frozen=True, slots=True)
class StepsOutcome:
    """The matches of one item and its ``steps_score``."""

    score: float
    matches: tuple[StepMatch, ...]

    def actual_for(self, group: int, index: int) -> int | None:
        for match in self.matches:
            if match.group == group and match.index == index:
                return match.actual_index
        return None

    def reference_for(self, actual_index: int) -> tuple[int, int] | None:
        for match in self.matches:
            if match.actual_index == actual_index:
                return match.group, match.index
        return None


_Best = tuple[float, tuple[int, ...], tuple[tuple[int, int, float], ...]]


def match_group(
    group: Sequence[ReferenceStep],
    actual_steps: Sequence[ActualStep],
    scorer: Scorer,
    *,
    before: int | None = None,
) -> list[tuple[int, int, float]]:
    """Optimal assignment of ``group``'s steps to actual steps with index < ``before``.

    Returns ``(reference index, actual index, score)`` for every matched reference step
    (only positive scores match), ordered by reference index.
    """
    limit = len(actual_steps) if before is None else before
    options: list[tuple[int, list[tuple[int, float]]]] = []
    for actual in reversed(actual_steps[:limit]):  # most recent first
        if not actual.succeeded:
            continue
        scored = [(r, scorer(ref, actual)) for r, ref in enumerate(group)]
        positive = [(r, s) for r, s in scored if s > 0]
        if positive:
            options.append((actual.index, positive))
    # best[mask] = (total score, actual indices used, most recent first, assignment)
    best: dict[int, _Best] = {0: (0.0, (), ())}
    for actual_index, positive in options:
        updated = dict(best)
        for mask, (total, used, assignment) in best.items():
            for r, score in positive:
                bit = 1 << r
                if mask & bit:
                    continue
                candidate: _Best = (
                    total + score,
                    (*used, actual_index),
                    (*assignment, (r, actual_index, score)),
                )
                current = updated.get(mask | bit)
                if current is None or _better(candidate, current):
                    updated[mask | bit] = candidate
        best = updated
    winner = best[0]
    for candidate in best.values():
        if _better(candidate, winner):
            winner = candidate
    return sorted(winner[2])


def _better(a: _Best, b: _Best) -> bool:
    """Higher total first; then the lexicographically more recent actual steps."""
    score_a, score_b = round(a[0], _PRECISION), round(b[0], _PRECISION)
    if score_a != score_b:
        return score_a > score_b
    return a[1] > b[1]


def evaluate_steps(
    groups: Sequence[Sequence[ReferenceStep]],
    actual_steps: Sequence[ActualStep],
    scorer: Scorer,
    mode: ScoreMode = "last_group",
) -> StepsOutcome:
    """Match reference groups to actual steps and compute ``steps_score`` in ``mode``."""
    if not groups:
        raise ValueError("no reference step groups")
    if mode == "last_group":
        last = len(groups) - 1
        found = match_group(groups[last], actual_steps, scorer)
        matches = tuple(StepMatch(last, r, a, s) for r, a, s in found)
        return StepsOutcome(score=_group_score(found, groups[last]), matches=matches)

    group_scores = [0.0] * len(groups)
    all_matches: list[StepMatch] = []
    before = len(actual_steps)
    for g in range(len(groups) - 1, -1, -1):
        found = match_group(groups[g], actual_steps, scorer, before=before)
        group_scores[g] = _group_score(found, groups[g])
        all_matches.extend(StepMatch(g, r, a, s) for r, a, s in found)
        if len(found) < len(groups[g]):
            break
        before = min(a for _, a, _ in found)
    all_matches.sort(key=lambda m: (m.group, m.index))
    return StepsOutcome(score=sum(group_scores) / len(groups), matches=tuple(all_matches))


def _group_score(found: Sequence[tuple[int, int, float]], group: Sequence[ReferenceStep]) -> float:
    return sum(score for _, _, score in found) / len(group)
