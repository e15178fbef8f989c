"""The embedded store (docs/knowledge-graph.md, "An embedded store"): every RDF format, the
base IRI (CIM/CGMES files with rdf:ID), unparsable files as one-line errors, the graph's
identity, the row limit, read-only, and timeouts that become the step's error."""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.errors import InputError
from graphrag_eval.graph.embedded import EmbeddedStore, load_embedded
from graphrag_eval.graph.execution import ExecutionError

EX = "http://example.org/"

TURTLE = f"""@prefix ex: <{EX}> .
ex:oslo a ex:City ; ex:name "Oslo" ; ex:population 709037 .
ex:bergen a ex:City ; ex:name "Bergen"@en .
ex:norway ex:capital ex:oslo .
"""

N_TRIPLES = f"""<{EX}norway> <{EX}capital> <{EX}oslo> .
<{EX}bergen> <{EX}name> "Bergen"@en .
<{EX}oslo> <{EX}population> "709037"^^<http://www.w3.org/2001/XMLSchema#integer> .
<{EX}bergen> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{EX}City> .
<{EX}oslo> <{EX}name> "Oslo" .
<{EX}oslo> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{EX}City> .
"""

RDF_XML = f"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="{EX}">
  <ex:City rdf:about="{EX}oslo">
    <ex:name>Oslo</ex:name>
    <ex:population rdf:datatype="http://www.w3.org/2001/XMLSchema#integer">709037</ex:population>
  </ex:City>
  <ex:City rdf:about="{EX}bergen"><ex:name xml:lang="en">Bergen</ex:name></ex:City>
  <rdf:Description rdf:about="{EX}norway"><ex:capital rdf:resource="{EX}oslo"/></rdf:Description>
</rdf:RDF>
"""

JSON_LD = json.dumps(
    {
        "@context": {"ex": EX},
        "@graph": [
            {
                "@id": "ex:oslo",
                "@type": "ex:City",
                "ex:name": "Oslo",
                "ex:population": {
                    "@value": "709037",
                    "@type": "http://www.w3.org/2001/XMLSchema#integer",
                },
            },
            {
                "@id": "ex:bergen",
                "@type": "ex:City",
                "ex:name": {"@value": "Bergen", "@language": "en"},
            },
            {"@id": "ex:norway", "ex:capital": {"@id": "ex:oslo"}},
        ],
    }
)

CIM = """<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
         xmlns:cim="http://iec.ch/TC57/CIM100#"{base}>
  <cim:ACLineSegment rdf:ID="_line1">
    <cim:IdentifiedObject.name>L1</cim:IdentifiedObject.name>
    <cim:Equipment.EquipmentContainer rdf:resource="#_sub1"/>
  </cim:ACLineSegment>
  <cim:Substation rdf:ID="_sub1">
    <cim:IdentifiedObject.name>S1</cim:IdentifiedObject.name>
  </cim:Substation>
</rdf:RDF>
"""

CIM_QUERY = """PREFIX cim: <http://iec.ch/TC57/CIM100#>
SELECT ?line ?sub WHERE { ?line a cim:ACLineSegment ; cim:Equipment.EquipmentContainer ?sub .
  ?sub cim:IdentifiedObject.name "S1" }"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def store_of(*paths: Path, **settings: object) -> EmbeddedStore:
    return load_embedded(SparqlConfig(data=[str(p) for p in paths], **settings))  # type: ignore[arg-type]


def rows(store: EmbeddedStore, query: str) -> list[dict[str, object]]:
    execution = store.execute_now(query)
    assert execution.ok, execution.error
    assert execution.results is not None
    return list(execution.results["results"]["bindings"])


@pytest.mark.parametrize(
    ("name", "text"),
    [("g.ttl", TURTLE), ("g.nt", N_TRIPLES), ("g.rdf", RDF_XML), ("g.jsonld", JSON_LD)],
)
def test_every_triple_format_loads_the_same_graph_with_the_same_fingerprint(
    tmp_path: Path, name: str, text: str
) -> None:
    reference = store_of(write(tmp_path, "reference.ttl", TURTLE))
    store = store_of(write(tmp_path, name, text))
    assert store.identity.details["triples"] == 6
    assert store.identity.details["fingerprint"] == reference.identity.details["fingerprint"]
    assert rows(store, f"SELECT ?n WHERE {{ <{EX}oslo> <{EX}name> ?n }}") == [
        {"n": {"type": "literal", "value": "Oslo"}}
    ]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("g.nq", f'<{EX}a> <{EX}p> "1" <{EX}g1> .\n<{EX}a> <{EX}p> "0" .\n'),
        ("g.trig", f'@prefix ex: <{EX}> .\nex:g1 {{ ex:a ex:p "1" }}\nex:a ex:p "0" .\n'),
    ],
)
def test_quad_formats_keep_their_named_graphs(tmp_path: Path, name: str, text: str) -> None:
    store = store_of(write(tmp_path, name, text))
    query = f"SELECT ?g ?v WHERE {{ GRAPH ?g {{ <{EX}a> <{EX}p> ?v }} }}"
    assert rows(store, query) == [
        {"g": {"type": "uri", "value": f"{EX}g1"}, "v": {"type": "literal", "value": "1"}}
    ]
    assert rows(store, f"SELECT ?v WHERE {{ <{EX}a> <{EX}p> ?v }}") == [
        {"v": {"type": "literal", "value": "0"}}
    ]


