"""An endpoint whose RDF/XML reply (to a CONSTRUCT or DESCRIBE) is an entity bomb or names
an external entity: Oxigraph's parser would expand it without bound and abort the whole
process; the reply is refused before it is parsed and becomes the step's ``endpoint`` error
(docs/security.md, "Knowledge-graph data files")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("pyoxigraph")

CHILD = """
import asyncio, resource, sys
limit = 600 << 20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from aiohttp import web
from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.graph.endpoint import open_endpoint
from graph.sparql_server import ScriptedEndpoint

BODY = open(sys.argv[1], "rb").read()

async def answer(received):
    return web.Response(body=BODY, content_type="application/rdf+xml")

async def main():
    async with ScriptedEndpoint(answer) as server:
        store = open_endpoint(SparqlConfig(endpoint=server.url))
        try:
            executed = await store.execute("CONSTRUCT WHERE { ?s ?p ?o }")
        finally:
            await store.aclose()
    print(executed.error_kind.value if executed.error_kind else "ok")
    print(executed.error)

asyncio.run(main())
"""

RDF = 'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="http://example.org/"'


def reply(doctype: str, value: str) -> str:
    return (
        f'<?xml version="1.0"?>\n<!DOCTYPE rdf:RDF [\n{doctype}\n]>\n<rdf:RDF {RDF}>\n'
        f' <rdf:Description rdf:about="http://example.org/s"><ex:p>{value}</ex:p>'
        "</rdf:Description>\n</rdf:RDF>\n"
    )


def laughs() -> str:
    lines = ['<!ENTITY l0 "' + "a" * 64 + '">']
    lines += [f'<!ENTITY l{n} "' + f"&l{n - 1};" * 16 + '">' for n in range(1, 9)]
    return reply("\n".join(lines), "&l8;")


def execute_against(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "reply.rdf"
    path.write_text(body, "utf-8")
    tests = Path(__file__).resolve().parents[1]
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), *sys.path])},
        check=False,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    return child.stdout.strip().splitlines()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (laughs(), "entity bomb"),
        (reply('<!ENTITY x SYSTEM "file:///etc/passwd">', "&x;"), "external entity 'x'"),
    ],
)
def test_a_hostile_rdf_xml_reply_is_the_steps_endpoint_error(
    tmp_path: Path, body: str, expected: str
) -> None:
    kind, error = execute_against(tmp_path, body)
    assert kind == "endpoint"
    assert "RDF/XML reply" in error and expected in error
    assert "root:" not in error


def test_an_rdf_xml_reply_with_namespace_entities_is_read(tmp_path: Path) -> None:
    kind, error = execute_against(tmp_path, reply('<!ENTITY ex "http://example.org/">', "&ex;o"))
    assert kind == "ok" and error == "None"
