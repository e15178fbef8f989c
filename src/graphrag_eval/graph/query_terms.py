"""The classes and predicates a SPARQL query uses, read with a real SPARQL parser (rdflib's, in
the ``sparql`` extra): what test-suite accuracy perturbs (docs/knowledge-graph.md,
"Test-suite accuracy")."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from graphrag_eval.errors import ConfigError
from graphrag_eval.graph.deep_calls import deep_call

__all__ = ["RDF_TYPE", "QueryTerms", "query_terms"]

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_GRAPH_PARTS = frozenset({"Graph", "GraphGraphPattern", "ServiceGraphPattern"})
_PLACEHOLDER = "urn:graphrag-eval:iri:"
_TOKENS = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'  # long strings
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n]|\\.)*"'  # strings
    r"|'(?:[^'\\\n]|\\.)*'"
    r'|<[A-Za-z][A-Za-z0-9+.\-]*:[^<>"{}|^`\\\x00-\x20]*>'  # absolute IRIs
    r"|#[^\n]*",  # comments
    re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class QueryTerms:
    """What a query's triple patterns (property paths and subqueries included) name."""

    predicates: frozenset[str]
    """The IRIs in predicate position (in a property path too, except negated ones);
    ``rdf:type`` only where its object is not an IRI (a variable) or in a path."""
    classes: frozenset[str]
    """The IRIs in object position of an ``rdf:type`` (``a``) pattern."""
    names_graphs: bool
    """The query uses ``GRAPH``, ``SERVICE``, ``FROM`` or ``FROM NAMED``."""


def query_terms(query: str) -> QueryTerms:
    """The terms of ``query``; a query the parser refuses raises :class:`ValueError` with
    its message.

    Questions of one template differ in their IRIs only: each absolute IRI (a prefix's too)
    is replaced by a numbered placeholder, the skeleton is parsed once (and kept), and the
    placeholders are given back their IRIs."""
    iris: dict[str, int] = {}

    def placeholder(match: re.Match[str]) -> str:
        token = match.group(0)
        if not token.startswith("<"):
            return token
        number = iris.setdefault(token[1:-1], len(iris))
        return f"<{_PLACEHOLDER}{number}#>"  # a prefix's IRI too: names follow the "#"

    skeleton = _skeleton_terms(_TOKENS.sub(placeholder, query))
    named = list(iris)

    def back(iri: str) -> str:
        if not iri.startswith(_PLACEHOLDER):
            return iri
        number, _, name = iri[len(_PLACEHOLDER) :].partition("#")
        return named[int(number)] + name

    return QueryTerms(
        frozenset(map(back, skeleton.predicates)),
        frozenset(map(back, skeleton.classes)),
        skeleton.names_graphs,
    )


@functools.lru_cache(maxsize=1024)
def _skeleton_terms(query: str) -> QueryTerms:
    try:
        from rdflib.plugins.sparql.algebra import translateQuery
        from rdflib.plugins.sparql.parser import parseQuery
    except ImportError:
        raise ConfigError(
            "test-suite accuracy needs the sparql extra: pip install 'graphrag-eval[sparql]'",
            field="sparql.test_suite",
        ) from None
    try:
        parsed = deep_call(lambda: translateQuery(parseQuery(query)))
    except Exception as exc:  # pyparsing and rdflib raise many kinds
        raise ValueError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    found = _Found()
    _walk(parsed.algebra, found)
    return QueryTerms(frozenset(found.predicates), frozenset(found.classes), found.graphs)


class _Found:
    def __init__(self) -> None:
        self.predicates: set[str] = set()
        self.classes: set[str] = set()
        self.graphs = False


def _walk(node: Any, found: _Found) -> None:
    from rdflib.term import URIRef

    stack = [node]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, dict):
            if getattr(item, "name", None) in _GRAPH_PARTS or dict.get(item, "datasetClause"):
                found.graphs = True
            for key, value in item.items():
                if key == "triples" and isinstance(value, list):
                    for triple in value:
                        _pattern(triple, found, URIRef)
                else:
                    stack.append(value)
        elif isinstance(item, list | tuple):
            stack.extend(item)


def _pattern(triple: Any, found: _Found, uri: type) -> None:
    if not isinstance(triple, list | tuple) or len(triple) != 3:
        return
    _, predicate, obj = triple
    if isinstance(predicate, uri):
        if str(predicate) == RDF_TYPE and isinstance(obj, uri):
            found.classes.add(str(obj))  # its members, not every typed resource
        else:
            found.predicates.add(str(predicate))
    else:
        _path(predicate, found, uri)


def _path(path: Any, found: _Found, uri: type) -> None:
    """The IRIs of a property path (``/``, ``|``, ``^``, ``*``, ``+``, ``?``), not of a
    negated one (``!``: it matches every other predicate)."""
    from rdflib.paths import AlternativePath, InvPath, MulPath, SequencePath

    if isinstance(path, uri):
        found.predicates.add(str(path))
    elif isinstance(path, SequencePath | AlternativePath):
        for part in path.args:
            _path(part, found, uri)
    elif isinstance(path, InvPath):
        _path(path.arg, found, uri)
    elif isinstance(path, MulPath):
        _path(path.path, found, uri)
