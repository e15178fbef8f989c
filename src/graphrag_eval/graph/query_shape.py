"""A SPARQL query parsed by a real SPARQL 1.1 parser (rdflib's, the ``sparql`` extra) and
reduced to what the query diagnosis compares (docs/knowledge-graph.md, "Why a query is wrong:
``query_diagnosis``"): its form, its triple patterns and other pattern elements (each with
where it sits: ``OPTIONAL``, ``UNION``, ``MINUS``, ``GRAPH``, a subquery), its filter
conjuncts, its projection, ``DISTINCT``, ``ORDER BY``, ``LIMIT`` and ``OFFSET``, and its
IRIs; prefixes are expanded by the parser. rdflib is imported only when a query is parsed.

Terms and expressions are written by :func:`~graphrag_eval.graph.query_render.render`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from graphrag_eval.graph.deep_calls import deep_call
from graphrag_eval.graph.query_render import iris_in, name_of, variables_in

__all__ = [
    "MAX_QUERY_CHARACTERS",
    "UNDECLARED",
    "Element",
    "ParsedQuery",
    "QueryShape",
    "QuerySyntaxError",
    "parse_query",
    "parse_shape",
    "shape_of",
]

MAX_QUERY_CHARACTERS: Final = 3_000
"""A longer query is not parsed (the diagnosis is left out for its pair)."""
_NESTED: Final = 32
_PARTIAL: Final = frozenset({"Builtin_EXISTS", "Builtin_NOTEXISTS", "ServiceGraphPattern"})
_MODIFIERS = {"Slice", "Distinct", "Reduced", "Project", "OrderBy", "Extend", "AggregateJoin"}


class QuerySyntaxError(ValueError):
    """The query does not parse (or names a prefix it does not declare)."""


@dataclass(frozen=True, slots=True)
class Element:
    """One element of a query's pattern: a triple pattern (``kind`` ``triple``, ``terms``
    subject, predicate, object), a ``BIND`` (the variable and the expression), a ``VALUES``
    block (the variables, then each row's terms) or a ``FILTER`` conjunct (the
    expression), with where it sits (``context``: ``OPTIONAL``, ``UNION``, ...)."""

    kind: str
    terms: tuple[Any, ...]
    context: str = ""


@dataclass(slots=True)
class QueryShape:
    """What the diagnosis compares of one query."""

    form: str
    """``SELECT``, ``ASK``, ``CONSTRUCT`` or ``DESCRIBE``."""
    partial: bool = False
    """Some of it is not compared (:attr:`ParsedQuery.partial`)."""
    patterns: list[Element] = field(default_factory=list)
    filters: list[Element] = field(default_factory=list)
    projection: list[tuple[Any, Any]] = field(default_factory=list)
    """Each projected variable, with the expression bound to it (``None`` for a plain
    variable)."""
    distinct: str = ""
    """``DISTINCT``, ``REDUCED`` or empty."""
    order: list[tuple[Any, str]] = field(default_factory=list)
    """Each ``ORDER BY`` condition: the expression and ``ASC`` or ``DESC``."""
    limit: int | None = None
    offset: int = 0
    aggregates: dict[str, Any] = field(default_factory=dict)
    """rdflib's aggregate results (``__agg_1__``) by name, to write them as their aggregate."""
    prefixes: list[tuple[str, str]] = field(default_factory=list)
    """``(namespace, prefix)``, the longest namespace first: how IRIs are shown."""

    def variables(self) -> list[str]:
        """The names of the variables (and blank nodes) of the patterns and filters, in order
        of appearance."""
        names: dict[str, None] = {}
        for element in (*self.patterns, *self.filters):
            for term in element.terms:
                names.update(dict.fromkeys(variables_in(term)))
        for name, expression in self.projection:
            names.update(dict.fromkeys(variables_in(name)))
            names.update(dict.fromkeys(variables_in(expression)))
        return [name for name in names if not name.startswith("__agg_")]

    def iris(self) -> list[str]:
        """The IRIs the patterns and filters name (not functions, datatypes or a
        ``SERVICE``'s endpoint, nor those of an undeclared prefix, which are not known), in
        order."""
        found: dict[str, None] = {}
        for element in (*self.patterns, *self.filters):
            # A SERVICE's endpoint is no IRI of the graph.
            for term in element.terms[1:] if element.kind == "service" else element.terms:
                found.update(dict.fromkeys(iris_in(term)))
        return [iri for iri in found if not iri.startswith(UNDECLARED)]

    def show_iri(self, iri: Any) -> str:
        text = str(iri)
        for namespace, prefix in self.prefixes:
            local = text[len(namespace) :]
            if (
                text.startswith(namespace)
                and local
                and all(c.isalnum() or c in "_-." for c in local)
            ):
                return f"{prefix}:{local}"
        return f"<{text}>"


