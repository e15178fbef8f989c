"""The embedded store: Oxigraph (``pyoxigraph``, the ``sparql`` extra) loaded from RDF files,
in memory or kept in ``sparql.store_directory`` (docs/knowledge-graph.md, "An embedded
store"). Queries run on worker threads, at most ``sparql.concurrency`` at once; one that
outlasts ``sparql.timeout_s`` becomes its step's ``timeout`` error and the run goes on.
Oxigraph cannot stop a query it is evaluating: a query still producing rows stops at its next
row, one still computing its first (an aggregate over a huge join) runs on in its daemon
thread until it ends or the process does."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.graph.execution import Execution, ExecutionError, StoreIdentity
from graphrag_eval.graph.loading import pyoxigraph, rdf_format
from graphrag_eval.graph.persist import LoadedGraph, load_in_memory, open_persisted
from graphrag_eval.graph.readonly import service_refusal, update_refusal

__all__ = ["EmbeddedStore", "graph_identity", "load_embedded", "rdf_format", "sparql_json"]


def load_embedded(config: SparqlConfig) -> EmbeddedStore:
    """The store of ``config.data``: loaded in memory, or opened from (built in)
    ``config.store_directory``. An unreadable file is an :class:`InputError` naming the file
    and the line."""
    paths = [Path(name) for name in config.data]
    if config.store_directory is not None:
        loaded = open_persisted(paths, config.base_iri, Path(config.store_directory))
    else:
        loaded = load_in_memory(paths, config.base_iri)
    return EmbeddedStore(loaded.store, graph_identity(loaded, config.base_iri), config)


def graph_identity(loaded: LoadedGraph, base_iri: str | None) -> StoreIdentity:
    """What run.yaml records of an embedded store: its files with their SHA-256 and size,
    the triple count and the content fingerprint."""
    details: dict[str, Any] = {
        "files": loaded.files,
        "triples": loaded.triples,
        "fingerprint": loaded.fingerprint,
    }
    if base_iri is not None:
        details["base_iri"] = base_iri
    return StoreIdentity("oxigraph", f"oxigraph:{loaded.fingerprint[:12]}", details)


class EmbeddedStore:
    """An Oxigraph store queried on worker threads (:class:`~graphrag_eval.graph.GraphStore`)."""

    def __init__(self, store: Any, identity: StoreIdentity, config: SparqlConfig) -> None:
        self.store = store
        self.config = config
        self._identity = identity
        self._slots: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None
        self.extensions: dict[str, Any] = {}
        """What is built on this store and lives as long as it (the test-suite copies)."""

    @property
    def identity(self) -> StoreIdentity:
        return self._identity

    @property
    def unusable(self) -> str | None:
        return None

    async def execute(self, query: str) -> Execution:
        return await self.execute_on(query, {})

    async def execute_on(self, query: str, options: Mapping[str, Any]) -> Execution:
        """Execute ``query`` on a worker thread with Oxigraph's query ``options`` (such as
        ``default_graph``), within ``sparql.timeout_s``."""
        started = time.perf_counter()
        refused = _refused(query)
        if refused is not None:
            return self._failed(started, *refused)
        loop = asyncio.get_running_loop()
        async with self._semaphore(loop):
            done: asyncio.Future[Execution] = loop.create_future()
            cancelled = threading.Event()

            def work() -> None:
                outcome = self._run(query, options, started, cancelled)
                loop.call_soon_threadsafe(_settle, done, outcome)

            threading.Thread(target=work, name="graphrag-eval-sparql", daemon=True).start()
            try:
                return await asyncio.wait_for(asyncio.shield(done), self.config.timeout_s)
            except TimeoutError:
                cancelled.set()
                message = f"the query ran longer than {self.config.timeout_s:g} s"
                return self._failed(started, message, ExecutionError.TIMEOUT)

    def _semaphore(self, loop: asyncio.AbstractEventLoop) -> asyncio.Semaphore:
        """The concurrency limit, one per event loop (a store outlives ``asyncio.run``)."""
        if self._slots is None or self._slots[0] is not loop:
            self._slots = (loop, asyncio.Semaphore(self.config.concurrency))
        return self._slots[1]

    def execute_now(self, query: str, started: float | None = None) -> Execution:
        """Execute ``query`` on this thread (no timeout)."""
        started = time.perf_counter() if started is None else started
        refused = _refused(query)
        if refused is not None:
            return self._failed(started, *refused)
        return self._run(query, {}, started, None)

    def _run(
        self,
        query: str,
        options: Mapping[str, Any],
        started: float,
        cancelled: threading.Event | None,
    ) -> Execution:
        try:
            answer = self.store.query(query, **options)
            results, rows, truncated = sparql_json(answer, self.config.row_limit, cancelled)
        except SyntaxError as exc:
            return self._failed(started, f"syntax error: {exc}", ExecutionError.SYNTAX_ERROR)
        except (OSError, ValueError, RuntimeError) as exc:
            return self._failed(started, str(exc), ExecutionError.QUERY)
        return Execution(
            self._identity.label,
            time.perf_counter() - started,
            results=results,
            rows=rows,
            truncated=truncated,
        )

    def _failed(self, started: float, error: str, kind: ExecutionError) -> Execution:
        return Execution(
            self._identity.label, time.perf_counter() - started, error=error, error_kind=kind
        )

    async def aclose(self) -> None:
        return None


def _refused(query: str) -> tuple[str, ExecutionError] | None:
    """Why the embedded store never executes ``query``: an update (read-only), or a
    federated query (Oxigraph would send its ``SERVICE`` part over the network: the embedded
    store is offline)."""
    refusal = update_refusal(query)
    if refusal is not None:
        return refusal, ExecutionError.UPDATE_REFUSED
    refusal = service_refusal(query)
    if refusal is not None:
        return refusal, ExecutionError.QUERY
    return None


def _settle(future: asyncio.Future[Execution], outcome: Execution) -> None:
    if not future.done():
        future.set_result(outcome)


def sparql_json(
    answer: Any, row_limit: int, cancelled: threading.Event | None = None
) -> tuple[dict[str, Any], int | None, bool]:
    """Oxigraph's answer as the SPARQL 1.1 Query Results JSON Format, with at most
    ``row_limit`` rows: the results, the rows kept (``None`` for ASK) and whether rows were
    left out. A CONSTRUCT or DESCRIBE answer is given as ``s``, ``p``, ``o`` rows. Once
    ``cancelled`` is set, no further row is read."""
    oxigraph = pyoxigraph()
    if isinstance(answer, oxigraph.QueryBoolean):
        return {"head": {}, "boolean": bool(answer)}, None, False
    if isinstance(answer, oxigraph.QuerySolutions):
        names = [variable.value for variable in answer.variables]
        rows = _rows(answer, names, row_limit + 1, cancelled)
    else:
        names = ["s", "p", "o"]
        triples = ((t.subject, t.predicate, t.object) for t in answer)
        rows = _rows(triples, names, row_limit + 1, cancelled)
    truncated = len(rows) > row_limit
    del rows[row_limit:]
    return {"head": {"vars": names}, "results": {"bindings": rows}}, len(rows), truncated


def _rows(
    solutions: Any, names: Sequence[str], limit: int, cancelled: threading.Event | None
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for solution in _first(solutions, limit, cancelled):
        row = {}
        for position, name in enumerate(names):
            term = solution[position]
            if term is not None:
                row[name] = _term(term)
        rows.append(row)
    return rows


def _first(items: Any, limit: int, cancelled: threading.Event | None) -> Iterator[Any]:
    for count, item in enumerate(items):
        if count >= limit or (cancelled is not None and cancelled.is_set()):
            return
        yield item


def _term(term: Any) -> dict[str, Any]:
    oxigraph = pyoxigraph()
    if isinstance(term, oxigraph.NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, oxigraph.BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, oxigraph.Literal):
        value: dict[str, Any] = {"type": "literal", "value": term.value}
        if term.language:
            value["xml:lang"] = term.language
        elif term.datatype.value != "http://www.w3.org/2001/XMLSchema#string":
            value["datatype"] = term.datatype.value
        return value
    return {"type": "triple", "value": str(term)}
