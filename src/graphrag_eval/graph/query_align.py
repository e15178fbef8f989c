"""Which variable of the actual query stands for which of the reference query (the
diagnosis compares the queries with the actual query's variables renamed:
docs/knowledge-graph.md, "Why a query is wrong: ``query_diagnosis``").

A greedy alignment, one pair at a time: the pair whose uses agree the most, with the pairs
already made taken into account, wins. A variable's uses are the triple patterns it occurs in,
each seen with the terms at its other positions (the constants, and the variables already
paired): whole (its other two terms) and in part (each other term alone, so a variable still
pairs when the predicate beside it is wrong). Ties go to the same position in the projection,
then to the same name. A variable that shares nothing with any left is not paired.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, Final

from graphrag_eval.graph.query_shape import QueryShape, render

__all__ = ["MAX_ALIGNED_VARIABLES", "align"]

MAX_ALIGNED_VARIABLES: Final = 48
"""With more variables on either side, variables are paired by name only (the greedy
alignment is cubic in the variables)."""

_Feature = tuple[Any, ...]


def align(reference: QueryShape, actual: QueryShape) -> dict[str, str]:
    """Actual variable name -> reference variable name, one-to-one."""
    ref_names, act_names = reference.variables(), actual.variables()
    if max(len(ref_names), len(act_names)) > MAX_ALIGNED_VARIABLES:
        return {name: name for name in act_names if name in set(ref_names)}
    ref_positions = _projected(reference)
    act_positions = _projected(actual)
    mapping: dict[str, str] = {}
    ref_left, act_left = list(ref_names), list(act_names)
    while ref_left and act_left:
        identity = {name: name for name in ref_names}
        ref_uses = {name: _uses(reference, name, identity) for name in ref_left}
        act_uses = {name: _uses(actual, name, mapping) for name in act_left}
        best: tuple[tuple[int, int, int, int], str, str] | None = None
        for a in act_left:
            for r in ref_left:
                whole = _shared(act_uses[a][0], ref_uses[r][0])
                part = _shared(act_uses[a][1], ref_uses[r][1])
                projected = int(a in act_positions and act_positions.get(a) == ref_positions.get(r))
                score = (whole, part, projected, int(a == r))
                if best is None or score > best[0]:
                    best = (score, a, r)
        if best is None or best[0] == (0, 0, 0, 0):
            break
        _, a, r = best
        mapping[a] = r
        act_left.remove(a)
        ref_left.remove(r)
    return mapping


def _projected(shape: QueryShape) -> dict[str, int]:
    return {str(variable): position for position, (variable, _) in enumerate(shape.projection)}


def _shared(first: Counter[_Feature], second: Counter[_Feature]) -> int:
    if len(first) > len(second):
        first, second = second, first
    return sum(min(count, second[feature]) for feature, count in first.items() if feature in second)


def _uses(
    shape: QueryShape, name: str, paired: Mapping[str, str]
) -> tuple[Counter[_Feature], Counter[_Feature]]:
    """The whole and the partial uses of variable ``name`` in the triple patterns, with the
    variables of ``paired`` written as their reference names and the others as ``?``."""
    whole: Counter[_Feature] = Counter()
    part: Counter[_Feature] = Counter()

    def term(value: Any) -> str:
        return render(
            value,
            lambda v: f"?{paired[str(v)]}" if str(v) in paired else "?",
            lambda i: f"<{i}>",
            shape,
        )

    for element in shape.patterns:
        if element.kind != "triple":
            continue
        texts = None
        for position, value in enumerate(element.terms):
            if str(value) != name or type(value).__name__ != "Variable":
                continue
            if texts is None:
                texts = [term(t) for t in element.terms]
            others = tuple((p, texts[p]) for p in range(3) if p != position)
            whole[(position, others)] += 1
            for other in others:
                if other[1] != "?":
                    part[(position, other)] += 1
    return whole, part
