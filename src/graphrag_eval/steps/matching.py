"""Matching reference step groups to actual steps, and ``steps_score`` (docs/steps.md).

Within a group the assignment of reference steps to distinct actual steps maximises the total
match score (a greedy first-fit can miss a full match). Among equally good assignments later
reference steps take later actual steps: the last reference step gets the latest actual step
it can, then the one before it, and so on, as in the seed's later versions (which match
reference steps from last to first, each taking the latest free actual step; where that greedy
finds an optimal assignment, this is the one it finds). The assignment is exact and polynomial
(the Hungarian algorithm on integer weights), so large groups stay cheap.

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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

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
    explanations: Mapping[tuple[int, int], Any] = field(default_factory=dict)
    """Why reference step (group, index) did not fully match
    (:class:`~graphrag_eval.steps.reasons.StepExplanation`), for those below a full match."""

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
    scores: dict[tuple[int, int], float] = {}
    for actual in actual_steps[:limit]:
        if not actual.succeeded:
            continue
        for r, reference in enumerate(group):
            score = scorer(reference, actual)
            if score > 0:
                scores[(r, actual.index)] = score
    if not scores:
        return []
    # Integer weights make the optimum exact: the total score (to 9 decimals) comes first;
    # then a bonus of rank * base**r for reference step r, rank being 1 + the position of its
    # actual step among the candidates (an unmatched step has rank 0, like the "unmatched"
    # columns). The bonuses are the digits of one number in base `base` with the last
    # reference step most significant, so among equally good assignments the last reference
    # step takes the latest actual step it can, then the one before it, and so on. All the
    # bonuses together stay below one unit of score (at most base**len(group) - 1).
    columns = sorted({a for _, a in scores})
    base = len(columns) + 1
    unit = base ** len(group)
    weights = [
        [
            round(scores[(r, a)] * 10**_PRECISION) * unit + (j + 1) * base**r
            if (r, a) in scores
            else 0
            for j, a in enumerate(columns)
        ]
        + [0] * len(group)  # one "unmatched" column per reference step
        for r in range(len(group))
    ]
    chosen = _max_weight_assignment(weights)
    return [
        (r, columns[j], scores[(r, columns[j])])
        for r, j in enumerate(chosen)
        if j < len(columns) and (r, columns[j]) in scores
    ]


def _max_weight_assignment(weights: list[list[int]]) -> list[int]:
    """Column chosen for each row, maximising the total weight (rows <= columns).

    The Hungarian algorithm with potentials, O(rows^2 * columns), on exact integers.
    """
    rows, cols = len(weights), len(weights[0])
    cost = [[-w for w in row] for row in weights]  # minimise the negated weights
    infinity = sum(max(abs(c) for c in row) for row in cost) * 2 + 1
    u = [0] * (rows + 1)
    v = [0] * (cols + 1)
    owner = [0] * (cols + 1)  # owner[j]: the row (1-based) holding column j, 0 if none
    way = [0] * (cols + 1)
    for row in range(1, rows + 1):
        owner[0] = row
        j0 = 0
        min_slack = [infinity] * (cols + 1)
        used = [False] * (cols + 1)
        while True:
            used[j0] = True
            i0 = owner[j0]
            delta, j1 = infinity, 0
            for j in range(1, cols + 1):
                if used[j]:
                    continue
                slack = cost[i0 - 1][j - 1] - u[i0] - v[j]
                if slack < min_slack[j]:
                    min_slack[j], way[j] = slack, j0
                if min_slack[j] < delta:
                    delta, j1 = min_slack[j], j
            for j in range(cols + 1):
                if used[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    min_slack[j] -= delta
            j0 = j1
            if owner[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            owner[j0] = owner[j1]
            j0 = j1
    chosen = [0] * rows
    for j in range(1, cols + 1):
        if owner[j]:
            chosen[owner[j] - 1] = j - 1
    return chosen


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
