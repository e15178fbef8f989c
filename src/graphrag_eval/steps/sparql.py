"""Comparison of SPARQL 1.1 Query Results JSON documents (SPEC §4.3).

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

Cells are compared as whole typed values: URIs, blank nodes and plain literals by their
value; xsd integer types as integers; xsd decimal/float/double as numbers equal within
``ABS_TOLERANCE`` (integer 1 equals decimal 1.0; infinities equal only themselves, NaN by
lexical form); xsd:boolean as a boolean; other datatypes by lexical value; an unbound variable
as ``None``, equal only to ``None``. Tolerant equality is made hashable by replacing numbers with
representatives taken from the reference only, so the values in extra actual columns never
influence the comparison.
"""

from __future__ import annotations

import itertools
import json
import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any, Final

__all__ = [
    "ABS_TOLERANCE",
    "SparqlResults",
    "compare_sparql_results",
    "parse_sparql_results",
]

ABS_TOLERANCE: Final = 1e-8
"""Two numbers are equal when they differ by at most this much (the seed's precision) ..."""
REL_TOLERANCE: Final = 1e-12
"""... or by this fraction of the larger, which absorbs rounding in very large doubles."""

_XSD = "http://www.w3.org/2001/XMLSchema#"
_INTEGER_TYPES = frozenset(
    _XSD + name
    for name in (
        "integer",
        "int",
        "long",
        "short",
        "byte",
        "nonNegativeInteger",
        "positiveInteger",
        "negativeInteger",
        "nonPositiveInteger",
        "unsignedLong",
        "unsignedInt",
        "unsignedShort",
        "unsignedByte",
    )
)
_REAL_TYPES = frozenset(_XSD + name for name in ("decimal", "float", "double"))
_BOOLEAN_TYPE = _XSD + "boolean"

Cell = Hashable
"""A normalised cell: ``None`` (unbound), ``str`` (URI, blank node, literal by its value),
``int``/``float`` (numbers), or a :class:`_Boolean`/``_NaN`` marker."""


@dataclass(frozen=True, slots=True)
class _Boolean:
    value: bool


@dataclass(frozen=True, slots=True)
class _NaN:
    lexical: str


_TRUE, _FALSE = _Boolean(True), _Boolean(False)


@dataclass(frozen=True, slots=True)
class SparqlResults:
    """A parsed SPARQL JSON result: ``boolean`` for ASK, else ``vars`` and one tuple of
    normalised cells per variable in ``columns``."""

    vars: tuple[str, ...]
    columns: Mapping[str, tuple[Cell, ...]]
    row_count: int
    boolean: bool | None = None

    @property
    def is_ask(self) -> bool:
        return self.boolean is not None


def parse_sparql_results(value: str | Mapping[str, Any]) -> SparqlResults:
    """Parse SPARQL 1.1 Query Results JSON (text or already-decoded mapping).

    Raises ``ValueError`` with a short reason when it is not such a document (for example a
    DESCRIBE result in Turtle, or an error message).
    """
    if isinstance(value, str):
        return _parse_text(value)
    if isinstance(value, Mapping):
        return _parse_document(value)
    raise ValueError(f"expected SPARQL results JSON text, got {type(value).__name__}")


@lru_cache(maxsize=512)
def _parse_text(text: str) -> SparqlResults:
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        raise ValueError("not JSON (a DESCRIBE/CONSTRUCT result or an error text?)") from None
    if not isinstance(document, Mapping):
        raise ValueError("not a SPARQL results JSON object")
    return _parse_document(document)


def _parse_document(document: Mapping[str, Any]) -> SparqlResults:
    head = document.get("head", {})
    if not isinstance(head, Mapping):
        raise ValueError("'head' is not an object")
    if "boolean" in document:
        if not isinstance(document["boolean"], bool):
            raise ValueError("'boolean' is not true or false")
        return SparqlResults(vars=(), columns={}, row_count=0, boolean=document["boolean"])
    results = document.get("results")
    if not isinstance(results, Mapping) or not isinstance(results.get("bindings"), list):
        raise ValueError("neither 'boolean' nor 'results.bindings' present")
    bindings: list[Any] = results["bindings"]
    declared = head.get("vars")
    if declared is None:
        names: dict[str, None] = {}
        for binding in bindings:
            if isinstance(binding, Mapping):
                names.update(dict.fromkeys(binding))
        variables = tuple(names)
    elif isinstance(declared, list) and all(isinstance(v, str) for v in declared):
        variables = tuple(dict.fromkeys(declared))  # a repeated name is one column
    else:
        raise ValueError("'head.vars' is not a list of names")
    cells: dict[str, list[Cell]] = {var: [] for var in variables}
    pairs = list(cells.items())
    for row, binding in enumerate(bindings):
        if not isinstance(binding, Mapping):
            raise ValueError(f"binding {row} is not an object")
        for var, column in pairs:
            term = binding.get(var)
            column.append(None if term is None else _cell(term))
    return SparqlResults(
        vars=variables,
        columns={var: tuple(column) for var, column in cells.items()},
        row_count=len(bindings),
    )


