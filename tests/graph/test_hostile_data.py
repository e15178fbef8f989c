"""Hostile data files and store directories (docs/security.md, "Knowledge-graph data
files"): an XML entity bomb or external entity is refused before Oxigraph expands or reads it,
a device or a named pipe is refused before it is opened, and a ``store_directory`` that holds
anything a build did not make is refused, so nothing of it is ever removed."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.errors import ConfigError, InputError
from graphrag_eval.graph.embedded import load_embedded

pytest.importorskip("pyoxigraph")

RDF = 'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="http://example.org/"'


def rdf_xml(doctype: str, value: str) -> str:
    return (
        f'<?xml version="1.0"?>\n<!DOCTYPE rdf:RDF [\n{doctype}\n]>\n<rdf:RDF {RDF}>\n'
        f' <rdf:Description rdf:about="http://example.org/s"><ex:p>{value}</ex:p>'
        "</rdf:Description>\n</rdf:RDF>\n"
    )


def laughs(levels: int = 9) -> str:
    lines = ['<!ENTITY l0 "' + "a" * 64 + '">']
    for level in range(1, levels):
        lines.append(f'<!ENTITY l{level} "' + f"&l{level - 1};" * 16 + '">')
    return rdf_xml("\n".join(lines), f"&l{levels - 1};")


def load(*paths: Path, **options: object) -> None:
    load_embedded(SparqlConfig(data=[str(p) for p in paths], **options))  # type: ignore[arg-type]


LIMITED = """
import resource, sys
limit = 600 << 20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.errors import InputError
from graphrag_eval.graph.embedded import load_embedded
try:
    load_embedded(SparqlConfig(data=[sys.argv[1]]))
except InputError as exc:
    print(exc)
    sys.exit(2)
