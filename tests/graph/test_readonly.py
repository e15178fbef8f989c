"""Read-only, always: no SPARQL Update reaches a store (docs/knowledge-graph.md)."""

from __future__ import annotations

import pytest

from graphrag_eval.graph.readonly import UPDATE_WORDS, update_refusal

READING = [
    "SELECT * { ?s ?p ?o }",
    "ASK { ?s ?p ?o }",
    "CONSTRUCT WHERE { ?s ?p ?o }",
    "DESCRIBE <http://example.org/a>",
    # update words as variables, prefixed names, IRIs, strings, language tags, comments
    'PREFIX insert: <http://x/> SELECT ?delete { ?delete insert:drop "CLEAR ALL" } # DROP ALL',
    "SELECT * WHERE { ?s <http://example.org/INSERT> ?o . FILTER(?o < 3 && ?o > 1) }",
    "SELECT (COUNT(*) AS ?c) { ?s a ex:Load ; ex:copy ?x }",
    'SELECT * { ?s ?p ?o FILTER(lang(?o) = "en") }',
    "SELECT * { ?s ?p '''a long\nDELETE string''' }",
    'SELECT * { ?s ?p "x"@en-with }',
    "SELECT * { ?s ex:p 1e5 }",
]

UPDATES = [
    "INSERT DATA { <http://a> <http://b> <http://c> }",
    "insert data { <a> <b> 'c' }",
    "DELETE WHERE { ?s ?p ?o }",
    "PREFIX ex: <http://x/>\nDELETE { ?s ex:p ?o } INSERT { ?s ex:q ?o } WHERE { ?s ex:p ?o }",
    "WITH <http://g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }",
    "LOAD <http://example.org/data.ttl>",
    "CLEAR ALL",
    "DROP GRAPH <http://g>",
    "CREATE GRAPH <http://g>",
    "ADD <http://a> TO <http://b>",
    "MOVE DEFAULT TO <http://g>",
    "COPY <http://a> TO <http://b>",
    "SELECT * {} ; DROP ALL",
    "# a comment first\nDELETE WHERE { ?s ?p ?o }",
]


@pytest.mark.parametrize("query", READING)
def test_a_query_that_reads_is_let_through(query: str) -> None:
    assert update_refusal(query) is None


@pytest.mark.parametrize("query", UPDATES)
def test_an_update_is_refused_naming_its_keyword(query: str) -> None:
    refusal = update_refusal(query)
    assert refusal is not None
    assert "read-only" in refusal
    assert any(f"({word})" in refusal for word in UPDATE_WORDS)