UNDECLARED: Final = "urn:graphrag-eval:undeclared-prefix:"
"""The namespace a prefix that the query uses without declaring it stands for
(``UNDECLARED + "cim:"``), when the other query does not declare it either: stores such as
GraphDB declare prefixes of their own, so such a query is no syntax error."""


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """A query parsed, before its prefixed names are expanded."""

    tree: Any
    declared: dict[str, str]
    """The prefixes the query declares."""
    used: frozenset[str]
    """The prefixes its prefixed names use."""
    partial: bool = False
    """It has a part whose inner filters rdflib's algebra does not keep (``EXISTS``,
    ``NOT EXISTS``, ``SERVICE``)."""


def parse_query(query: str) -> ParsedQuery:
    """Parse ``query`` by the SPARQL 1.1 grammar (raises :class:`QuerySyntaxError`; a query
    longer than :data:`MAX_QUERY_CHARACTERS` or nested too deeply is a ``ValueError``;
    ``ImportError`` without rdflib)."""
    if len(query) > MAX_QUERY_CHARACTERS:
        raise ValueError(f"query longer than {MAX_QUERY_CHARACTERS:,} characters")
    from rdflib.plugins.sparql.parser import parseQuery

    try:
        tree = deep_call(lambda: parseQuery(query))
    except RecursionError:
        raise ValueError("query nested too deeply") from None
    except Exception as exc:  # pyparsing's errors
        raise QuerySyntaxError(" ".join(str(exc).split())) from None
    declared: dict[str, str] = {}
    used: set[str] = set()
    partial = False
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        name = getattr(node, "name", None)
        partial = partial or name in _PARTIAL
        if name == "PrefixDecl":
            declared[str(node.get("prefix") or "")] = str(node["iri"])
        elif name == "pname":
            used.add(str(node.get("prefix") or ""))
        if type(node).__name__ == "ParseResults" or isinstance(node, list | tuple):
            stack.extend(node)  # (pyparsing registers its results as a Mapping too)
        elif isinstance(node, Mapping):
            stack.extend(node.values())
    return ParsedQuery(tree, declared, frozenset(used), partial)


def shape_of(parsed: ParsedQuery, namespaces: Mapping[str, str] | None = None) -> QueryShape:
    """The shape of a parsed query, its undeclared prefixes expanded by ``namespaces`` (the
    other query's declarations), else by rdflib's own, else to :data:`UNDECLARED`."""
    from rdflib.plugins.sparql.algebra import translateQuery

    init = dict(namespaces or {})
    known = {prefix for prefix, _ in _default_namespaces()}
    for prefix in parsed.used - parsed.declared.keys() - init.keys() - known:
        init[prefix] = f"{UNDECLARED}{prefix}:"
    try:
        translated = deep_call(lambda: translateQuery(parsed.tree, initNs=init))
    except RecursionError:
        raise ValueError("query nested too deeply") from None
    except Exception as exc:  # rdflib's plain errors (a variable projected but not grouped)
        raise QuerySyntaxError(" ".join(str(exc).split())) from None
    top = translated.algebra
    shape = QueryShape(form=top.name.removesuffix("Query").upper(), partial=parsed.partial)
    namespaces_ = translated.prologue.namespace_manager.namespaces()
    shape.prefixes = sorted(((str(ns), p) for p, ns in namespaces_ if p), key=lambda x: -len(x[0]))
    for clause in top.get("datasetClause") or ():
        named = "named" in clause  # (CompValue.get gives the key for a missing one)
        keyword, graph = ("FROM NAMED", clause["named"]) if named else ("FROM", clause["default"])
        shape.patterns.append(Element("dataset", (keyword, graph)))
    _read_modifiers(shape, top.p)
    if top.name == "SelectQuery" and "projection" not in parsed.tree[1]:
        # SELECT *: rdflib projects its set of variables, in no fixed order.
        shape.projection.sort(key=lambda item: str(item[0]))
    return shape


def parse_shape(query: str, namespaces: Mapping[str, str] | None = None) -> QueryShape:
    """:func:`parse_query` and :func:`shape_of` at once."""
    return shape_of(parse_query(query), namespaces)


@functools.cache
def _default_namespaces() -> tuple[tuple[str, str], ...]:
    """The prefixes rdflib declares by itself (``rdf``, ``rdfs``, ``xsd``, ``owl``, ...)."""
    from rdflib import Graph

    return tuple((p, str(ns)) for p, ns in Graph().namespace_manager.namespaces())


