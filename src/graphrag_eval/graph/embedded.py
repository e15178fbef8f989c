"""The embedded store: Oxigraph (``pyoxigraph``, the ``sparql`` extra) loaded from RDF files
(docs/knowledge-graph.md, "An embedded store"). Queries run on worker threads, at most
``sparql.concurrency`` at once; one that outlasts ``sparql.timeout_s`` becomes its step's
``timeout`` error and the run goes on (Oxigraph cannot stop a query: its daemon thread ends
with the query or with the process)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.errors import ConfigError, InputError
from graphrag_eval.graph.execution import Execution, ExecutionError, StoreIdentity
from graphrag_eval.graph.readonly import update_refusal

__all__ = ["EmbeddedStore", "load_embedded", "rdf_format", "sparql_json"]

_FORMATS = {
    ".ttl": "TURTLE",
    ".turtle": "TURTLE",
    ".nt": "N_TRIPLES",
    ".ntriples": "N_TRIPLES",
    ".nq": "N_QUADS",
    ".nquads": "N_QUADS",
    ".trig": "TRIG",
    ".rdf": "RDF_XML",
    ".owl": "RDF_XML",
    ".xml": "RDF_XML",
    ".jsonld": "JSON_LD",
    ".json": "JSON_LD",
    ".n3": "N3",
}


def _pyoxigraph() -> Any:
    try:
        import pyoxigraph
    except ImportError:
        raise ConfigError(
            "an embedded store needs the sparql extra: pip install 'graphrag-eval[sparql]'",
            field="sparql.data",
        ) from None
    return pyoxigraph


def rdf_format(path: Path) -> Any:
    """The RDF format of a data file, by its extension."""
    name = _FORMATS.get(path.suffix.lower())
    if name is None:
        known = ", ".join(sorted(_FORMATS))
        raise InputError(f"unknown RDF file extension (known: {known})", file=str(path))
    return getattr(_pyoxigraph().RdfFormat, name)  # a pyoxigraph.RdfFormat


def load_embedded(config: SparqlConfig) -> EmbeddedStore:
    """An in-memory store with ``config.data`` loaded; an unreadable file is an
    :class:`InputError` naming the file and the line."""
    oxigraph = _pyoxigraph()
    store = oxigraph.Store()
    paths = [Path(name) for name in config.data]
    for path in paths:
        try:
            store.bulk_load(path=str(path), format=rdf_format(path), base_iri=config.base_iri)
        except FileNotFoundError:
            raise InputError("file not found", file=str(path)) from None
        except (SyntaxError, ValueError, OSError) as exc:
            raise InputError(str(exc).splitlines()[0], file=str(path)) from None
    identity = StoreIdentity(
        "oxigraph",
        "oxigraph:" + ",".join(path.name for path in paths),
        {"files": [str(path) for path in paths], "triples": len(store)},
    )
    return EmbeddedStore(store, identity, config)


class EmbeddedStore:
    """An Oxigraph store queried on worker threads (:class:`~graphrag_eval.graph.GraphStore`)."""

    def __init__(self, store: Any, identity: StoreIdentity, config: SparqlConfig) -> None:
        self.store = store
        self._identity = identity
        self._config = config
        self._slots = asyncio.Semaphore(config.concurrency)

    @property
    def identity(self) -> StoreIdentity:
        return self._identity

    @property
    def unusable(self) -> str | None:
        return None

    async def execute(self, query: str) -> Execution:
        started = time.perf_counter()
        refusal = update_refusal(query)
        if refusal is not None:
            return self._failed(started, refusal, ExecutionError.UPDATE_REFUSED)
        async with self._slots:
            loop = asyncio.get_running_loop()
            done: asyncio.Future[Execution] = loop.create_future()

            def work() -> None:
                outcome = self.execute_now(query, started)
                loop.call_soon_threadsafe(_settle, done, outcome)

            threading.Thread(target=work, name="graphrag-eval-sparql", daemon=True).start()
            try:
                return await asyncio.wait_for(asyncio.shield(done), self._config.timeout_s)
            except TimeoutError:
                message = f"the query ran longer than {self._config.timeout_s:g} s"
                return self._failed(started, message, ExecutionError.TIMEOUT)

    def execute_now(self, query: str, started: float | None = None) -> Execution:
        """Execute ``query`` on this thread (no timeout)."""
        started = time.perf_counter() if started is None else started
        refusal = update_refusal(query)
        if refusal is not None:
            return self._failed(started, refusal, ExecutionError.UPDATE_REFUSED)
        try:
            answer = self.store.query(query)
            results, rows, truncated = sparql_json(answer, self._config.row_limit)
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


def _settle(future: asyncio.Future[Execution], outcome: Execution) -> None:
    if not future.done():
        future.set_result(outcome)


def sparql_json(answer: Any, row_limit: int) -> tuple[dict[str, Any], int | None, bool]:
    """Oxigraph's answer as the SPARQL 1.1 Query Results JSON Format, with at most
    ``row_limit`` rows: the results, the rows kept (``None`` for ASK) and whether rows were
    left out. A CONSTRUCT or DESCRIBE answer is given as ``s``, ``p``, ``o`` rows."""
    oxigraph = _pyoxigraph()
    if isinstance(answer, oxigraph.QueryBoolean):
        return {"head": {}, "boolean": bool(answer)}, None, False
    if isinstance(answer, oxigraph.QuerySolutions):
        names = [variable.value for variable in answer.variables]
        rows = _rows(answer, names, row_limit + 1)
    else:
        names = ["s", "p", "o"]
        rows = _rows(((t.subject, t.predicate, t.object) for t in answer), names, row_limit + 1)
    truncated = len(rows) > row_limit
    del rows[row_limit:]
    return {"head": {"vars": names}, "results": {"bindings": rows}}, len(rows), truncated


def _rows(solutions: Any, names: Sequence[str], limit: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for solution in _first(solutions, limit):
        row = {}
        for position, name in enumerate(names):
            term = solution[position]
            if term is not None:
                row[name] = _term(term)
        rows.append(row)
    return rows


def _first(items: Any, limit: int) -> Iterator[Any]:
    for count, item in enumerate(items):
        if count >= limit:
            return
        yield item


def _term(term: Any) -> dict[str, Any]:
    oxigraph = _pyoxigraph()
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