def test_cim_rdf_id_resolves_against_base_iri(tmp_path: Path) -> None:
    path = write(tmp_path, "grid.xml", CIM.format(base=""))
    store = store_of(path, base_iri="http://example.org/grid")
    assert rows(store, CIM_QUERY) == [
        {
            "line": {"type": "uri", "value": "http://example.org/grid#_line1"},
            "sub": {"type": "uri", "value": "http://example.org/grid#_sub1"},
        }
    ]
    assert store.identity.details["base_iri"] == "http://example.org/grid"


def test_cim_xml_base_in_the_file_needs_no_base_iri(tmp_path: Path) -> None:
    path = write(tmp_path, "grid.rdf", CIM.format(base=' xml:base="urn:grid:model1"'))
    found = rows(store_of(path), CIM_QUERY)
    assert found[0]["line"] == {"type": "uri", "value": "urn:grid:model1#_line1"}


def test_cim_without_any_base_names_base_iri_in_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, "grid.xml", CIM.format(base=""))
    with pytest.raises(InputError) as caught:
        store_of(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    assert "sparql.base_iri" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("bad.ttl", f'@prefix ex: <{EX}> .\nex:a ex:p ex:b .\nex:a ex:p "open .\n', 3),
        ("bad.nt", f"<{EX}a> <{EX}p> <{EX}b> .\n<{EX}a> <{EX}p> .\n", 2),
        ("bad.jsonld", '{"@id": "http://example.org/a",\n "x": }', 2),
        (
            "bad.rdf",
            '<?xml version="1.0"?>\n<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">\n'
            '<rdf:Description rdf:about="http://example.org/a">\n</rdf:RDF>\n',
            4,
        ),
    ],
)
def test_unparsable_rdf_is_one_line_naming_the_file_and_the_line(
    tmp_path: Path, name: str, text: str, line: int
) -> None:
    good = write(tmp_path, "good.ttl", TURTLE)
    bad = write(tmp_path, name, text)
    with pytest.raises(InputError) as caught:
        store_of(good, bad)
    message = str(caught.value)
    assert message.startswith(f"{bad}: line {line}: ")
    assert "\n" not in message
    assert "Traceback" not in message