def _cell(term: Any) -> Cell:
    if not isinstance(term, Mapping):
        raise ValueError("a bound value is not an RDF term object")
    value = term.get("value")
    if not isinstance(value, str):
        raise ValueError("an RDF term has no string 'value'")
    datatype = term.get("datatype")
    if datatype is None:
        return value
    if not isinstance(datatype, str):
        raise ValueError("an RDF term's 'datatype' is not a string")
    if datatype in _INTEGER_TYPES:
        try:
            return int(value.strip())
        except ValueError:
            return value
    if datatype in _REAL_TYPES:
        try:
            number = float(value.strip())
        except ValueError:
            return value
        return _NaN(value) if math.isnan(number) else number
    if datatype == _BOOLEAN_TYPE:
        lexical = value.strip()
        if lexical in ("true", "1"):
            return _TRUE
        if lexical in ("false", "0"):
            return _FALSE
    return value


# --------------------------------------------------------------------------------------------
# Comparison


Normalizer = Callable[[Sequence[Any]], Hashable]


def _as_sequence(rows: Sequence[Any]) -> Hashable:
    return tuple(rows)


def _as_sequence_without_repeats(rows: Sequence[Any]) -> Hashable:
    return tuple(dict.fromkeys(rows))


def _as_set(rows: Sequence[Any]) -> Hashable:
    return frozenset(rows)


def _as_multiset(rows: Sequence[Any]) -> Hashable:
    return frozenset(Counter(rows).items())


def _normalizer(ordered: bool, ignore_duplicates: bool) -> Normalizer:
    if ordered:
        return _as_sequence_without_repeats if ignore_duplicates else _as_sequence
    return _as_set if ignore_duplicates else _as_multiset


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
    required = tuple(required_columns) if required_columns is not None else ref.vars
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

    ref_columns = [ref.columns[name] for name in required]
    act_columns = [act.columns[name] for name in act.vars]
    ref_columns, act_columns = _canonical_numbers(ref_columns, act_columns)
    normalize = _normalizer(ordered, ignore_duplicates)
    return int(
        _assignment_exists(
            ref_columns,
            act_columns,
            normalize,
            check_partial=not (ordered and not ignore_duplicates),
        )
    )


def _assignment_exists(
    ref_columns: list[tuple[Cell, ...]],
    act_columns: list[tuple[Cell, ...]],
    normalize: Normalizer,
    *,
    check_partial: bool,
) -> bool:
    """Backtracking search for an injective column assignment, pruned by signatures."""
    by_signature: dict[Hashable, list[int]] = {}
    for index, column in enumerate(act_columns):
        by_signature.setdefault(normalize(column), []).append(index)
    candidates: list[list[int]] = []
    for column in ref_columns:
        found = by_signature.get(normalize(column))
        if not found:
            return False
        candidates.append(found)
    # Identical actual columns are interchangeable: try one of each content at a level.
    content_ids: dict[tuple[Cell, ...], int] = {}
    content_of = [content_ids.setdefault(column, len(content_ids)) for column in act_columns]
    # Most constrained reference columns first.
    order = sorted(range(len(ref_columns)), key=lambda r: len(candidates[r]))
    ref_prefix_norms: dict[int, Hashable] = {}

    def ref_norm(depth: int) -> Hashable:
        if depth not in ref_prefix_norms:
            columns = [ref_columns[order[d]] for d in range(depth + 1)]
            ref_prefix_norms[depth] = normalize(list(zip(*columns, strict=True)))
        return ref_prefix_norms[depth]

    used: list[bool] = [False] * len(act_columns)
    chosen: list[int] = []

    def search(depth: int) -> bool:
        if depth == len(order):
            return True
        tried_contents: set[int] = set()
        for act_index in candidates[order[depth]]:
            if used[act_index] or content_of[act_index] in tried_contents:
                continue
            tried_contents.add(content_of[act_index])
            chosen.append(act_index)
            if (
                depth == 0
                or not check_partial
                or _prefix_matches([act_columns[a] for a in chosen], ref_norm(depth), normalize)
            ):
                used[act_index] = True
                if search(depth + 1):
                    return True
                used[act_index] = False
            chosen.pop()
        return False

    return search(0)


