"""SPARQL 1.1 Query Results JSON as typed, comparable cells (docs/steps.md, "SPARQL results
comparison").

Cells are compared as whole typed values: URIs, blank nodes and plain literals by their
value; xsd integer types as integers; xsd decimal/float/double as numbers equal within
``ABS_TOLERANCE`` (integer 1 equals decimal 1.0; infinities equal only themselves, NaN by
lexical form); xsd:boolean as a boolean; other datatypes by lexical value; an unbound variable
as ``None``, equal only to ``None``. :func:`close` is that tolerant equality of numbers.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any, Final, Literal

import msgspec

__all__ = [
    "ABS_TOLERANCE",
    "REL_TOLERANCE",
    "Cell",
    "SparqlResults",
    "close",
    "difference",
    "parse_sparql_results",
    "sparql_results_vars",
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
_DATATYPE = attrgetter("datatype")
_VALUE = attrgetter("value")

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
    normalised cells per variable in ``columns``. ``numbers`` holds each column's numeric
    cells and ``real_columns`` the columns with a non-integer, so the comparison need not scan
    the cells again."""

    vars: tuple[str, ...]
    columns: Mapping[str, tuple[Cell, ...]]
    row_count: int
    boolean: bool | None = None
    numbers: Mapping[str, frozenset[int | float]] = field(default_factory=dict, compare=False)
    real_columns: frozenset[str] = field(default=frozenset(), compare=False)
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    """Work on this result that does not depend on the other side (reference signatures)."""

    @property
    def is_ask(self) -> bool:
        return self.boolean is not None


class _Term(msgspec.Struct, gc=False):  # holds strings only: no need for the GC to track it
    value: str
    datatype: str | None = None


class _Results(msgspec.Struct):
    bindings: list[dict[str, _Term]]


class _Head(msgspec.Struct):
    vars: list[str] | None = None


class _Document(msgspec.Struct):
    head: _Head | None = None
    results: _Results | None = None
    boolean: bool | None = None


# Most results use a few XSD datatypes: decoded as literals, they are the same string objects
# every time instead of one new string per cell. A document with another datatype is decoded
# again with the general decoder.
_COMMON_DATATYPES = (
    *_INTEGER_TYPES,
    *_REAL_TYPES,
    _BOOLEAN_TYPE,
    *(_XSD + name for name in ("string", "dateTime", "date", "time", "gYear", "anyURI")),
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString",
)
if TYPE_CHECKING:
    _CommonDatatype = str
else:
    _CommonDatatype = Literal[tuple(sorted(_COMMON_DATATYPES))]


class _CommonTerm(msgspec.Struct, gc=False):
    value: str
    datatype: _CommonDatatype | None = None


class _CommonResults(msgspec.Struct):
    bindings: list[dict[str, _CommonTerm]]


class _CommonDocument(msgspec.Struct):
    head: _Head | None = None
    results: _CommonResults | None = None
    boolean: bool | None = None


_DECODER = msgspec.json.Decoder(_Document)
_COMMON_DECODER = msgspec.json.Decoder(_CommonDocument)


def parse_sparql_results(value: str | Mapping[str, Any]) -> SparqlResults:
    """Parse SPARQL 1.1 Query Results JSON (text or already-decoded mapping).

    Raises ``ValueError`` with a short reason when it is not such a document (for example a
    DESCRIBE result in Turtle, or an error message).
    """
    return _from_document(_decode(value))


def sparql_results_vars(value: str | Mapping[str, Any]) -> tuple[str, ...] | None:
    """The variables of SPARQL 1.1 Query Results JSON (its columns: ``vars`` of
    :func:`parse_sparql_results`), or ``None`` for an ASK result; raises the ``ValueError``
    :func:`parse_sparql_results` raises, without building the columns (a check that keeps
    nothing: docs/benchmarks.md, "Speed, second pass")."""
    document = _decode(value)
    if document.boolean is not None:
        return None
    if document.results is None:
        raise ValueError(_NO_RESULTS)
    return _variables(document)


_NO_RESULTS = "neither 'boolean' nor 'results.bindings' present"