def test_missing_file_and_unknown_extension(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        store_of(tmp_path / "absent.ttl")
    with pytest.raises(InputError, match="unknown RDF file extension"):
        store_of(write(tmp_path, "g.csv", "a,b\n"))


def test_identity_records_each_file_hash_and_size_the_count_and_fingerprint(
    tmp_path: Path,
) -> None:
    first = write(tmp_path, "a.ttl", TURTLE)
    second = write(tmp_path, "b.nt", f"<{EX}x> <{EX}p> <{EX}y> .\n")
    identity = store_of(first, second).identity
    record = identity.as_record()
    assert record["kind"] == "oxigraph"
    assert record["files"] == [
        {
            "path": str(path),
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "size": path.stat().st_size,
        }
        for path in (first, second)
    ]
    assert record["triples"] == 7
    assert len(record["fingerprint"]) == 64
    assert identity.label == "oxigraph:" + record["fingerprint"][:12]


def test_fingerprint_ignores_order_format_and_blank_labels_but_not_content(
    tmp_path: Path,
) -> None:
    blank = f'@prefix ex: <{EX}> .\nex:a ex:address [ ex:city "Oslo" ] .\n'
    reordered = (
        f'@prefix ex: <{EX}> .\n_:somewhere ex:city "Oslo" .\nex:a ex:address _:somewhere .\n'
    )
    one = store_of(write(tmp_path, "one.ttl", blank)).identity.details["fingerprint"]
    again = store_of(write(tmp_path, "again.ttl", blank)).identity.details["fingerprint"]
    other = store_of(write(tmp_path, "other.ttl", reordered)).identity.details["fingerprint"]
    changed = blank.replace("Oslo", "Bergen")
    different = store_of(write(tmp_path, "changed.ttl", changed)).identity.details["fingerprint"]
    assert one == again == other
    assert different != one
    split_a = write(tmp_path, "split_a.nt", "".join(N_TRIPLES.splitlines(True)[:3]))
    split_b = write(tmp_path, "split_b.nt", "".join(N_TRIPLES.splitlines(True)[3:]))
    whole = store_of(write(tmp_path, "whole.nt", N_TRIPLES)).identity.details["fingerprint"]
    assert store_of(split_a, split_b).identity.details["fingerprint"] == whole


def test_row_limit_keeps_the_first_rows_and_says_truncated(tmp_path: Path) -> None:
    lines = "".join(f'<{EX}s{i}> <{EX}p> "{i}" .\n' for i in range(25))
    store = store_of(write(tmp_path, "many.nt", lines), row_limit=10)
    execution = store.execute_now(f"SELECT ?s WHERE {{ ?s <{EX}p> ?o }}")
    assert execution.rows == 10
    assert execution.truncated is True
    assert execution.results is not None
    assert len(execution.results["results"]["bindings"]) == 10
    small = store.execute_now(f'SELECT ?s WHERE {{ ?s <{EX}p> "3" }}')
    assert (small.rows, small.truncated) == (1, False)
    record = execution.as_record()
    assert (record["rows"], record["truncated"]) == (10, True)


def test_ask_construct_and_errors_as_executions(tmp_path: Path) -> None:
    store = store_of(write(tmp_path, "g.ttl", TURTLE))
    ask = store.execute_now(f"ASK {{ <{EX}norway> <{EX}capital> <{EX}oslo> }}")
    assert ask.results == {"head": {}, "boolean": True}
    assert ask.rows is None
    construct = store.execute_now(f"CONSTRUCT WHERE {{ <{EX}norway> ?p ?o }}")
    assert construct.rows == 1
    broken = store.execute_now("SELECT ?x WHERE { ?x")
    assert broken.error_kind is ExecutionError.SYNTAX_ERROR
    assert not broken.ok
    update = asyncio.run(store.execute(f"INSERT DATA {{ <{EX}a> <{EX}b> <{EX}c> }}"))
    assert update.error_kind is ExecutionError.UPDATE_REFUSED
    assert store.identity.details["triples"] == len(store.store)  # nothing was written


def test_execute_runs_concurrently_and_gives_each_query_its_results(tmp_path: Path) -> None:
    store = store_of(write(tmp_path, "g.ttl", TURTLE), concurrency=2)

    async def main() -> list[int | None]:
        queries = [f"SELECT ?o WHERE {{ ?s ?p ?o }} LIMIT {n}" for n in range(1, 7)]
        return [e.rows for e in await asyncio.gather(*(store.execute(q) for q in queries))]

    assert asyncio.run(main()) == [1, 2, 3, 4, 5, 6]


_TIMEOUT_SCRIPT = """
import asyncio, json, sys
from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.graph.embedded import load_embedded

store = load_embedded(SparqlConfig(data=[sys.argv[1]], timeout_s=0.5))
P = "<http://example.org/p>"
endless = f"SELECT (COUNT(*) AS ?n) WHERE {{ ?a {P} ?b . ?c {P} ?d . ?e {P} ?f . ?g {P} ?h }}"

async def main():
    slow = await store.execute(endless)
    after = await store.execute(f"SELECT ?a WHERE {{ ?a {P} ?b }} LIMIT 2")
    print(json.dumps([slow.as_record(), after.as_record()]))

asyncio.run(main())
"""


def test_a_query_that_never_ends_becomes_a_timeout_and_the_run_goes_on(tmp_path: Path) -> None:
    """A four-way cross join over 3,000 triples (8e13 rows to count) with a 0.5 s timeout.
    Run in its own process: Oxigraph cannot stop the query, whose thread ends with it."""
    lines = "".join(f'<{EX}s{i}> <{EX}p> "{i}" .\n' for i in range(3000))
    data = write(tmp_path, "cross.nt", lines)
    src = Path(__file__).resolve().parents[2] / "src"
    done = subprocess.run(
        [sys.executable, "-c", _TIMEOUT_SCRIPT, str(data)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(src)},
        timeout=300,
        check=True,
    )
    slow, after = json.loads(done.stdout)
    assert slow["error_kind"] == "timeout"
    assert slow["error"] == "the query ran longer than 0.5 s"
    assert "rows" not in slow
    assert (after["rows"], after["truncated"]) == (2, False)


def test_a_huge_result_is_cut_at_the_row_limit_without_being_built(tmp_path: Path) -> None:
    """A cross join of 3,000 triples with itself: 9,000,000 rows, of which 101 are read."""
    lines = "".join(f'<{EX}s{i}> <{EX}p> "{i}" .\n' for i in range(3000))
    store = store_of(write(tmp_path, "cross.nt", lines), row_limit=100)
    execution = store.execute_now(f"SELECT * WHERE {{ ?a <{EX}p> ?b . ?c <{EX}p> ?d }}")
    assert (execution.rows, execution.truncated) == (100, True)


def test_one_store_serves_several_event_loops(tmp_path: Path) -> None:
    """The concurrency limit belongs to the loop it was made in: a store kept from one
    ``asyncio.run`` to the next (a library caller's) still limits and executes."""
    store = store_of(write(tmp_path, "g.ttl", TURTLE), concurrency=1)

    async def busy() -> list[int | None]:
        query = "SELECT ?s WHERE { ?s ?p ?o }"
        return [e.rows for e in await asyncio.gather(*(store.execute(query) for _ in range(3)))]

    assert asyncio.run(busy()) == [6, 6, 6]
    assert asyncio.run(busy()) == [6, 6, 6]
