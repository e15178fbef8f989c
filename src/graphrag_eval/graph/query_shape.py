"""A SPARQL query parsed by a real SPARQL 1.1 parser (rdflib's, the ``sparql`` extra) and
reduced to what the query diagnosis compares (docs/knowledge-graph.md, "Why a query is wrong:
``query_diagnosis``"): its form, its triple patterns and other pattern elements (each with
where it sits: ``OPTIONAL``, ``UNION``, ``MINUS``, ``GRAPH``, a subquery), its filter
conjuncts, its projection, ``DISTINCT``, ``ORDER BY``, ``LIMIT`` and ``OFFSET``, and its
IRIs; prefixes are expanded by the parser. rdflib is imported only when a query is parsed.

Terms and expressions are written by :func:`render`, which names variables and IRIs through
the functions it is given: full IRIs and renamed variables to compare, the query's own
prefixes and names to show.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "MAX_QUERY_CHARACTERS",
    "UNDECLARED",
    "Element",
    "ParsedQuery",
    "QueryShape",
    "QuerySyntaxError",
    "parse_query",
    "parse_shape",
    "render",
    "shape_of",
]

MAX_QUERY_CHARACTERS: Final = 3_000
"""A longer query is not parsed (the diagnosis is left out for its pair)."""
_RENDER_DEPTH: Final = 32
_SHOWN: Final = 200  # characters of a term as shown

_XSD = "http://www.w3.org/2001/XMLSchema#"
_PLAIN_NUMBERS = {_XSD + "integer", _XSD + "decimal", _XSD + "double", _XSD + "boolean"}
_MODIFIERS = {"Slice", "Distinct", "Reduced", "Project", "OrderBy", "Extend", "AggregateJoin"}


class QuerySyntaxError(ValueError):
    """The query does not parse (or names a prefix it does not declare)."""


Namer = Callable[[Any], str]
"""How :func:`render` writes a variable (or a blank node of the query) or an IRI."""


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
        """The IRIs the patterns and filters name (not functions or datatypes, nor those of
        an undeclared prefix, which are not known), in order."""
        found: dict[str, None] = {}
        for element in (*self.patterns, *self.filters):
            for term in element.terms:
                found.update(dict.fromkeys(_iris_in(term)))
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


def parse_query(query: str) -> ParsedQuery:
    """Parse ``query`` by the SPARQL 1.1 grammar (raises :class:`QuerySyntaxError`; a query
    longer than :data:`MAX_QUERY_CHARACTERS` or nested too deeply is a ``ValueError``;
    ``ImportError`` without rdflib)."""
    if len(query) > MAX_QUERY_CHARACTERS:
        raise ValueError(f"query longer than {MAX_QUERY_CHARACTERS:,} characters")
    from rdflib.plugins.sparql.parser import parseQuery

    try:
        tree = parseQuery(query)
    except RecursionError:
        raise ValueError("query nested too deeply") from None
    except Exception as exc:  # pyparsing's errors
        raise QuerySyntaxError(" ".join(str(exc).split())) from None
    declared: dict[str, str] = {}
    used: set[str] = set()
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        name = getattr(node, "name", None)
        if name == "PrefixDecl":
            declared[str(node.get("prefix") or "")] = str(node["iri"])
        elif name == "pname":
            used.add(str(node.get("prefix") or ""))
        if type(node).__name__ == "ParseResults" or isinstance(node, list | tuple):
            stack.extend(node)  # (pyparsing registers its results as a Mapping too)
        elif isinstance(node, Mapping):
            stack.extend(node.values())
    return ParsedQuery(tree, declared, frozenset(used))


def shape_of(parsed: ParsedQuery, namespaces: Mapping[str, str] | None = None) -> QueryShape:
    """The shape of a parsed query, its undeclared prefixes expanded by ``namespaces`` (the
    other query's declarations), else by rdflib's own, else to :data:`UNDECLARED`."""
    from rdflib.plugins.sparql.algebra import translateQuery

    init = dict(namespaces or {})
    known = {prefix for prefix, _ in _default_namespaces()}
    for prefix in parsed.used - parsed.declared.keys() - init.keys() - known:
        init[prefix] = f"{UNDECLARED}{prefix}:"
    try:
        translated = translateQuery(parsed.tree, initNs=init)
    except RecursionError:
        raise ValueError("query nested too deeply") from None
    except Exception as exc:  # rdflib's plain errors (a variable projected but not grouped)
        raise QuerySyntaxError(" ".join(str(exc).split())) from None
    top = translated.algebra
    shape = QueryShape(form=top.name.removesuffix("Query").upper())
    namespaces_ = translated.prologue.namespace_manager.namespaces()
    shape.prefixes = sorted(((str(ns), p) for p, ns in namespaces_ if p), key=lambda x: -len(x[0]))
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
    while _name(node) in _MODIFIERS:
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
    if _name(node) == "Filter" and _name(node.get("p")) in _MODIFIERS:  # HAVING
        shape.filters.extend(Element("filter", (c,), "HAVING") for c in _conjuncts(node["expr"]))
        _read_modifiers(shape, node["p"], bound)
        return
    shape.projection = [(v, _bound_expression(shape, bound, v)) for v, _ in shape.projection]
    if _name(node) == "Group":
        node = node.get("p")
    _read_pattern(shape, node, "")


def _bound_expression(shape: QueryShape, bound: Mapping[str, Any], variable: Any) -> Any:
    """The expression bound to a projected variable; ``None`` for a plain one (also a
    grouped variable, which rdflib binds to its own ``SAMPLE``)."""
    expression = bound.get(str(variable))
    aggregate = shape.aggregates.get(str(expression)) if expression is not None else None
    if aggregate is None or _name(aggregate) != "Aggregate_Sample":
        return expression
    if str(aggregate["vars"]) == str(variable):
        return None
    return expression


def _order_condition(condition: Any) -> tuple[Any, str]:
    if _name(condition) == "OrderCondition":
        return condition["expr"], str(condition.get("order") or "ASC")
    return condition, "ASC"


def _read_pattern(shape: QueryShape, node: Any, context: str) -> None:
    name = _name(node)
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
        if name == "LeftJoin" and _name(expression) not in ("TrueFilter", ""):
            within = _within(context, "OPTIONAL")
            shape.filters.extend(Element("filter", (c,), within) for c in _conjuncts(expression))
    elif name == "Extend":
        _read_pattern(shape, node.get("p"), context)
        shape.patterns.append(Element("bind", (node["var"], node["expr"]), context))
    elif name == "Graph":
        _read_pattern(shape, node.get("p"), _within(context, f"GRAPH {node['term'].n3()}"))
    elif name == "ToMultiSet":
        _read_pattern(shape, node.get("p"), context)
    elif name == "values":
        _values(shape, node.get("res") or (), context)
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


def _name(node: Any) -> str:
    name = getattr(node, "name", None)
    return name if isinstance(name, str) and isinstance(node, Mapping) else ""


def _conjuncts(expression: Any) -> Iterator[Any]:
    """``A && B && C`` as ``A``, ``B``, ``C`` (rdflib also joins a group's filters so)."""
    if _name(expression) == "ConditionalAndExpression":
        yield from _conjuncts(expression["expr"])
        for other in expression.get("other") or ():
            yield from _conjuncts(other)
    else:
        yield expression


def _bnodes_as_variables(triple: Any) -> tuple[Any, ...]:
    from rdflib.term import BNode, Variable

    return tuple(Variable(f"_:{t}") if isinstance(t, BNode) else t for t in triple)


def variables_in(term: Any, depth: int = 0) -> Iterator[str]:
    """The names of the variables in a term, a path or an expression."""
    from rdflib.term import Variable

    if depth > _RENDER_DEPTH:
        return
    if isinstance(term, Variable):
        yield str(term)
    elif isinstance(term, Mapping):
        for key, value in term.items():
            if not str(key).startswith("_"):
                yield from variables_in(value, depth + 1)
    elif isinstance(term, list | tuple):
        for item in term:
            yield from variables_in(item, depth + 1)


def _iris_in(term: Any, depth: int = 0) -> Iterator[str]:
    from rdflib.paths import Path
    from rdflib.term import URIRef

    if depth > _RENDER_DEPTH:
        return
    if isinstance(term, URIRef):
        yield str(term)
    elif isinstance(term, Path):
        for part in _path_parts(term):
            yield from _iris_in(part, depth + 1)
    elif isinstance(term, Mapping):
        for key, value in term.items():
            if not str(key).startswith("_") and key != "iri":  # a function's name: no IRI
                yield from _iris_in(value, depth + 1)
    elif isinstance(term, list | tuple):
        for item in term:
            yield from _iris_in(item, depth + 1)


def _path_parts(path: Any) -> list[Any]:
    for attribute in ("args", "path", "arg"):
        value = getattr(path, attribute, None)
        if value is not None:
            return list(value) if isinstance(value, list | tuple) else [value]
    return []


def render(term: Any, variable: Namer, iri: Namer, shape: QueryShape, depth: int = 0) -> str:
    """A term, a path or an expression as SPARQL-like text, variables and IRIs written by
    ``variable`` and ``iri``; rdflib's aggregate variables as their aggregate."""
    from rdflib.paths import Path
    from rdflib.term import Literal, URIRef, Variable

    if depth > _RENDER_DEPTH:
        return "..."
    if isinstance(term, Variable):
        aggregate = shape.aggregates.get(str(term))
        if aggregate is not None:
            return render(aggregate, variable, iri, shape, depth + 1)
        return variable(term)
    if isinstance(term, URIRef):
        return iri(term)
    if isinstance(term, Literal):
        return _literal(term, iri)
    if isinstance(term, Path):
        return _path(term, variable, iri, shape, depth)
    if isinstance(term, Mapping):
        return _expression(term, variable, iri, shape, depth)
    if isinstance(term, list | tuple):
        return ", ".join(render(t, variable, iri, shape, depth + 1) for t in term)
    return "UNDEF" if term is None else str(term)


def _literal(term: Any, iri: Namer) -> str:
    lexical = str(term)
    datatype = str(term.datatype) if term.datatype is not None else None
    if datatype in _PLAIN_NUMBERS:
        return lexical
    quoted = '"' + lexical.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if term.language:
        return f"{quoted}@{term.language}"
    if datatype is not None and datatype != _XSD + "string":
        return f"{quoted}^^{iri(term.datatype)}"
    return quoted


def _path(path: Any, variable: Namer, iri: Namer, shape: QueryShape, depth: int) -> str:
    kind = type(path).__name__
    parts = [render(p, variable, iri, shape, depth + 1) for p in _path_parts(path)]
    if kind == "InvPath":
        return f"^{parts[0]}"
    if kind == "MulPath":
        return f"{parts[0]}{getattr(path, 'mod', '')}"
    if kind == "NegatedPath":
        return f"!({'|'.join(parts)})"
    return ("/" if kind == "SequencePath" else "|").join(f"({p})" if " " in p else p for p in parts)


_INFIX = {
    "ConditionalOrExpression": "||",
    "ConditionalAndExpression": "&&",
}
_ARITHMETIC = ("AdditiveExpression", "MultiplicativeExpression")


def _expression(node: Any, variable: Namer, iri: Namer, shape: QueryShape, depth: int) -> str:
    def r(value: Any) -> str:
        return render(value, variable, iri, shape, depth + 1)

    name = _name(node)
    if name in _INFIX:
        parts = [node["expr"], *(node.get("other") or ())]
        return f"({f' {_INFIX[name]} '.join(r(p) for p in parts)})"
    if name in _ARITHMETIC:
        text = r(node["expr"])
        for op, other in zip(node.get("op") or (), node.get("other") or (), strict=False):
            text += f" {op} {r(other)}"
        return f"({text})"
    if name == "RelationalExpression":
        other = node.get("other")
        right = f"({r(other)})" if node["op"] in ("IN", "NOT IN") else r(other)
        return f"{r(node['expr'])} {node['op']} {right}"
    if name.startswith("Unary"):
        sign = {"UnaryNot": "!", "UnaryMinus": "-", "UnaryPlus": "+"}.get(name, "")
        return f"{sign}{r(node['expr'])}"
    if name == "Function":
        return f"{iri(node['iri'])}({r(node.get('expr') or [])})"
    if name.startswith("Aggregate_"):
        distinct = "DISTINCT " if node.get("distinct") else ""
        vars_ = node.get("vars")
        inner = "*" if vars_ in (None, "*") else r(vars_)
        return f"{name.removeprefix('Aggregate_').upper()}({distinct}{inner})"
    arguments = [r(v) for k, v in node.items() if not str(k).startswith("_") and v is not None]
    return f"{name.removeprefix('Builtin_')}({', '.join(arguments)})"


def clipped(text: str) -> str:
    """A term as shown: at most 200 characters."""
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."
