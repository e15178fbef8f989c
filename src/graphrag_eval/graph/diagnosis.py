"""Why a query is wrong: the labels of ``query_diagnosis`` (docs/knowledge-graph.md, "Why a
query is wrong: ``query_diagnosis``").

The reference and the actual query are parsed by a real SPARQL 1.1 parser (rdflib's, the
``sparql`` extra: :mod:`~graphrag_eval.graph.query_shape`), the actual query's variables are
renamed to the reference's they stand for (:mod:`~graphrag_eval.graph.query_align`), and the
two are compared on rdflib's algebra, prefixes expanded. Each difference is a
:class:`Finding`: a label of the fixed vocabulary :class:`Diagnosis` with the terms concerned
(``expected``: the reference's, ``found``: the actual query's). The labels ``timeout`` and
``update_refused`` come from the step's execution (:func:`execution_findings`), and
``unknown_iri`` from the store (:mod:`~graphrag_eval.graph.iri_check`).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from graphrag_eval.graph.execution import ExecutionError
from graphrag_eval.graph.query_align import TooManyVariables, align
from graphrag_eval.graph.query_render import clipped, render
from graphrag_eval.graph.query_shape import (
    Element,
    QueryShape,
    QuerySyntaxError,
    parse_query,
    shape_of,
)
from graphrag_eval.graph.readonly import update_refusal

__all__ = [
    "MAX_TERMS",
    "Diagnosis",
    "Finding",
    "compare_shapes",
    "diagnose_queries",
    "execution_findings",
    "sparql_parser_available",
]

logger = logging.getLogger("graphrag_eval")

MAX_TERMS: Final = 10
"""Terms listed per side of a finding at most; the last says how many more there are."""


class Diagnosis(enum.Enum):
    """The vocabulary of ``query_diagnosis``, in the order findings are listed."""

    SYNTAX_ERROR = "syntax_error"
    UPDATE_REFUSED = "update_refused"
    TIMEOUT = "timeout"
    UNKNOWN_IRI = "unknown_iri"
    WRONG_PREDICATE = "wrong_predicate"
    MISSING_PATTERN = "missing_pattern"
    EXTRA_PATTERN = "extra_pattern"
    MISSING_FILTER = "missing_filter"
    EXTRA_FILTER = "extra_filter"
    PROJECTION_DIFFERS = "projection_differs"
    DISTINCT_DIFFERS = "distinct_differs"
    ORDER_DIFFERS = "order_differs"
    LIMIT_DIFFERS = "limit_differs"


_ORDER: Final = {label: position for position, label in enumerate(Diagnosis)}


@dataclass(frozen=True, slots=True)
class Finding:
    """One label with the terms concerned."""

    label: Diagnosis
    expected: tuple[str, ...] = ()
    found: tuple[str, ...] = ()

    def as_record(self) -> dict[str, Any]:
        """``{"label": ..., "expected": [...], "found": [...]}`` (docs/outputs.md)."""
        return {
            "label": self.label.value,
            "expected": _listed(self.expected),
            "found": _listed(self.found),
        }


def _listed(terms: Sequence[str]) -> list[str]:
    shown = [clipped(term) for term in terms[:MAX_TERMS]]
    if len(terms) > MAX_TERMS:
        shown[-1] = f"... and {len(terms) - MAX_TERMS + 1} more"
    return shown


def sparql_parser_available() -> bool:
    """Whether rdflib (the ``sparql`` extra) can be imported: without it there is no
    diagnosis."""
    try:
        import rdflib.plugins.sparql.parser  # noqa: F401
    except ImportError:
        return False
    return True


def execution_findings(error_kind: ExecutionError | None) -> list[Finding]:
    """The labels a step's execution error gives: ``timeout`` and ``update_refused``
    (``syntax_error`` too, when the store's parser refused the query)."""
    labels = {
        ExecutionError.TIMEOUT: Diagnosis.TIMEOUT,
        ExecutionError.UPDATE_REFUSED: Diagnosis.UPDATE_REFUSED,
        ExecutionError.SYNTAX_ERROR: Diagnosis.SYNTAX_ERROR,
    }
    label = labels.get(error_kind) if error_kind is not None else None
    return [Finding(label)] if label is not None else []


def diagnose_queries(
    reference_query: str,
    actual_query: str,
    *,
    ordered: bool = False,
    ignore_duplicates: bool = True,
    error_kind: ExecutionError | None = None,
) -> tuple[list[Finding], QueryShape | None, QueryShape | None] | None:
    """The findings on an actual query against the reference query, and both parsed
    queries (``None`` where one did not parse); ``None`` when there is nothing to say
    truthfully: rdflib is missing, a query is too long, the reference query does not parse
    and the execution gave no label, or a bug (logged: it costs the diagnosis, never the
    item)."""
    try:
        return _diagnose(reference_query, actual_query, ordered, ignore_duplicates, error_kind)
    except (ImportError, RecursionError):  # no rdflib; a query nested too deeply to compare
        return None
    except Exception:
        logger.exception("the query diagnosis failed")
        return None


def _diagnose(
    reference_query: str,
    actual_query: str,
    ordered: bool,
    ignore_duplicates: bool,
    error_kind: ExecutionError | None,
) -> tuple[list[Finding], QueryShape | None, QueryShape | None] | None:
    findings = execution_findings(error_kind)
    said = {finding.label for finding in findings}
    if update_refusal(actual_query) is not None:  # an update: no query to compare
        if Diagnosis.UPDATE_REFUSED not in said:
            findings.append(Finding(Diagnosis.UPDATE_REFUSED))
        return findings, None, None
    try:
        reference_parsed = parse_query(reference_query)
    except ValueError:  # the reference does not parse, or is too long: no comparison
        return (findings, None, None) if findings else None
    try:
        actual_parsed = parse_query(actual_query)
        actual = shape_of(actual_parsed, reference_parsed.declared)
    except QuerySyntaxError as exc:
        if Diagnosis.SYNTAX_ERROR not in said:
            findings.append(Finding(Diagnosis.SYNTAX_ERROR, found=(str(exc),)))
        return findings, None, None
    except ValueError:
        return (findings, None, None) if findings else None
    try:
        reference = shape_of(reference_parsed, actual_parsed.declared)
    except ValueError:
        return (findings, None, actual) if findings else None
    try:
        compared = compare_shapes(
            reference, actual, ordered=ordered, ignore_duplicates=ignore_duplicates
        )
    except TooManyVariables:
        return (findings, reference, actual) if findings else None
    findings.extend(f for f in compared if f.label not in said)
    if not findings and (reference.partial or actual.partial):
        return None  # "no difference" would not be known: a part was not compared
    return findings, reference, actual


def compare_shapes(
    reference: QueryShape,
    actual: QueryShape,
    *,
    ordered: bool = False,
    ignore_duplicates: bool = True,
) -> list[Finding]:
    """The differences of two parsed queries, in the order of :class:`Diagnosis`.
    ``ordered`` and ``ignore_duplicates`` are the reference step's: an ``ORDER BY`` or a
    ``DISTINCT`` that cannot change the comparison is not reported."""
    sides = _Sides(reference, actual, align(reference, actual))
    findings = [*sides.patterns(), *sides.filters(), *sides.projection()]
    sliced = reference.limit is not None or actual.limit is not None
    sliced = sliced or bool(reference.offset or actual.offset)
    if reference.distinct != actual.distinct and (sliced or not ignore_duplicates):
        findings.append(
            Finding(Diagnosis.DISTINCT_DIFFERS, _some(reference.distinct), _some(actual.distinct))
        )
    if (ordered or sliced) and sides.order(reference) != sides.order(actual):
        findings.append(
            Finding(
                Diagnosis.ORDER_DIFFERS,
                tuple(sides.shown_order(reference)),
                tuple(sides.shown_order(actual)),
            )
        )
    if (reference.limit, reference.offset) != (actual.limit, actual.offset):
        findings.append(Finding(Diagnosis.LIMIT_DIFFERS, _slice(reference), _slice(actual)))
    return sorted(findings, key=lambda finding: _ORDER[finding.label])


def _some(text: str) -> tuple[str, ...]:
    return (text,) if text else ()


def _slice(shape: QueryShape) -> tuple[str, ...]:
    parts = [] if shape.limit is None else [f"LIMIT {shape.limit}"]
    return (*parts, f"OFFSET {shape.offset}") if shape.offset else tuple(parts)


class _Sides:
    """The two queries, with the keys that compare their parts (full IRIs, the actual
    query's variables renamed to the reference's) and the texts that show them (each
    query's own prefixes and names)."""

    def __init__(self, reference: QueryShape, actual: QueryShape, mapping: dict[str, str]):
        self.reference, self.actual, self.mapping = reference, actual, mapping

    def key(self, shape: QueryShape, value: Any) -> str:
        if shape is self.reference:
            return render(value, lambda v: f"?{v}", lambda i: f"<{i}>", shape.aggregates)
        return render(value, self._renamed, lambda i: f"<{i}>", shape.aggregates)

    def _renamed(self, variable: Any) -> str:
        name = self.mapping.get(str(variable))
        return f"?{name}" if name is not None else f"?\u00b7{variable}"  # never a reference name

    @staticmethod
    def show(shape: QueryShape, value: Any) -> str:
        return render(value, lambda v: f"?{v}", shape.show_iri, shape.aggregates)

    def element_key(self, shape: QueryShape, element: Element) -> tuple[str, ...]:
        return (element.kind, element.context, *(self.key(shape, t) for t in element.terms))

    def shown_element(self, shape: QueryShape, element: Element) -> str:
        terms = [self.show(shape, term) for term in element.terms]
        if element.kind == "bind":
            text = f"BIND({terms[1]} AS {terms[0]})"
        elif element.kind == "values":
            text = f"VALUES ({terms[0]}) {{ {' '.join(f'({t})' for t in terms[1:])} }}"
        elif element.kind == "service":
            text = f"SERVICE {terms[0]} {terms[1]}"
        elif element.kind == "dataset":
            text = f"{element.terms[0]} {terms[1]}"
        elif element.kind == "filter":
            text = f"FILTER({terms[0]})" if not terms[0].startswith("(") else f"FILTER{terms[0]}"
        else:
            text = " ".join(terms)
        return f"{element.context} {{ {text} }}" if element.context else text

    def _differences(
        self, elements: tuple[list[Element], list[Element]]
    ) -> tuple[list[Element], list[Element]]:
        """The reference's elements the actual query lacks, and its extra ones."""
        ref_keys = _Multiset(self.element_key(self.reference, e) for e in elements[0])
        act_keys = _Multiset(self.element_key(self.actual, e) for e in elements[1])
        missing = [e for e in elements[0] if act_keys.take(self.element_key(self.reference, e))]
        extra = [e for e in elements[1] if ref_keys.take(self.element_key(self.actual, e))]
        return missing, extra

    def patterns(self) -> list[Finding]:
        missing, extra = self._differences((self.reference.patterns, self.actual.patterns))
        expected, found = [], []
        for ref in list(missing):
            act = next((a for a in extra if self._same_but_predicate(ref, a)), None)
            if act is not None:
                missing.remove(ref)
                extra.remove(act)
                expected.append(self.show(self.reference, ref.terms[1]))
                found.append(self.show(self.actual, act.terms[1]))
        findings = []
        if expected:
            findings.append(Finding(Diagnosis.WRONG_PREDICATE, tuple(expected), tuple(found)))
        pair = (Diagnosis.MISSING_PATTERN, Diagnosis.EXTRA_PATTERN)
        return findings + self._missing_and_extra(missing, extra, pair)

    def _missing_and_extra(
        self, missing: list[Element], extra: list[Element], labels: tuple[Diagnosis, Diagnosis]
    ) -> list[Finding]:
        """The findings of the reference's elements the actual query lacks (``labels[0]``)
        and of its extra ones (``labels[1]``)."""
        findings = []
        if missing:
            shown = tuple(self.shown_element(self.reference, e) for e in missing)
            findings.append(Finding(labels[0], expected=shown))
        if extra:
            shown = tuple(self.shown_element(self.actual, e) for e in extra)
            findings.append(Finding(labels[1], found=shown))
        return findings

    def _same_but_predicate(self, ref: Element, act: Element) -> bool:
        if ref.kind != "triple" or act.kind != "triple" or ref.context != act.context:
            return False
        r = [self.key(self.reference, t) for t in ref.terms]
        a = [self.key(self.actual, t) for t in act.terms]
        return r[0] == a[0] and r[2] == a[2] and r[1] != a[1]

    def filters(self) -> list[Finding]:
        missing, extra = self._differences((self.reference.filters, self.actual.filters))
        pair = (Diagnosis.MISSING_FILTER, Diagnosis.EXTRA_FILTER)
        return self._missing_and_extra(missing, extra, pair)

    def _projected(self, shape: QueryShape) -> list[tuple[str, str]]:
        """Each projected column as (key, text)."""
        items = []
        for variable, expression in shape.projection:
            if expression is None:
                items.append((self.key(shape, variable), self.show(shape, variable)))
            else:
                text = f"({self.show(shape, expression)} AS {self.show(shape, variable)})"
                items.append((self.key(shape, expression), text))
        return items

    def projection(self) -> list[Finding]:
        """A reference column the actual query does not project (extra actual columns do
        not change the comparison), or another query form."""
        if self.reference.form != self.actual.form:
            form = (self.reference.form,), (self.actual.form,)
            return [Finding(Diagnosis.PROJECTION_DIFFERS, *form)]
        if self.reference.form != "SELECT":
            return []
        ref, act = self._projected(self.reference), self._projected(self.actual)
        act_keys = {key for key, _ in act}
        missing = [text for key, text in ref if key not in act_keys]
        if not missing:
            return []
        ref_keys = {key for key, _ in ref}
        other = [text for key, text in act if key not in ref_keys]
        return [Finding(Diagnosis.PROJECTION_DIFFERS, tuple(missing), tuple(other))]

    def order(self, shape: QueryShape) -> list[str]:
        return [f"{direction}({self.key(shape, e)})" for e, direction in shape.order]

    def shown_order(self, shape: QueryShape) -> Iterable[str]:
        for expression, direction in shape.order:
            text = self.show(shape, expression)
            yield text if direction == "ASC" else f"DESC({text})"


class _Multiset:
    """A multiset of keys that hands each key out once per copy it holds."""

    def __init__(self, keys: Iterable[tuple[str, ...]]) -> None:
        self.counts: dict[tuple[str, ...], int] = {}
        for key in keys:
            self.counts[key] = self.counts.get(key, 0) + 1

    def take(self, key: tuple[str, ...]) -> bool:
        """Whether ``key`` is not (any more) in the multiset; takes one copy when it is."""
        count = self.counts.get(key, 0)
        if count:
            self.counts[key] = count - 1
            return False
        return True
