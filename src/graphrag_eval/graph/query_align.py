"""Which variable of the actual query stands for which of the reference query (the
diagnosis compares the queries with the actual query's variables renamed:
docs/knowledge-graph.md, "Why a query is wrong: ``query_diagnosis``").

A greedy alignment, one pair at a time: the pair whose uses agree the most wins. A variable's
uses are the triple patterns it occurs in, each seen with the terms at its other positions
(the constants, and the variables already paired): whole (its other two terms) and in part
(each other term alone, so a variable still pairs when the predicate beside it is wrong).
Uses that involve a variable already paired count first (they follow the pairs made), then
the same position in the projection where the two variables share a use or have none with a
constant, then the uses with constants only, then the same name. A variable that shares
nothing with any left is not paired. After each pair only the scores of the actual variables
beside the new pair are computed again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, Final

from graphrag_eval.graph.query_render import render
from graphrag_eval.graph.query_shape import QueryShape

__all__ = ["MAX_ALIGNED_VARIABLES", "TooManyVariables", "align"]

MAX_ALIGNED_VARIABLES: Final = 100
"""With more variables on either side the queries are not compared
(:class:`TooManyVariables`)."""

_Feature = tuple[Any, ...]
_Uses = tuple[Counter[_Feature], Counter[_Feature], Counter[_Feature], Counter[_Feature]]
"""Whole uses with a paired variable, partial uses with one, whole uses with constants only,
partial uses with a constant."""
_Score = tuple[int, int, int, int, int, int]
_NONE: Final = (0, 0, 0, 0, 0, 0)


class TooManyVariables(ValueError):
    """A query has more than :data:`MAX_ALIGNED_VARIABLES` variables."""


class _Triples:
    """The triple patterns of a query, each term as (is a variable, its name or its text),
    and where each variable occurs."""

    def __init__(self, shape: QueryShape) -> None:
        self.terms: list[tuple[tuple[bool, str], ...]] = []
        self.where: dict[str, list[tuple[int, int]]] = {}
        for element in shape.patterns:
            if element.kind != "triple":
                continue
            row = []
            for position, term in enumerate(element.terms):
                if type(term).__name__ == "Variable":
                    row.append((True, str(term)))
                    self.where.setdefault(str(term), []).append((len(self.terms), position))
                else:
                    row.append((False, render(term, str, lambda i: f"<{i}>", shape.aggregates)))
            self.terms.append(tuple(row))

    def uses(self, name: str, paired: Mapping[str, str]) -> _Uses:
        """The uses of variable ``name`` (:data:`_Uses`), the variables of ``paired``
        written as their reference names and the others as ``?``."""
        uses: _Uses = (Counter(), Counter(), Counter(), Counter())
        for index, position in self.where.get(name, ()):
            row = self.terms[index]
            others = tuple(
                (p, (f"?{paired[text]}" if text in paired else "?") if is_var else text)
                for p, (is_var, text) in enumerate(row)
                if p != position
            )
            anchored = any(text.startswith("?") and text != "?" for _, text in others)
            uses[0 if anchored else 2][(position, others)] += 1
            for other in others:
                if other[1] != "?":
                    uses[1 if other[1].startswith("?") else 3][(position, other)] += 1
        return uses

    def beside(self, name: str) -> set[str]:
        """The variables that share a triple pattern with ``name``."""
        found: set[str] = set()
        for index, _ in self.where.get(name, ()):
            found.update(text for is_var, text in self.terms[index] if is_var)
        return found


def align(reference: QueryShape, actual: QueryShape) -> dict[str, str]:
    """Actual variable name -> reference variable name, one-to-one."""
    ref_names, act_names = reference.variables(), actual.variables()
    if max(len(ref_names), len(act_names)) > MAX_ALIGNED_VARIABLES:
        raise TooManyVariables(f"more than {MAX_ALIGNED_VARIABLES} variables")
    ref_triples, act_triples = _Triples(reference), _Triples(actual)
    identity = {name: name for name in ref_names}
    ref_uses = {name: ref_triples.uses(name, identity) for name in ref_names}
    positions = _projected(reference), _projected(actual)
    mapping: dict[str, str] = {}

    def scores_of(a: str) -> dict[str, _Score]:
        uses = act_triples.uses(a, mapping)
        projected = positions[1].get(a)
        found = {}
        for r, theirs in ref_uses.items():
            shared = [_shared(mine, other) for mine, other in zip(uses, theirs, strict=True)]
            alike = shared[3] > 0 or not (uses[3] or theirs[3])
            same_place = projected is not None and projected == positions[0].get(r) and alike
            found[r] = (shared[0], shared[1], int(same_place), shared[2], shared[3], int(a == r))
        return found

    scores = {a: scores_of(a) for a in act_names}
    while scores and ref_uses:
        best: tuple[_Score, str, str] | None = None
        for a, row in scores.items():  # in order of appearance: ties go to the first
            for r, score in row.items():
                if best is None or score > best[0]:
                    best = (score, a, r)
        if best is None or best[0] == _NONE:
            break
        _, a, r = best
        mapping[a] = r
        del scores[a], ref_uses[r]
        for row in scores.values():
            row.pop(r, None)
        for other in act_triples.beside(a) & scores.keys():
            scores[other] = scores_of(other)
    return mapping


def _projected(shape: QueryShape) -> dict[str, int]:
    return {str(variable): position for position, (variable, _) in enumerate(shape.projection)}


def _shared(first: Counter[_Feature], second: Counter[_Feature]) -> int:
    if len(first) > len(second):
        first, second = second, first
    return sum(min(count, second[feature]) for feature, count in first.items() if feature in second)