def _prefix_matches(
    columns: list[tuple[Cell, ...]], reference_norm: Hashable, normalize: Normalizer
) -> bool:
    return normalize(list(zip(*columns, strict=True))) == reference_norm


def _canonical_numbers(
    ref_columns: list[tuple[Cell, ...]], act_columns: list[tuple[Cell, ...]]
) -> tuple[list[tuple[Cell, ...]], list[tuple[Cell, ...]]]:
    """Replace numbers that are equal within tolerance by one representative.

    Tolerant equality does not hash; after this step plain ``==`` and hashing give the
    tolerant comparison. The reference's numbers are sorted and consecutive values within
    tolerance are joined into a group (so no two tolerant-equal reference values end up
    apart); each actual number then takes the representative of the nearest reference number
    within tolerance, if any. Representatives come from the reference alone, so one actual
    cell's value never changes how another is compared (extra actual columns stay inert).
    Only needed when a non-integer is present.
    """
    ref_set = _numbers(ref_columns)
    if not ref_set:
        return ref_columns, act_columns
    act_set = _numbers(act_columns)
    if not any(type(number) is float for number in itertools.chain(ref_set, act_set)):
        return ref_columns, act_columns  # integers are exact
    ref_numbers = sorted(ref_set)
    mapping: dict[int | float, int | float] = {}
    representative = previous = ref_numbers[0]
    representatives: list[int | float] = [representative]
    for number in ref_numbers[1:]:
        if _close(previous, number):
            mapping[number] = representative
        else:
            representative = number
        representatives.append(representative)
        previous = number
    for number in act_set:
        if number in ref_set:
            continue  # equal to a reference number: shares its mapping
        position = bisect_left(ref_numbers, number)
        near = [
            index
            for index in (position - 1, position)
            if 0 <= index < len(ref_numbers) and _close(ref_numbers[index], number)
        ]
        if near:
            nearest = min(near, key=lambda index: _difference(ref_numbers[index], number))
            mapping[number] = representatives[nearest]
    if not mapping:
        return ref_columns, act_columns

    def remap(column: tuple[Cell, ...]) -> tuple[Cell, ...]:
        if not any(type(cell) in (int, float) and cell in mapping for cell in column):
            return column
        return tuple(
            mapping.get(cell, cell) if type(cell) in (int, float) else cell  # type: ignore[call-overload]
            for cell in column
        )

    return [remap(c) for c in ref_columns], [remap(c) for c in act_columns]


def _numbers(columns: list[tuple[Cell, ...]]) -> set[int | float]:
    return {
        cell for column in columns for cell in column if type(cell) is float or type(cell) is int
    }


def _difference(a: int | float, b: int | float) -> float | Fraction:
    try:
        return abs(a - b)
    except OverflowError:  # an integer beyond the float range against a float
        return abs(Fraction(a) - Fraction(b))


def _close(a: int | float, b: int | float) -> bool:
    try:
        difference = abs(a - b)
    except OverflowError:  # an integer beyond the float range against a float
        return _close_exactly(a, b)
    if difference <= ABS_TOLERANCE:
        return True
    if type(a) is int and type(b) is int:
        return False  # integers are exact
    if math.isinf(difference) or math.isnan(difference):
        return a == b  # an infinity equals only itself
    try:
        return difference <= REL_TOLERANCE * max(abs(a), abs(b))
    except OverflowError:
        return _close_exactly(a, b)


def _close_exactly(a: int | float, b: int | float) -> bool:
    """:func:`_close` in exact rational arithmetic, for integers beyond the float range."""
    if (type(a) is float and math.isinf(a)) or (type(b) is float and math.isinf(b)):
        return a == b
    exact_a, exact_b = Fraction(a), Fraction(b)
    difference = abs(exact_a - exact_b)
    return difference <= Fraction(ABS_TOLERANCE) or difference <= Fraction(REL_TOLERANCE) * max(
        abs(exact_a), abs(exact_b)
    )
