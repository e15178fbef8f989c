"""The embedded store kept in ``sparql.store_directory`` (docs/knowledge-graph.md, "An
embedded store"): reused while the data files are unchanged, built again when they change,
never reused half built, and built by one process at a time."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.errors import InputError
from graphrag_eval.graph.embedded import EmbeddedStore, load_embedded
from graphrag_eval.graph.persist import MANIFEST

EX = "http://example.org/"


def triples(count: int, start: int = 0) -> str:
    return "".join(f'<{EX}s{i}> <{EX}p> "{i}" .\n' for i in range(start, start + count))


def open_in(directory: Path, *paths: Path) -> EmbeddedStore:
    config = SparqlConfig(data=[str(p) for p in paths], store_directory=str(directory))
    return load_embedded(config)


def stores(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.is_dir())


def manifest(directory: Path) -> dict[str, object]:
    data = json.loads((directory / MANIFEST).read_text("utf-8"))
    assert isinstance(data, dict)
    return data


def count(store: EmbeddedStore) -> int:
    execution = store.execute_now("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
    assert execution.results is not None
    return int(execution.results["results"]["bindings"][0]["n"]["value"])


def test_built_once_then_reused_with_the_same_identity(tmp_path: Path) -> None:
    data = tmp_path / "g.nt"
    data.write_text(triples(50), "utf-8")
    directory = tmp_path / "store"
    first = open_in(directory, data)
    built = stores(directory)
    assert len(built) == 1 and built[0].startswith("store-")
    second = open_in(directory, data)
    assert second.identity == first.identity
    assert stores(directory) == built
    assert count(second) == 50
    saved = manifest(directory)
    assert saved["store"] == built[0]
    assert saved["triples"] == 50
    assert saved["fingerprint"] == first.identity.details["fingerprint"]
    assert saved["files"] == first.identity.details["files"]


def test_a_changed_file_is_built_again_keeping_the_store_in_use(tmp_path: Path) -> None:
    data = tmp_path / "g.nt"
    data.write_text(triples(50), "utf-8")
    directory = tmp_path / "store"
    before = open_in(directory, data)
    [first] = stores(directory)
    data.write_text(triples(60), "utf-8")
    after = open_in(directory, data)
    assert after.identity.details["triples"] == 60
    assert after.identity.details["fingerprint"] != before.identity.details["fingerprint"]
    assert count(after) == 60
    assert count(before) == 50  # a run that opened it before still reads it
    second = manifest(directory)["store"]
    assert stores(directory) == sorted([first, str(second)])
    data.write_text(triples(70), "utf-8")
    assert count(open_in(directory, data)) == 70
    assert stores(directory) == sorted([str(second), str(manifest(directory)["store"])])


def test_a_failed_build_is_never_reused(tmp_path: Path) -> None:
    good = tmp_path / "a.nt"
    good.write_text(triples(10), "utf-8")
    bad = tmp_path / "b.nt"
    bad.write_text(f"<{EX}x> <{EX}p> .\n", "utf-8")
    directory = tmp_path / "store"
    with pytest.raises(InputError, match=r"b\.nt: line 1"):
        open_in(directory, good, bad)
    assert not (directory / MANIFEST).exists()
    assert stores(directory) == []  # the half-built store was removed
    bad.write_text(triples(5, start=100), "utf-8")
    mended = open_in(directory, good, bad)
    assert count(mended) == 15


def test_what_a_killed_build_left_is_built_again(tmp_path: Path) -> None:
    """A build killed after loading leaves a ``building-*`` directory and the old
    manifest; a manifest naming a store that is not there, or unreadable, is not trusted."""
    data = tmp_path / "g.nt"
    data.write_text(triples(20), "utf-8")
    directory = tmp_path / "store"
    open_in(directory, data)
    saved = manifest(directory)
    half = directory / "building-0123456789abcdef"
    half.mkdir()
    (half / "CURRENT").write_text("junk", "utf-8")
    (directory / MANIFEST).write_text(json.dumps({**saved, "store": "store-gone"}), "utf-8")
    again = open_in(directory, data)
    assert count(again) == 20
    assert stores(directory) == [manifest(directory)["store"]]
    (directory / MANIFEST).write_text("{not json", "utf-8")
    assert count(open_in(directory, data)) == 20


def test_a_different_base_iri_is_built_again(tmp_path: Path) -> None:
    data = tmp_path / "g.ttl"
    data.write_text("<a> <p> <b> .\n", "utf-8")
    directory = tmp_path / "store"

    def subject(base: str) -> str:
        config = SparqlConfig(data=[str(data)], store_directory=str(directory), base_iri=base)
        found = load_embedded(config).execute_now("SELECT ?s WHERE { ?s ?p ?o }")
        assert found.results is not None
        return str(found.results["results"]["bindings"][0]["s"]["value"])

    assert subject("http://one.example/") == "http://one.example/a"
    assert subject("http://two.example/") == "http://two.example/a"


_BUILD_SCRIPT = """
import json, sys
from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.graph.embedded import load_embedded
store = load_embedded(SparqlConfig(data=[sys.argv[1]], store_directory=sys.argv[2]))
print(json.dumps(store.identity.as_record()))
"""


def test_two_processes_at_once_build_one_store(tmp_path: Path) -> None:
    """Whichever order the two processes take the lock in, both end with the same graph
    and the directory holds one store."""
    data = tmp_path / "g.nt"
    data.write_text(triples(20_000), "utf-8")
    directory = tmp_path / "store"
    src = Path(__file__).resolve().parents[2] / "src"
    command = [sys.executable, "-c", _BUILD_SCRIPT, str(data), str(directory)]
    env = {"PYTHONPATH": str(src)}
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) for _ in "ab"]
    outputs = [run.communicate(timeout=300)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0]
    first, second = (json.loads(output) for output in outputs)
    assert first == second
    assert first["triples"] == 20_000
    assert stores(directory) == [manifest(directory)["store"]]


def test_a_build_killed_midway_is_built_again_not_reused(tmp_path: Path) -> None:
    """``kill -9`` once the build writes its store: whether the kill lands before or after
    the build ends, the next open gives the whole graph."""
    data = tmp_path / "g.nt"
    data.write_text(triples(200_000), "utf-8")
    directory = tmp_path / "store"
    src = Path(__file__).resolve().parents[2] / "src"
    command = [sys.executable, "-c", _BUILD_SCRIPT, str(data), str(directory)]
    build = subprocess.Popen(command, stdout=subprocess.DEVNULL, env={"PYTHONPATH": str(src)})
    try:
        while build.poll() is None and not any(directory.glob("building-*")):
            time.sleep(0.01)  # waits for the build to start writing; never decides the outcome
    finally:
        build.kill()
        build.wait(timeout=60)
    store = open_in(directory, data)
    assert count(store) == 200_000
    assert stores(directory) == [manifest(directory)["store"]]


def test_the_loading_process_says_why_it_failed_in_one_exception(tmp_path: Path) -> None:
    """The store on disk is loaded by a second process: its failure comes back as the
    exception it raised there (here the store's path is a file), not a traceback on stderr."""
    from graphrag_eval.graph.persist import _DiskLoader

    graph = tmp_path / "graph.ttl"
    graph.write_text("<http://example.org/a> <http://example.org/b> 1 .\n", encoding="utf-8")
    in_the_way = tmp_path / "building-file"
    in_the_way.write_text("not a directory", encoding="utf-8")
    loader = _DiskLoader(in_the_way, [graph], None)
    with pytest.raises(OSError) as caught:
        loader.finish()
    assert str(caught.value)
    assert "\n" not in str(caught.value).strip()