def _decode(value: str | Mapping[str, Any]) -> _Document | _CommonDocument:
    document: _Document | _CommonDocument
    try:
        if isinstance(value, str):
            try:
                document = _COMMON_DECODER.decode(value)
            except msgspec.ValidationError:  # another datatype, or not SPARQL results JSON
                document = _DECODER.decode(value)
        elif isinstance(value, Mapping):
            document = msgspec.convert(value, _Document)
        else:
            raise ValueError(f"expected SPARQL results JSON text, got {type(value).__name__}")
    except msgspec.DecodeError as exc:
        if isinstance(exc, msgspec.ValidationError):
            raise ValueError(f"not SPARQL results JSON: {exc}") from None
        raise ValueError("not JSON (a DESCRIBE/CONSTRUCT result or an error text?)") from None
    return document


def _variables(document: _Document | _CommonDocument) -> tuple[str, ...]:
    assert document.results is not None
    declared = document.head.vars if document.head is not None else None
    if declared is None:
        names: dict[str, None] = {}
        for binding in document.results.bindings:
            names.update(dict.fromkeys(binding))
        return tuple(names)
    return tuple(dict.fromkeys(declared))  # a repeated name is one column


def _from_document(document: _Document | _CommonDocument) -> SparqlResults:
    if document.boolean is not None:
        return SparqlResults(vars=(), columns={}, row_count=0, boolean=document.boolean)
    if document.results is None:
        raise ValueError(_NO_RESULTS)
    bindings = document.results.bindings
    variables = _variables(document)
    columns: dict[str, tuple[Cell, ...]] = {}
    numbers: dict[str, frozenset[int | float]] = {}
    real_columns: set[str] = set()
    for var in variables:
        column, found, real = _column(bindings, var)
        columns[var] = column
        numbers[var] = found
        if real:
            real_columns.add(var)
    return SparqlResults(
        vars=variables,
        columns=columns,
        row_count=len(bindings),
        numbers=numbers,
        real_columns=frozenset(real_columns),
    )


def _column(
    bindings: Sequence[Mapping[str, _Term | _CommonTerm]], var: str
) -> tuple[tuple[Cell, ...], frozenset[int | float], bool]:
    """One column's cells, its numbers and whether one is not an integer. A column of one
    kind (every term bound and of one datatype, the common case) is converted in passes of
    builtins; others cell by cell."""
    try:
        terms: list[_Term | _CommonTerm | None] = list(map(itemgetter(var), bindings))
    except KeyError:  # an unbound cell
        return _cells([binding.get(var) for binding in bindings])
    datatypes = set(map(_DATATYPE, terms))
    if len(datatypes) == 1:
        (datatype,) = datatypes
        values = list(map(_VALUE, terms))
        if datatype is None:
            return tuple(values), frozenset(), False
        converter = (
            int if datatype in _INTEGER_TYPES else float if datatype in _REAL_TYPES else None
        )
        if converter is not None:
            try:
                converted: list[int | float] = list(map(converter, values))
            except ValueError:
                pass  # a malformed number stays text: cell by cell below
            else:
                if converter is int or not any(map(math.isnan, converted)):
                    return tuple(converted), frozenset(converted), converter is float
    return _cells(terms)


def _cells(
    terms: Sequence[_Term | _CommonTerm | None],
) -> tuple[tuple[Cell, ...], frozenset[int | float], bool]:
    cells: list[Cell] = []
    append = cells.append
    found: set[int | float] = set()
    real = False
    for term in terms:
        if term is None:
            append(None)
        elif term.datatype is None:
            append(term.value)
        else:
            cell = _typed(term.value, term.datatype)
            append(cell)
            if type(cell) is int:
                found.add(cell)
            elif type(cell) is float:
                found.add(cell)
                real = True
    return tuple(cells), frozenset(found), real


def _typed(value: str, datatype: str) -> Cell:
    """A typed literal as a comparable value (see the module docs)."""
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


def difference(a: int | float, b: int | float) -> float | Fraction:
    try:
        return abs(a - b)
    except OverflowError:  # an integer beyond the float range against a float
        return abs(Fraction(a) - Fraction(b))


def close(a: int | float, b: int | float) -> bool:
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
    """:func:`close` in exact rational arithmetic, for integers beyond the float range."""
    if (type(a) is float and math.isinf(a)) or (type(b) is float and math.isinf(b)):
        return a == b
    exact_a, exact_b = Fraction(a), Fraction(b)
    difference = abs(exact_a - exact_b)
    return difference <= Fraction(ABS_TOLERANCE) or difference <= Fraction(REL_TOLERANCE) * max(
        abs(exact_a), abs(exact_b)
    )
