"""Fixtures of the graph tests: the real Oxigraph server on 127.0.0.1 serving the small graph
of tests/graph/oxigraph_server.py (``oxigraph_server``, one for the session), or any graph
(``start_oxigraph``); both stop the server afterwards."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from graph.oxigraph_server import OxigraphServer


@pytest.fixture(scope="session")
def oxigraph_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OxigraphServer]:
    """The Oxigraph server serving ``GRAPH`` read-only (``.query_url`` is its endpoint)."""
    with OxigraphServer(tmp_path_factory.mktemp("oxigraph")) as server:
        yield server


@pytest.fixture
def start_oxigraph(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[[Mapping[str, str]], OxigraphServer]]:
    """Start an Oxigraph server over the given files (name: content); every server started
    is stopped after the test."""
    started: list[OxigraphServer] = []

    def start(files: Mapping[str, str]) -> OxigraphServer:
        directory: Path = tmp_path_factory.mktemp("oxigraph")
        server = OxigraphServer(directory, files).__enter__()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
