"""Comparison of SPARQL 1.1 Query Results JSON documents (docs/steps.md, "SPARQL results
comparison").

A reference SELECT result matches an actual one when some one-to-one assignment of the
required reference columns to distinct actual columns makes the actual rows, projected onto
the assigned columns, equal to the reference rows: as sequences (``ordered``), as sets
(unordered, ``ignore_duplicates``) or as multisets (unordered, duplicates counted). With
``ordered`` and ``ignore_duplicates`` both true, repeated rows are dropped (first occurrence
kept) before the sequences are compared.

The seed tried every permutation of every column subset. Here each mode's row normalisation
``N`` has the property that ``N(A) == N(R)`` implies ``N(A|P) == N(R|P)`` for every subset
``P`` of the columns (projection keeps equality). So a column can only be assigned to an
actual column with the same single-column signature ``N(col)``, and a partial assignment that
already fails on its columns can be abandoned: a backtracking search over few candidates
with early checks replaces the factorial enumeration.

Cells are typed values (:mod:`.sparql_values`). Tolerant equality of numbers is made hashable
by replacing numbers with representatives taken from the reference only, so the values in
extra actual columns never influence the comparison.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import sub
from typing import Any, Final, Protocol

from graphrag_eval.steps.sparql_values import (
    ABS_TOLERANCE,
    REL_TOLERANCE,
    Cell,
    SparqlResults,
    close,
    difference,
    parse_sparql_results,
)

__all__ = [
    "ABS_TOLERANCE",
    "SEARCH_BUDGET_CELLS",
    "Normalizer",
    "ReferenceSide",
    "SearchBudgetExceeded",
    "SparqlResults",
    "actual_columns",
    "compare_sparql_results",
    "normalizer",
    "parse_sparql_results",
    "prepare_reference",
    "reference_side",
]

SEARCH_BUDGET_CELLS: Final = 50_000_000
"""The column search gives up (raising :class:`SearchBudgetExceeded`) after projecting this many
cells in partial checks: only adversarial results, where every column of many fits on its own
and every partial assignment agrees, come near it (typical comparisons project a few times the
result's size). Deterministic, unlike a time limit."""


class SearchBudgetExceeded(ValueError):
    """The column assignment search was abandoned (see :data:`SEARCH_BUDGET_CELLS`)."""


# --------------------------------------------------------------------------------------------
# Comparison


Normalizer = Callable[[Iterable[Any]], Hashable]


def _as_sequence_without_repeats(rows: Iterable[Any]) -> Hashable:
    return tuple(dict.fromkeys(rows))


def _as_multiset(rows: Iterable[Any]) -> Hashable:
    return frozenset(Counter(rows).items())


def normalizer(ordered: bool, ignore_duplicates: bool) -> Normalizer:
    if ordered:
        return _as_sequence_without_repeats if ignore_duplicates else tuple
    return frozenset if ignore_duplicates else _as_multiset


def compare_sparql_results(
    reference: str | Mapping[str, Any] | SparqlResults,
    actual: str | Mapping[str, Any] | SparqlResults,
    required_columns: Sequence[str] | None = None,
    *,
    ordered: bool = False,
    ignore_duplicates: bool = True,
) -> int:
    """Return 1 if ``actual`` matches ``reference`` on the required columns, else 0.

    An actual result that is not SPARQL results JSON scores 0. A reference that is not, or
    that lacks a required column, raises ``ValueError`` (a data bug in the reference).
    """
    ref = reference if isinstance(reference, SparqlResults) else parse_sparql_results(reference)
    if isinstance(actual, SparqlResults):
        act = actual
    else:
        try:
            act = parse_sparql_results(actual)
        except ValueError:
            return 0
    if ref.is_ask or act.is_ask:
        return int(ref.is_ask and act.is_ask and ref.boolean == act.boolean)
    required = tuple(dict.fromkeys(required_columns)) if required_columns is not None else ref.vars
    missing = [column for column in required if column not in ref.columns]
    if missing:
        raise ValueError(f"required column(s) {', '.join(missing)} not among the reference's vars")
    if ref.row_count == 0 or act.row_count == 0:
        return int(ref.row_count == act.row_count and len(act.vars) >= len(required))
    if len(act.vars) < len(required):
        return 0
    if not ignore_duplicates and ref.row_count != act.row_count:
        return 0  # sequences and multisets must have as many rows
    if not required:
        return 1

    normalize = normalizer(ordered, ignore_duplicates)
    ref_side = reference_side(ref, required, normalize)
    act_columns = actual_columns(act, ref_side)
    return int(
        _assignment_exists(
            ref_side,
            act_columns,
            normalize,
            check_partial=not (ordered and not ignore_duplicates),
        )
    )


@dataclass(frozen=True, slots=True)
class ReferenceSide:
    """What the comparison needs of the reference for one (required columns, mode): it does
    not depend on the actual result, so it is computed once per reference."""

    columns: list[tuple[Cell, ...]]
    signatures: list[Hashable]
    numbers: frozenset[int | float]
    sorted_numbers: list[int | float]
    representatives: list[int | float]
    mapping: dict[int | float, int | float]
    """Reference numbers replaced by their group's representative (equal within tolerance)."""
    has_real: bool
    prefix_norms: dict[tuple[int, ...], Hashable] = field(default_factory=dict)
    """Normalised rows projected on column prefixes, as the search asks for them."""


def prepare_reference(
    reference: SparqlResults,
    required_columns: Sequence[str] | None = None,
    *,
    ordered: bool = False,
    ignore_duplicates: bool = True,
) -> None:
    """Do now the reference's share of :func:`compare_sparql_results` for these settings
    (number grouping, column signatures); it is kept on ``reference`` for later comparisons."""
    if reference.is_ask or reference.row_count == 0:
        return
    required = (
        tuple(dict.fromkeys(required_columns)) if required_columns is not None else reference.vars
    )
    if all(name in reference.columns for name in required):
        reference_side(reference, required, normalizer(ordered, ignore_duplicates))


def reference_side(
    ref: SparqlResults, required: tuple[str, ...], normalize: Normalizer
) -> ReferenceSide:
    key = (required, normalize)
    cached: ReferenceSide | None = ref.memo.get(key)
    if cached is not None:
        return cached
    numbers = frozenset().union(*(ref.numbers.get(name, frozenset()) for name in required))
    sorted_numbers = sorted(numbers)
    representatives, mapping = _number_groups(sorted_numbers)
    columns = [_remap(ref.columns[name], ref.numbers.get(name), mapping) for name in required]
    side = ReferenceSide(
        columns=columns,
        signatures=[normalize(column) for column in columns],
        numbers=numbers,
        sorted_numbers=sorted_numbers,
        representatives=representatives,
        mapping=mapping,
        has_real=any(name in ref.real_columns for name in required),
    )
    ref.memo[key] = side
    return side


def _number_groups(
    sorted_numbers: list[int | float],
) -> tuple[list[int | float], dict[int | float, int | float]]:
    """Each sorted reference number's representative (consecutive numbers within tolerance
    are one group, represented by its first) and the numbers that are not their own."""
    try:
        # Most neighbours are far apart: tell so in passes of builtins. Every gap above the
        # absolute tolerance and the relative one of the largest magnitude is far enough.
        gaps = list(map(sub, sorted_numbers[1:], sorted_numbers[:-1]))
        largest = max(abs(sorted_numbers[0]), abs(sorted_numbers[-1])) if sorted_numbers else 0
        if not gaps or min(gaps) > max(ABS_TOLERANCE, REL_TOLERANCE * largest):
            return sorted_numbers, {}
    except OverflowError:  # an integer beyond the float range: the exact path below
        pass
    representatives: list[int | float] = []
    mapping: dict[int | float, int | float] = {}
    if sorted_numbers:
        representative = previous = sorted_numbers[0]
        representatives.append(representative)
        for number in sorted_numbers[1:]:
            try:
                gap = number - previous
                larger = number if number > -previous else -previous
                far = gap > ABS_TOLERANCE and gap > REL_TOLERANCE * larger
            except OverflowError:
                far = False
            if far or not close(previous, number):
                representative = number
            else:
                mapping[number] = representative
            representatives.append(representative)
            previous = number
    return representatives, mapping


def actual_columns(act: SparqlResults, ref: ReferenceSide) -> list[tuple[Cell, ...]]:
    """The actual columns with numbers replaced by the representative of the reference number
    they equal within tolerance.

    Tolerant equality does not hash; after this step plain ``==`` and hashing give the
    tolerant comparison. The reference's numbers are sorted and consecutive values within
    tolerance are joined into a group (so no two tolerant-equal reference values end up
    apart); each actual number then takes the representative of the nearest reference number
    within tolerance, if any. Representatives come from the reference alone, so one actual
    cell's value never changes how another is compared (extra actual columns stay inert).
    """
    columns = [act.columns[name] for name in act.vars]
    if not ref.numbers or not (ref.has_real or act.real_columns):
        return columns  # no numbers to compare, or only integers, which are exact
    act_numbers = frozenset().union(*act.numbers.values())
    mapping = {n: ref.mapping[n] for n in act_numbers & ref.mapping.keys()}
    for number in act_numbers - ref.numbers:
        position = bisect_left(ref.sorted_numbers, number)
        near = [
            index
            for index in (position - 1, position)
            if 0 <= index < len(ref.sorted_numbers) and close(ref.sorted_numbers[index], number)
        ]
        if near:
            nearest = min(near, key=lambda index: difference(ref.sorted_numbers[index], number))
            mapping[number] = ref.representatives[nearest]
    if not mapping:
        return columns
    return [
        _remap(column, act.numbers.get(name), mapping)
        for name, column in zip(act.vars, columns, strict=True)
    ]


def _remap(
    column: tuple[Cell, ...],
    numbers: frozenset[int | float] | None,
    mapping: Mapping[int | float, int | float],
) -> tuple[Cell, ...]:
    if not numbers or not mapping or numbers.isdisjoint(mapping.keys()):
        return column
    return tuple(
        mapping.get(cell, cell) if type(cell) is int or type(cell) is float else cell
        for cell in column
    )


class _Search(Protocol):
    def __call__(self, depth: int, branched: bool, deeper: _Search, /) -> bool: ...


def _assignment_exists(
    ref: ReferenceSide,
    act_columns: list[tuple[Cell, ...]],
    normalize: Normalizer,
    *,
    check_partial: bool,
) -> bool:
    """Backtracking search for an injective column assignment, pruned by signatures.

    A partial assignment is checked only once the search has had a choice to make: before
    that, every level had a single candidate, and only the final check can fail.
    """
    candidates = _candidates(ref, act_columns, normalize)
    if candidates is None:
        return False
    # Identical actual columns are interchangeable: try one of each content at a level.
    content_ids: dict[tuple[Cell, ...], int] = {}
    content_of = [content_ids.setdefault(column, len(content_ids)) for column in act_columns]
    # Most constrained reference columns first.
    order = sorted(range(len(ref.columns)), key=lambda r: len(candidates[r]))
    last = len(order) - 1
    used: list[bool] = [False] * len(act_columns)
    chosen: list[int] = []
    rows = len(act_columns[0]) if act_columns else 0
    work = 0  # cells projected by partial checks so far

    # Handed itself (``deeper``): called by name, it would be a cycle left for the collector.
    def search(depth: int, branched: bool, deeper: _Search) -> bool:
        if depth > last:
            return True
        options: list[int] = []
        contents: set[int] = set()
        for act_index in candidates[order[depth]]:
            if not used[act_index] and content_of[act_index] not in contents:
                contents.add(content_of[act_index])
                options.append(act_index)
        nonlocal work
        branched = branched or len(options) > 1
        for act_index in options:
            chosen.append(act_index)
            fits = (
                depth == 0  # one column: its signature already says it fits
                or not check_partial
                or not (branched or depth == last)
            )
            if not fits:
                work += rows * len(chosen)
                if work > SEARCH_BUDGET_CELLS:
                    raise _budget_exceeded()
                reference_norm = _reference_prefix_norm(ref, order, depth, normalize)
                fits = _prefix_matches([act_columns[a] for a in chosen], reference_norm, normalize)
            if fits:
                used[act_index] = True
                if deeper(depth + 1, branched, deeper):
                    return True
                used[act_index] = False
            chosen.pop()
        return False

    return search(0, False, search)


def _candidates(
    ref: ReferenceSide, act_columns: list[tuple[Cell, ...]], normalize: Normalizer
) -> list[list[int]] | None:
    """For each reference column, the actual columns of the same signature; ``None`` when
    one has none (then no assignment exists)."""
    by_signature: dict[Hashable, list[int]] = {}
    for index, column in enumerate(act_columns):
        by_signature.setdefault(normalize(column), []).append(index)
    candidates: list[list[int]] = []
    for signature in ref.signatures:
        found = by_signature.get(signature)
        if not found:
            return None
        candidates.append(found)
    return candidates


def _reference_prefix_norm(
    ref: ReferenceSide, order: list[int], depth: int, normalize: Normalizer
) -> Hashable:
    """The reference rows projected on the first ``depth + 1`` columns of ``order``,
    normalised; kept on the reference side, as the same prefixes recur across actual results."""
    prefix = tuple(order[: depth + 1])
    norm = ref.prefix_norms.get(prefix)
    if norm is None:
        columns = [ref.columns[r] for r in prefix]
        norm = ref.prefix_norms[prefix] = normalize(zip(*columns, strict=True))
    return norm


def _budget_exceeded() -> SearchBudgetExceeded:
    return SearchBudgetExceeded(
        f"more than {SEARCH_BUDGET_CELLS:,} cells compared while searching a "
        "column assignment (every column fits on its own); given up as no match"
    )


def _prefix_matches(
    columns: list[tuple[Cell, ...]], reference_norm: Hashable, normalize: Normalizer
) -> bool:
    return normalize(zip(*columns, strict=True)) == reference_norm
