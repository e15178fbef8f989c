"""Seeded perturbed copies of an embedded store's graph, for test-suite accuracy
(docs/knowledge-graph.md, "Test-suite accuracy").

The default graph's triples are partitioned once, in a second in-memory store, into one
named graph per *part*: per predicate, except ``rdf:type`` triples, partitioned by their
class. When a query first uses a part of *n* triples, they are also dealt in turn (in the
store's order) into *b* = min(*n*, :data:`BUCKETS`) bucket graphs. Copy *k* of a query that
uses the parts *A* is the union of every part outside *A* and, for each part in *A*, its
buckets but ``round(b * drop_share)`` of them (at least one, never all; a part of one triple
is left whole), chosen by a generator seeded with ``seed``, *k* and the part: about
``drop_share`` of the part's triples dropped.
The query runs over that union through Oxigraph's ``default_graph`` option. Nothing is
copied per copy or per question: the partition and the buckets hold at most twice the
graph, whatever the number of copies and questions.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Iterable
from typing import Any, Final

from graphrag_eval.config.sparql import TestSuiteConfig
from graphrag_eval.graph.embedded import EmbeddedStore
from graphrag_eval.graph.execution import Execution
from graphrag_eval.graph.loading import pyoxigraph
from graphrag_eval.graph.query_terms import RDF_TYPE, QueryTerms

__all__ = ["BUCKETS", "PerturbedCopies", "perturbed_copies"]

BUCKETS: Final = 20
"""The buckets a used part is dealt into: ``drop_share`` is applied in steps of 1/20."""

Part = tuple[str, str]
"""A part of the graph: ``("p", predicate)`` or ``("c", class)``."""

_PART_PREFIX = "urn:graphrag-eval:part:"
_BUCKET_PREFIX = "urn:graphrag-eval:bucket:"


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
        """Held while the partition or buckets are built."""
        self._suite: EmbeddedStore | None = None
        self._parts: dict[Part, Any] = {}
        """Each part's named graph."""
        self._sizes: dict[Part, int] = {}
        self._buckets: dict[Part, list[Any]] = {}

    def perturbed(self, terms: QueryTerms) -> frozenset[Part]:
        """The parts a query's terms perturb (``rdf:type`` with a variable class: all the
        ``rdf:type`` parts)."""
        parts = {("p", iri) for iri in terms.predicates} | {("c", iri) for iri in terms.classes}
        if RDF_TYPE in terms.predicates:
            parts |= {part for part in self._parts if part[0] == "c"}
        return frozenset(parts)

    async def graphs(self, terms: QueryTerms, copy: int) -> list[Any]:
        """The default graph of copy ``copy`` for a query with ``terms``."""
        return await asyncio.to_thread(self._graphs, terms, copy)

    async def execute(self, query: str, graphs: list[Any]) -> Execution:
        """Execute ``query`` on the copy whose default graph is ``graphs``."""
        suite = self._suite
        assert suite is not None, "graphs() first"
        return await suite.execute_on(query, {"default_graph": graphs})

    def _graphs(self, terms: QueryTerms, copy: int) -> list[Any]:
        with self._lock:
            if self._suite is None:
                self._partition()
            perturbed = self.perturbed(terms) & self._parts.keys()
            share = self._settings.drop_share
            graphs = [graph for part, graph in self._parts.items() if part not in perturbed]
            for part in sorted(perturbed):
                buckets = self._bucketed(part)
                seeded = random.Random(f"{self._settings.seed}:{copy}:{part[0]}:{part[1]}")
                dropped = set(seeded.sample(range(len(buckets)), _dropping(len(buckets), share)))
                graphs += [graph for i, graph in enumerate(buckets) if i not in dropped]
            return graphs

    def _partition(self) -> None:
        oxigraph = pyoxigraph()
        names: dict[Part, Any] = {}
        sizes = self._sizes
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
                sizes[part] = sizes.get(part, 0) + 1
                yield oxigraph.Quad(quad.subject, quad.predicate, obj, graph)

        store = oxigraph.Store()
        store.bulk_extend(quads())
        self._parts = names
        self._suite = EmbeddedStore(store, self._base.identity, self._base.config)

    def _bucketed(self, part: Part) -> list[Any]:
        buckets = self._buckets.get(part)
        if buckets is not None:
            return buckets
        assert self._suite is not None
        oxigraph = pyoxigraph()
        source = self._parts[part]
        index = source.value[len(_PART_PREFIX) :]
        count = min(self._sizes[part], BUCKETS)
        buckets = [oxigraph.NamedNode(f"{_BUCKET_PREFIX}{index}:{b}") for b in range(count)]
        store = self._suite.store
        store.bulk_extend(
            oxigraph.Quad(quad.subject, quad.predicate, quad.object, buckets[n % count])
            for n, quad in enumerate(store.quads_for_pattern(None, None, None, source))
        )
        self._buckets[part] = buckets
        return buckets


def _dropping(buckets: int, share: float) -> int:
    """How many of a part's ``buckets`` a copy drops: ``round(buckets * share)``, at least
    one and never all (none of a single one)."""
    if buckets < 2:
        return 0
    return min(max(round(buckets * share), 1), buckets - 1)