def _read_modifiers(shape: QueryShape, node: Any, bound: dict[str, Any] | None = None) -> None:
    """The solution modifiers above the pattern (``bound``: the expressions bound to
    variables above a ``HAVING``), then the pattern."""
    bound = {} if bound is None else bound
    while name_of(node) in _MODIFIERS:
        name = node.name
        if name == "Slice":
            shape.limit, shape.offset = node.get("length"), node.get("start") or 0
        elif name in ("Distinct", "Reduced"):
            shape.distinct = name.upper()
        elif name == "Project":
            shape.projection = [(variable, None) for variable in node.get("PV") or ()]
        elif name == "OrderBy":
            shape.order = [_order_condition(c) for c in node.get("expr") or ()]
        elif name == "Extend":
            bound[str(node["var"])] = node["expr"]
        else:  # AggregateJoin
            for aggregate in node.get("A") or ():
                shape.aggregates[str(aggregate["res"])] = aggregate
        node = node.get("p")
    if name_of(node) == "Filter" and name_of(node.get("p")) in _MODIFIERS:  # HAVING
        shape.filters.extend(Element("filter", (c,), "HAVING") for c in _conjuncts(node["expr"]))
        _read_modifiers(shape, node["p"], bound)
        return
    shape.projection = [(v, _bound_expression(shape, bound, v)) for v, _ in shape.projection]
    if name_of(node) == "Group":
        node = node.get("p")
    _read_pattern(shape, node, "")


def _bound_expression(shape: QueryShape, bound: Mapping[str, Any], variable: Any) -> Any:
    """The expression bound to a projected variable; ``None`` for a plain one (also a
    grouped variable, which rdflib binds to its own ``SAMPLE``)."""
    expression = bound.get(str(variable))
    aggregate = shape.aggregates.get(str(expression)) if expression is not None else None
    if aggregate is None or name_of(aggregate) != "Aggregate_Sample":
        return expression
    if str(aggregate["vars"]) == str(variable):
        return None
    return expression


def _order_condition(condition: Any) -> tuple[Any, str]:
    if name_of(condition) == "OrderCondition":
        return condition["expr"], str(condition.get("order") or "ASC")
    return condition, "ASC"


def _read_pattern(shape: QueryShape, node: Any, context: str) -> None:
    name = name_of(node)
    if name == "BGP":
        triples = [_bnodes_as_variables(triple) for triple in node.get("triples") or ()]
        shape.patterns.extend(Element("triple", triple, context) for triple in triples)
    elif name == "Filter":
        shape.filters.extend(Element("filter", (c,), context) for c in _conjuncts(node["expr"]))
        _read_pattern(shape, node.get("p"), context)
    elif name in ("Join", "Union", "Minus", "LeftJoin"):
        inner = {"Union": "UNION", "Minus": "MINUS", "LeftJoin": "OPTIONAL"}.get(name, "")
        first = _within(context, "UNION") if name == "Union" else context
        _read_pattern(shape, node.get("p1"), first)
        _read_pattern(shape, node.get("p2"), _within(context, inner))
        expression = node.get("expr")
        if name == "LeftJoin" and name_of(expression) not in ("TrueFilter", ""):
            within = _within(context, "OPTIONAL")
            shape.filters.extend(Element("filter", (c,), within) for c in _conjuncts(expression))
    elif name == "Extend":
        _read_pattern(shape, node.get("p"), context)
        shape.patterns.append(Element("bind", (node["var"], node["expr"]), context))
    elif name == "Graph":  # a graph variable's name is not compared (it is not renamed)
        term = node["term"]
        graph = "?" if type(term).__name__ == "Variable" else term.n3()
        _read_pattern(shape, node.get("p"), _within(context, f"GRAPH {graph}"))
    elif name == "ToMultiSet":
        _read_pattern(shape, node.get("p"), context)
    elif name == "values":
        _values(shape, node.get("res") or (), context)
    elif name == "ServiceGraphPattern":  # left as parsed by rdflib: compared whole
        shape.patterns.append(Element("service", (node["term"], node.get("graph")), context))
    elif name in _MODIFIERS or name == "Group":  # a subquery: its patterns, marked
        _read_pattern(shape, node.get("p"), _within(context, "subquery"))
    elif name:
        for key in ("p", "p1", "p2"):  # SERVICE and the like: their patterns
            if key in node:
                _read_pattern(shape, node[key], _within(context, name))


def _values(shape: QueryShape, rows: Any, context: str) -> None:
    names = sorted({str(variable) for row in rows for variable in row})
    variables = {str(variable): variable for row in rows for variable in row}
    terms: list[Any] = [tuple(variables[n] for n in names)]
    terms.extend(tuple(row.get(variables[n]) for n in names) for row in rows)
    shape.patterns.append(Element("values", tuple(terms), context))


def _within(context: str, inner: str) -> str:
    if not inner:
        return context
    return f"{context} {inner}" if context else inner


def _conjuncts(expression: Any, depth: int = 0) -> Iterator[Any]:
    """``A && B && C`` as ``A``, ``B``, ``C`` (rdflib also joins a group's filters so);
    below 32 levels of nesting, the rest as one."""
    if name_of(expression) == "ConditionalAndExpression" and depth < _NESTED:
        yield from _conjuncts(expression["expr"], depth + 1)
        for other in expression.get("other") or ():
            yield from _conjuncts(other, depth + 1)
    else:
        yield expression


def _bnodes_as_variables(triple: Any) -> tuple[Any, ...]:
    from rdflib.term import BNode, Variable

    return tuple(Variable(f"_:{t}") if isinstance(t, BNode) else t for t in triple)
