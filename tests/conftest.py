"""Fixtures shared by the test packages."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest


@pytest.fixture
def no_real_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """No real OpenAI key and no cache directory from the environment: a test module of the
    command line with a judge uses it (``pytestmark = pytest.mark.usefixtures(...)``)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GRAPHRAG_EVAL_CACHE", raising=False)


@pytest.fixture
def dead_proxy() -> Iterator[tuple[str, list[int]]]:
    """A proxy URL at a local port that accepts connections and closes them at once, so any
    network attempt through it fails; and the list of connections it received (a test that
    nothing reaches for the network sends every request to anywhere but 127.0.0.1 there)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    connections: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            connections.append(1)
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}", connections
    stop.set()
    thread.join()
    listener.close()
