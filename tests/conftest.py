"""Fixtures shared by the test packages: no test may use ambient LLM settings; a live judge
server (``judge``) and configs pointing at it (``make_config``, ``run_with_engine``); a dead
proxy for the offline checks (``dead_proxy``); no real key (``no_real_key``).

Helpers that test modules need are fixtures, because a conftest module cannot be imported by
name under ``--import-mode=importlib``.
"""

from __future__ import annotations

import asyncio
import copy
import socket
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval.evaluation.runner import evaluate
from graphrag_eval.evaluation.services import build_engine
from graphrag_eval.llm.engine import LLMEngine
from graphrag_eval.metrics.loading import load_config
from graphrag_eval.results.run import EvaluationRun

from judge_server import JudgeServer


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


Config = dict[str, Any]


@pytest.fixture(autouse=True)
def _no_ambient_llm_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test may pick up a real key or write to the user's cache directory."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GRAPHRAG_EVAL_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


@pytest.fixture(autouse=True)
def _no_ci_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test suite run in a GitHub Actions job neither appends the commands' summaries to the
    job's page nor prints their annotations (docs/report.md, "CI summary"): the tests that
    check them set the variables themselves."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


def stop_soon(server: JudgeServer) -> None:
    """Stop ``server`` without waiting: ``shutdown()`` blocks until the server loop's next
    poll (half a second), which nothing in a test needs to wait for."""
    threading.Thread(target=server.stop, daemon=True).start()


StartJudge = Callable[..., JudgeServer]


@pytest.fixture
def judge() -> Iterator[StartJudge]:
    """``judge(**options)``: a started :class:`JudgeServer` (``faults``, ``seed``,
    ``latency_s``, ``json_schema``, ``responder``, ``api_key``), stopped after the test."""
    started: list[JudgeServer] = []

    def start(**options: Any) -> JudgeServer:
        server = JudgeServer(**options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        stop_soon(server)


@pytest.fixture
def server(judge: StartJudge) -> JudgeServer:
    """A judge server with no faults and no latency."""
    return judge()


def _merge(base: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` deep-updated with ``overrides``; an override of ``None`` removes the key."""
    merged = copy.deepcopy(base)
    for key, value in overrides.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def llm_config(server: JudgeServer, tmp_path: Path, **overrides: Any) -> Config:
    """A config whose judge and embedding model are ``server``.

    ``overrides`` are deep-merged into the ``llm`` section (``generation={"model": ...}``
    changes one field, ``embedding=None`` drops the embedding model); the cache lives in
    ``tmp_path`` and backoff is 1 ms, so retries cost no time.
    """
    llm = {
        "generation": {
            "provider": "openai-compatible",
            "base_url": server.url,
            "model": "gpt-4o-mini",
        },
        "embedding": {
            "provider": "openai-compatible",
            "base_url": server.url,
            "model": "text-embedding-3-small",
        },
        "cache": {"path": str(tmp_path / "llm-cache.sqlite3")},
        "backoff_initial_s": 0.001,
    }
    return {"llm": _merge(llm, overrides)}


MakeConfig = Callable[..., Config]


@pytest.fixture
def make_config(tmp_path: Path) -> MakeConfig:
    """``make_config(server, **overrides)``: :func:`llm_config` with this test's tmp_path."""

    def make(server: JudgeServer, **overrides: Any) -> Config:
        return llm_config(server, tmp_path, **overrides)

    return make


RunWithEngine = Callable[..., tuple[EvaluationRun, LLMEngine]]


@pytest.fixture
def run_with_engine() -> RunWithEngine:
    """``run_with_engine(reference, responses, config, **engine_options)``: evaluate with an
    engine built here (``dry_run``, ``max_cost_usd``, ``use_cache``), returned closed with
    its stats, for tests of what the run's calls amounted to."""

    def go(
        reference: Sequence[Any], responses: Any, config: Config, **options: Any
    ) -> tuple[EvaluationRun, LLMEngine]:
        async def main() -> tuple[EvaluationRun, LLMEngine]:
            engine = build_engine(load_config(config), **options)
            assert engine is not None
            try:
                return await evaluate(reference, responses, config, engine=engine), engine
            finally:
                await engine.aclose()

        return asyncio.run(main())

    return go
