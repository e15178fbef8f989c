"""``graphrag-eval refresh`` against the real Oxigraph server on 127.0.0.1: the same drift and
the same new reference as against the embedded store loaded from the same file
(docs/knowledge-graph.md, "Refreshing references: drift")."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from graphrag_eval.cli import main

pytest.importorskip("graphrag_eval.graph.endpoint")
oxigraph_server = pytest.importorskip("graph.oxigraph_server")

PREFIX = (
    "PREFIX ex: <http://example.org/grid#> PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> "
)
QUERIES = {
    "substations": PREFIX + "SELECT ?s ?label WHERE { ?s a ex:Substation ; rdfs:label ?label }",
    "lines": PREFIX + "SELECT ?l WHERE { ?l a ex:Line }",
    "nothing": PREFIX + "SELECT ?l WHERE { ?l a ex:Transformer }",
    "broken": "SELECT ?l WHERE {",
}
STALE = (
    '{"head": {"vars": ["s"]}, "results": {"bindings": [{"s": {"type": "literal", "value": "x"}}]}}'
)


def test_refresh_against_the_server_and_the_embedded_store_agree(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    questions = [
        {
            "id": qid,
            "question_text": f"{qid}?",
            "reference_steps": [
                [{"name": "sparql_query", "args": {"query": query}, "output": STALE}]
            ],
        }
        for qid, query in QUERIES.items()
    ]
    reference = tmp_path / "reference.yaml"
    reference.write_text(yaml.safe_dump([{"template_id": "grid", "questions": questions}]))
    graph = tmp_path / "graph.ttl"
    graph.write_text(oxigraph_server.GRAPH)
    via_server, via_files = tmp_path / "server.yaml", tmp_path / "files.yaml"
    reports = tmp_path / "server-drift.yaml", tmp_path / "files-drift.yaml"

    served = tmp_path / "oxigraph"
    served.mkdir()

    with oxigraph_server.OxigraphServer(served) as server:
        code = main(
            [
                *("refresh", str(reference), "--endpoint", server.query_url),
                *("-o", str(via_server), "--drift-report", str(reports[0])),
            ]
        )
    assert code == 0, capsys.readouterr()
    code = main(
        [
            *("refresh", str(reference), "--data", str(graph)),
            *("-o", str(via_files), "--drift-report", str(reports[1])),
        ]
    )
    assert code == 0

    drift_server, drift_files = (yaml.safe_load(path.read_text()) for path in reports)
    assert drift_server["steps"] == drift_files["steps"]
    assert drift_server["steps"] == {
        "unchanged": 0,
        "changed": 2,
        "now_empty": 1,
        "now_failing": 1,
        "no_query": 0,
    }
    assert drift_server["store"]["kind"] == "endpoint"
    server_steps = [q["steps"][0] for q in drift_server["drift"]]
    files_steps = [q["steps"][0] for q in drift_files["drift"]]
    for from_server, from_files in zip(server_steps, files_steps, strict=True):
        assert from_server["drift"] == from_files["drift"]
        assert from_server.get("added_count") == from_files.get("added_count")
    # Fresh from either store, each output compares unchanged against the other store.
    code = main(["refresh", str(via_server), "--data", str(graph), "--fail-on-drift"])
    out = capsys.readouterr().out
    assert code == 1  # the broken query still fails
    assert "3 unchanged, 0 changed, 0 now empty, 1 now failing" in out
