"""The real Oxigraph server (the ``oxigraph`` command the PyPI package ships, next to the test
interpreter) serving a small graph read-only on 127.0.0.1, for the tests of stores and of
everything that executes queries (docs/knowledge-graph.md). The fixtures of
tests/graph/conftest.py start it; other tests use :class:`OxigraphServer` directly:

    with OxigraphServer(tmp_path, {"graph.ttl": GRAPH}) as server:
        server.query_url  # http://127.0.0.1:PORT/query
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

__all__ = ["GRAPH", "GRAPH_TRIPLES", "OxigraphServer", "oxigraph_command"]

GRAPH = """\
@prefix ex: <http://example.org/grid#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .

ex:s1 a ex:Substation ; rdfs:label "North"@en ; ex:voltage "380"^^xsd:integer .
ex:s2 a ex:Substation ; rdfs:label "South"@en ; ex:voltage "220"^^xsd:integer .
ex:s3 a ex:Substation ; rdfs:label "East"@en ; ex:voltage "110"^^xsd:integer .
ex:l1 a ex:Line ; ex:from ex:s1 ; ex:to ex:s2 ; rdfs:label "North-South" .
ex:l2 a ex:Line ; ex:from ex:s2 ; ex:to ex:s3 ; rdfs:label "South-East" .
"""
"""A small power-grid graph: three substations, two lines."""

GRAPH_TRIPLES = 17

START_TIMEOUT_S = 60.0
"""How long the server may take to answer its first query (generous: a loaded machine)."""


def oxigraph_command() -> Path:
    """The ``oxigraph`` command installed beside the interpreter running the tests."""
    return Path(sys.executable).parent / "oxigraph"


class OxigraphServer:
    """``oxigraph serve-read-only`` over a store loaded from ``files`` (name: content, by
    extension) in ``directory``, on a free port of 127.0.0.1; a context manager that waits
    until the server answers a query, and stops it."""

    def __init__(self, directory: Path, files: Mapping[str, str] | None = None) -> None:
        self.directory = directory
        self.location = directory / "store"
        self.files = dict(files if files is not None else {"graph.ttl": GRAPH})
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.log = directory / "oxigraph.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def query_url(self) -> str:
        """The SPARQL 1.1 Protocol query endpoint (``sparql.endpoint``)."""
        return f"{self.url}/query"

    def __enter__(self) -> OxigraphServer:
        self._load()
        self._start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _load(self) -> None:
        command = [str(oxigraph_command()), "load", "--location", str(self.location)]
        for name, content in self.files.items():
            path = self.directory / name
            path.write_text(content, encoding="utf-8")
            command += ["--file", str(path)]
        subprocess.run(command, check=True, capture_output=True, timeout=START_TIMEOUT_S)

    def _start(self) -> None:
        """Start the server on a free port; on a port taken in between, on another one."""
        for _ in range(5):
            self.port = _free_port()
            command = [
                str(oxigraph_command()),
                "serve-read-only",
                "--location",
                str(self.location),
                "--bind",
                f"127.0.0.1:{self.port}",
            ]
            with self.log.open("ab") as log:
                self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
            if self._answers():
                return
        raise RuntimeError(f"the Oxigraph server did not start: {self.log.read_text()[-2000:]}")

    def _answers(self) -> bool:
        """Wait until the server answers an ``ASK`` (``True``) or its process ends
        (``False``), polling between attempts."""
        assert self.process is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        request = urllib.request.Request(
            self.query_url,
            data=b"query=ASK%7B%7D",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(request, timeout=5) as reply:
                    if reply.status == 200:
                        return True
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            try:
                self.process.wait(timeout=0.05)  # the pause between attempts
            except subprocess.TimeoutExpired:
                continue
            return False  # it ended: the port was taken, or it failed
        self.stop()
        raise RuntimeError(f"the Oxigraph server did not answer in {START_TIMEOUT_S:g} s")

    def stop(self) -> None:
        if self.process is None:
            return
        process, self.process = self.process, None
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
