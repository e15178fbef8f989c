"""Queries from responses that try to get past the read-only guard or out of the embedded
store (docs/knowledge-graph.md, "Read-only, limits and timeouts"): an update written with
SPARQL's codepoint escapes or hidden after a comment ended by a carriage return is refused,
and a federated query (``SERVICE``) never makes the embedded store call the network."""

from __future__ import annotations

import asyncio
import socket
import threading

import pytest

from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.graph.embedded import EmbeddedStore
from graphrag_eval.graph.execution import ExecutionError, StoreIdentity
from graphrag_eval.graph.persist import load_in_memory
from graphrag_eval.graph.readonly import service_refusal, update_refusal

pyoxigraph = pytest.importorskip("pyoxigraph")

DISGUISED = [
    # \u escapes are decoded before a query is parsed (SPARQL 1.1, codepoint escapes)
    "\\u0049NSERT DATA { <http://x> <http://y> <http://z> }",
    "\\U00000044ELETE WHERE { ?s ?p ?o }",
    "\\u0064\\u0072\\u006f\\u0070 ALL",
    # a comment ends at a carriage return too: what follows it is read
    "# a comment\rINSERT DATA { <http://x> <http://y> <http://z> }",
    "SELECT * { ?s ?p ?o } # \r; DROP ALL",
    # an escaped quote opens no string to a parser that decodes first
    'SELECT * { ?s ?p "a\\u0022 } ; DELETE WHERE { ?s ?p ?o } #" }',
]

READING = [
    'SELECT * { ?s ?p "\\u0049NSERT" }',  # an escape inside a string stays in the string
    "SELECT * { ?s <http://example.org/\\u0044ROP> ?o }",
    "SELECT * { ?s ?p ?o } # INSERT in a comment\n",
    "SELECT * { ?s ?p '\\U0010FFFF' }",
    "SELECT * { ?s ?p '\\UFFFFFFFF' }",  # no such character: left as written
]


@pytest.mark.parametrize("query", DISGUISED)
def test_a_disguised_update_is_refused(query: str) -> None:
    assert update_refusal(query) is not None


@pytest.mark.parametrize("query", READING)
def test_escapes_in_strings_and_iris_are_still_read(query: str) -> None:
    assert update_refusal(query) is None


def test_the_update_after_a_carriage_return_comment_is_what_oxigraph_would_run() -> None:
    # The defect this guards: Oxigraph ends the comment at the carriage return and runs
    # the update, while the guard read the rest of the line as the comment.
    query = DISGUISED[3]
    store = pyoxigraph.Store()
    store.update(query)
    assert len(store) == 1
    assert update_refusal(query) is not None


class Listener:
    """A TCP port on 127.0.0.1 that records every connection made to it."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(8)
        self.socket.settimeout(0.2)
        self.port = self.socket.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.socket.accept()
            except OSError:
                continue
            self.connections += 1
            connection.close()

    def close(self) -> int:
        self._stop.set()
        self._thread.join()
        self.socket.close()
        return self.connections


def service_queries(port: int) -> list[str]:
    url = f"http://127.0.0.1:{port}/sparql"
    return [
        f"SELECT * WHERE {{ SERVICE <{url}> {{ ?s ?p ?o }} }}",
        f"SELECT * WHERE {{ SERVICE SILENT <{url}> {{ ?s ?p ?o }} }}",
        f"select * where {{ ?a ?b ?c optional {{ service <{url}> {{ ?s ?p ?o }} }} }}",
    ]


def test_the_embedded_store_never_sends_a_service_query() -> None:
    listener = Listener()
    loaded = load_in_memory([], None)
    identity = StoreIdentity("oxigraph", "oxigraph:test", {})
    store = EmbeddedStore(loaded.store, identity, SparqlConfig(data=["unused.ttl"]))
    try:
        queries = service_queries(listener.port)
        executions = [store.execute_now(query) for query in queries]
        executions += [asyncio.run(store.execute(query)) for query in queries]
    finally:
        connections = listener.close()
    assert connections == 0
    for execution in executions:
        assert execution.error_kind == ExecutionError.QUERY
        assert execution.error is not None and "SERVICE" in execution.error


def test_service_as_a_word_in_strings_iris_and_names_is_not_refused() -> None:
    assert service_refusal('SELECT * { ?service ex:service "SERVICE" }') is None
    assert service_refusal("SELECT * { <http://x/SERVICE> ?p ?o }") is None
    assert service_refusal("SELECT * { \\u0053ERVICE <http://x/> { ?s ?p ?o } }") is not None
