"""Seeded perturbed copies of an embedded store's graph, for test-suite accuracy
(docs/knowledge-graph.md, "Test-suite accuracy").

The default graph's triples are partitioned once, in a second in-memory store, into one
named graph per predicate, except ``rdf:type`` triples, partitioned by their class. Copy *k*
of a query that uses predicates and classes *A* is then the union of every part outside *A*
and, for each part in *A*, its copy *k*: the part without ``round(drop_share * n)`` of its
*n* triples, those whose SHA-256 of ``seed:k:`` and the triple's N-Triples form is smallest.
A part's copies are built when first asked for and kept (so no copy of the graph is loaded
per question), the least recently used ones removed once the copies hold more than
:data:`COPY_BUDGET` triples; the query runs over the union through Oxigraph's
``default_graph`` option, never copying the rest of the graph.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, Final

from graphrag_eval.config.sparql import TestSuiteConfig
from graphrag_eval.graph.embedded import EmbeddedStore
from graphrag_eval.graph.execution import Execution
from graphrag_eval.graph.loading import pyoxigraph
from graphrag_eval.graph.query_terms import RDF_TYPE, QueryTerms

__all__ = ["COPY_BUDGET", "PerturbedCopies", "perturbed_copies"]

COPY_BUDGET: Final = 4_000_000
"""At most this many triples are kept in built copies (beyond those in use)."""

Part = tuple[str, str]
"""A part of the graph: ``("p", predicate)`` or ``("c", class)``."""

_PART_PREFIX = "urn:graphrag-eval:part:"
_COPY_PREFIX = "urn:graphrag-eval:copy:"


def perturbed_copies(store: EmbeddedStore, settings: TestSuiteConfig) -> PerturbedCopies:
    """The copies of ``store`` under ``settings``, made once per store."""
    key = f"test_suite:{settings.seed}:{settings.drop_share}"
    copies = store.extensions.get(key)
    if copies is None:
        copies = store.extensions[key] = PerturbedCopies(store, settings)
    assert isinstance(copies, PerturbedCopies)
    return copies


class PerturbedCopies:
    """The perturbed copies of one embedded store (see the module's docstring)."""

    def __init__(self, base: EmbeddedStore, settings: TestSuiteConfig) -> None:
        self._base = base
        self._settings = settings
        self._lock = threading.Lock()
        self._suite: EmbeddedStore | None = None
        self._parts: dict[Part, tuple[Any, int]] = {}
        """Each part's named graph and triple count."""
        self._copies: OrderedDict[tuple[Part, int], tuple[Any, int]] = OrderedDict()
        self._in_use: dict[tuple[Part, int], int] = {}
        self._kept = 0
        self._made = 0

    def dropped(self, terms: QueryTerms) -> frozenset[Part]:
        """The parts a query's terms perturb (``rdf:type`` with a variable class: all the
        ``rdf:type`` parts)."""
        parts = {("p", iri) for iri in terms.predicates} | {("c", iri) for iri in terms.classes}
        if RDF_TYPE in terms.predicates:
            parts |= {part for part in self._parts if part[0] == "c"}
        return frozenset(parts)

    async def graphs(self, terms: QueryTerms, copy: int) -> tuple[list[Any], list[Part]]:
        """The default graph of copy ``copy`` for a query with ``terms``, and the parts held
        for it (give them back with :meth:`release`)."""
        return await asyncio.to_thread(self._graphs, terms, copy)

    def release(self, held: Iterable[Part], copy: int) -> None:
        with self._lock:
            for part in held:
                self._in_use[(part, copy)] -= 1

    async def execute(self, query: str, graphs: list[Any]) -> Execution:
        suite = self._suite
        assert suite is not None, "graphs() first"
        return await suite.execute_on(query, {"default_graph": graphs})

    def _graphs(self, terms: QueryTerms, copy: int) -> tuple[list[Any], list[Part]]:
        with self._lock:
            if self._suite is None:
                self._partition()
            dropped = self.dropped(terms) & self._parts.keys()
            graphs = [graph for part, (graph, _) in self._parts.items() if part not in dropped]
            held = sorted(dropped)
            for part in held:
                graphs.append(self._copy(part, copy))
                self._in_use[(part, copy)] = self._in_use.get((part, copy), 0) + 1
            self._evict()
            return graphs, held

    def _partition(self) -> None:
        oxigraph = pyoxigraph()
        names: dict[Part, Any] = {}
        counts: dict[Part, int] = {}
        rdf_type = oxigraph.NamedNode(RDF_TYPE)

        def quads() -> Iterable[Any]:
            default = oxigraph.DefaultGraph()
            for quad in self._base.store.quads_for_pattern(None, None, None, default):
                obj = quad.object
                if quad.predicate == rdf_type and isinstance(obj, oxigraph.NamedNode):
                    part: Part = ("c", obj.value)
                else:
                    part = ("p", quad.predicate.value)
                graph = names.get(part)
                if graph is None:
                    graph = names[part] = oxigraph.NamedNode(f"{_PART_PREFIX}{len(names)}")
                counts[part] = counts.get(part, 0) + 1
                yield oxigraph.Quad(quad.subject, quad.predicate, obj, graph)

        store = oxigraph.Store()
        store.bulk_extend(quads())
        self._parts = {part: (names[part], counts[part]) for part in names}
        self._suite = EmbeddedStore(store, self._base.identity, self._base.config)

    def _copy(self, part: Part, copy: int) -> Any:
        key = (part, copy)
        found = self._copies.get(key)
        if found is not None:
            self._copies.move_to_end(key)
            return found[0]
        assert self._suite is not None
        oxigraph = pyoxigraph()
        source, count = self._parts[part]
        drop = round(self._settings.drop_share * count)
        salt = f"{self._settings.seed}:{copy}:".encode()
        ranked = sorted(
            (hashlib.sha256(salt + str(quad.triple).encode()).digest(), quad)
            for quad in self._suite.store.quads_for_pattern(None, None, None, source)
        )
        self._made += 1
        graph = oxigraph.NamedNode(f"{_COPY_PREFIX}{copy}:{self._made}")
        kept = [oxigraph.Quad(q.subject, q.predicate, q.object, graph) for _, q in ranked[drop:]]
        self._suite.store.bulk_extend(kept)
        self._copies[key] = (graph, len(kept))
        self._kept += len(kept)
        return graph

    def _evict(self) -> None:
        assert self._suite is not None
        for key in list(self._copies):
            if self._kept <= COPY_BUDGET:
                return
            if self._in_use.get(key, 0) > 0:
                continue
            graph, size = self._copies.pop(key)
            self._suite.store.remove_graph(graph)
            self._kept -= size