print("loaded")
"""


def test_a_billion_laughs_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.rdf"
    bomb.write_text(laughs(), "utf-8")  # 64 * 16**8 bytes: 256 GiB once expanded
    # Oxigraph alone aborts the whole process here (a failed allocation); run in a child
    # process under an address-space limit so that an expansion fails the test, not pytest.
    child = subprocess.run(
        [sys.executable, "-c", LIMITED, str(bomb)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=False,
    )
    assert child.returncode == 2, child.stderr[-2000:]
    assert child.stdout.startswith(f"{bomb}: line ")
    assert "entity bomb" in child.stdout
    assert len(child.stdout.strip().splitlines()) == 1


def test_a_linear_bomb_under_the_xml_parsers_own_guard_is_refused(tmp_path: Path) -> None:
    # One 1 MiB entity used 70 times: 70 MiB of text from a 1 MiB file, an amplification
    # expat's own guard (100 times) lets through; the bound of 64 MiB does not.
    bomb = tmp_path / "linear.rdf"
    bomb.write_text(rdf_xml('<!ENTITY big "' + "b" * (1 << 20) + '">', "&big;" * 70), "utf-8")
    with pytest.raises(InputError, match="expand it to more than 64 MiB") as caught:
        load(bomb)
    assert str(caught.value).startswith(str(bomb))


def test_an_external_entity_is_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the-secret-text", "utf-8")
    xxe = tmp_path / "xxe.rdf"
    xxe.write_text(rdf_xml(f'<!ENTITY x SYSTEM "file://{secret}">', "&x;"), "utf-8")
    with pytest.raises(InputError) as caught:
        load(xxe)
    message = str(caught.value)
    assert "external entity 'x'" in message and "never read" in message
    assert "the-secret-text" not in message


def test_an_external_entity_over_http_is_never_fetched(tmp_path: Path) -> None:
    requests: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"fetched")

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/entity"
        xxe = tmp_path / "xxe.owl"
        xxe.write_text(rdf_xml(f'<!ENTITY x PUBLIC "-//x//y" "{url}">', "&x;"), "utf-8")
        with pytest.raises(InputError, match="external entity"):
            load(xxe)
        remote = tmp_path / "remote.jsonld"
        remote.write_text(f'{{"@context": "{url}", "@id": "http://a", "name": "x"}}', "utf-8")
        with pytest.raises(InputError, match="remote @context is never downloaded"):
            load(remote)
    finally:
        server.shutdown()
        server.server_close()
    assert requests == []


def test_internal_entities_for_namespaces_still_load(tmp_path: Path) -> None:
    # OWL files declare entities for their namespaces: these are sound and load.
    owl = tmp_path / "onto.owl"
    owl.write_text(rdf_xml('<!ENTITY ex "http://example.org/">', "&ex;name"), "utf-8")
    store = load_embedded(SparqlConfig(data=[str(owl)]))
    assert store.identity.details["triples"] == 1


@pytest.mark.parametrize("kind", ["device", "fifo", "directory"])
def test_a_data_file_that_is_not_a_regular_file_is_refused_unopened(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "graph.ttl"
    if kind == "device":
        path.symlink_to("/dev/zero")  # read, it would never end
    elif kind == "fifo":
        os.mkfifo(path)  # opened, it would wait for a writer forever
    else:
        path.mkdir()
    with pytest.raises(InputError, match="not a regular file") as caught:
        load(path)
    assert str(caught.value).startswith(str(path))


def test_a_store_directory_holding_other_things_is_refused_and_left_alone(
    tmp_path: Path,
) -> None:
    data = tmp_path / "g.nt"
    data.write_text('<http://example.org/s> <http://example.org/p> "o" .\n', "utf-8")
    directory = tmp_path / "mine"
    photos = directory / "store-photos"  # a name a build's clean-up used to remove
    photos.mkdir(parents=True)
    (photos / "a.jpg").write_bytes(b"precious")
    (directory / "notes.txt").write_text("mine", "utf-8")
    with pytest.raises(ConfigError, match=r"holds 'notes\.txt', which no store build made"):
        load(data, store_directory=str(directory))
    (directory / "notes.txt").unlink()
    with pytest.raises(ConfigError, match="holds 'store-photos'"):
        load(data, store_directory=str(directory))
    assert (photos / "a.jpg").read_bytes() == b"precious"
    assert sorted(p.name for p in directory.iterdir()) == ["store-photos"]


def test_a_planted_store_link_is_never_removed_through(tmp_path: Path) -> None:
    data = tmp_path / "g.nt"
    data.write_text('<http://example.org/s> <http://example.org/p> "o" .\n', "utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep", "utf-8")
    directory = tmp_path / "store"
    load(data, store_directory=str(directory))
    (directory / "store-planted").symlink_to(outside, target_is_directory=True)
    data.write_text('<http://example.org/s> <http://example.org/p> "changed" .\n', "utf-8")
    with pytest.raises(ConfigError, match="holds 'store-planted'"):
        load(data, store_directory=str(directory))
    assert (outside / "keep.txt").read_text("utf-8") == "keep"


def test_a_store_directory_that_is_an_earlier_output_directory_is_refused(
    tmp_path: Path,
) -> None:
    data = tmp_path / "g.nt"
    data.write_text('<http://example.org/s> <http://example.org/p> "o" .\n', "utf-8")
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").write_text("{}\n", "utf-8")
    with pytest.raises(ConfigError, match=r"holds 'results\.jsonl'"):
        load(data, store_directory=str(out))
    assert sorted(p.name for p in out.iterdir()) == ["results.jsonl"]


def test_a_kept_store_is_still_reused(tmp_path: Path) -> None:
    data = tmp_path / "g.nt"
    data.write_text('<http://example.org/s> <http://example.org/p> "o" .\n', "utf-8")
    directory = tmp_path / "store"
    load(data, store_directory=str(directory))
    built = sorted(p.name for p in directory.iterdir())
    store = load_embedded(SparqlConfig(data=[str(data)], store_directory=str(directory)))
    assert store.identity.details["triples"] == 1
    assert sorted(p.name for p in directory.iterdir()) == built
