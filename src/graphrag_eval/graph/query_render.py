"""SPARQL terms, property paths and expressions of rdflib's algebra written as SPARQL-like
text, for the query diagnosis to compare and to show them (docs/knowledge-graph.md, "Why a
query is wrong: ``query_diagnosis``"); and the variables and IRIs they hold. rdflib is
imported only when a term is written."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

__all__ = ["Aggregates", "Namer", "clipped", "iris_in", "name_of", "render", "variables_in"]

_RENDER_DEPTH: Final = 32
_SHOWN: Final = 200  # characters of a term as shown

_XSD = "http://www.w3.org/2001/XMLSchema#"
_PLAIN_NUMBERS = {_XSD + "integer", _XSD + "decimal", _XSD + "double", _XSD + "boolean"}

Namer = Callable[[Any], str]
"""How :func:`render` writes a variable (or a blank node of the query) or an IRI."""
Aggregates = Mapping[str, Any]
"""rdflib's aggregate results (``__agg_1__``) by name, written as their aggregate."""


def name_of(node: Any) -> str:
    """The name of an algebra node (``BGP``, ``Filter``, ...), empty for anything else."""
    name = getattr(node, "name", None)
    return name if isinstance(name, str) and isinstance(node, Mapping) else ""


def variables_in(term: Any) -> Iterator[str]:
    """The names of the variables in a term, a path or an expression."""
    from rdflib.term import Variable

    return (str(variable) for variable in _found(term, Variable))


def iris_in(term: Any) -> Iterator[str]:
    """The IRIs in a term, a path or an expression (a function's name is none)."""
    from rdflib.term import URIRef

    return (str(iri) for iri in _found(term, URIRef, skipped=("iri",), paths=True))


def _found(
    term: Any, kind: type, skipped: tuple[str, ...] = (), paths: bool = False, depth: int = 0
) -> Iterator[Any]:
    """The ``kind`` terms in ``term``, walked through mappings (but their private keys and
    ``skipped``), lists and, with ``paths``, property paths; at most so deep."""
    from rdflib.paths import Path

    if depth > _RENDER_DEPTH:
        return
    if isinstance(term, kind):
        yield term
    elif paths and isinstance(term, Path):
        for part in _path_parts(term):
            yield from _found(part, kind, skipped, paths, depth + 1)
    elif isinstance(term, Mapping):
        for key, value in term.items():
            if not str(key).startswith("_") and key not in skipped:
                yield from _found(value, kind, skipped, paths, depth + 1)
    elif isinstance(term, list | tuple):
        for item in term:
            yield from _found(item, kind, skipped, paths, depth + 1)


def _path_parts(path: Any) -> list[Any]:
    for attribute in ("args", "path", "arg"):
        value = getattr(path, attribute, None)
        if value is not None:
            return list(value) if isinstance(value, list | tuple) else [value]
    return []


def render(term: Any, variable: Namer, iri: Namer, aggregates: Aggregates, depth: int = 0) -> str:
    """A term, a path or an expression as SPARQL-like text, variables and IRIs written by
    ``variable`` and ``iri``; rdflib's aggregate variables as their aggregate."""
    from rdflib.paths import Path
    from rdflib.term import Literal, URIRef, Variable

    if depth > _RENDER_DEPTH:
        return "..."
    if isinstance(term, Variable):
        aggregate = aggregates.get(str(term))
        if aggregate is not None:
            return render(aggregate, variable, iri, aggregates, depth + 1)
        return variable(term)
    if isinstance(term, URIRef):
        return iri(term)
    if isinstance(term, Literal):
        return _literal(term, iri)
    if isinstance(term, Path):
        return _path(term, variable, iri, aggregates, depth)
    if isinstance(term, Mapping):
        return _expression(term, variable, iri, aggregates, depth)
    if isinstance(term, list | tuple):
        return ", ".join(render(t, variable, iri, aggregates, depth + 1) for t in term)
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


def _path(path: Any, variable: Namer, iri: Namer, aggregates: Aggregates, depth: int) -> str:
    kind = type(path).__name__
    parts = [render(p, variable, iri, aggregates, depth + 1) for p in _path_parts(path)]
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


def _expression(node: Any, variable: Namer, iri: Namer, aggregates: Aggregates, depth: int) -> str:
    def r(value: Any) -> str:
        return render(value, variable, iri, aggregates, depth + 1)

    name = name_of(node)
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
    if name in _UNTRANSLATED:
        return _untranslated(node, name, r)
    arguments = [r(v) for k, v in node.items() if not str(k).startswith("_") and v is not None]
    return f"{name.removeprefix('Builtin_')}({', '.join(arguments)})"


_UNTRANSLATED = {"Builtin_EXISTS", "Builtin_NOTEXISTS", "GroupGraphPatternSub", "TriplesBlock"}
"""The parts of a graph pattern rdflib leaves as parsed (inside ``EXISTS`` and ``SERVICE``)."""


def _untranslated(node: Any, name: str, r: Callable[[Any], str]) -> str:
    if name == "Builtin_EXISTS":
        return f"EXISTS {r(node.get('graph'))}"
    if name == "Builtin_NOTEXISTS":
        return f"NOT EXISTS {r(node.get('graph'))}"
    if name == "GroupGraphPatternSub":
        parts = node.get("part") or ()
        return "{ " + " ".join(_part(part, r) for part in parts) + " }"
    terms = list(_flat(node.get("triples") or ()))
    triples = [terms[n : n + 3] for n in range(0, len(terms), 3)]
    return " . ".join(" ".join(r(term) for term in triple) for triple in triples)


def _part(part: Any, r: Callable[[Any], str]) -> str:
    if name_of(part) == "Filter":
        return f"FILTER({r(part.get('expr'))})"
    return r(part)


def _flat(items: Any, depth: int = 0) -> Iterator[Any]:
    for item in items:
        if isinstance(item, list | tuple) and depth < _RENDER_DEPTH:
            yield from _flat(item, depth + 1)
        else:
            yield item


def clipped(text: str) -> str:
    """A term as shown: at most 200 characters."""
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."
