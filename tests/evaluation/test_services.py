"""Where a run's services are assembled (docs/architecture.md, evaluation/services.py): the
engine, the embedding and BERTScore models built on its call context, and the typed services
of each item."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval import ConfigError
from graphrag_eval.embeddings.remote import RemoteEmbedder
from graphrag_eval.evaluation.services import build_engine, services_of
from graphrag_eval.metrics.loading import load_config

from judge_server import JudgeServer


def test_a_judge_without_a_key_stops_the_run_before_a_local_model_is_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = {
        "llm": {
            "generation": {"provider": "openai", "model": "gpt-4o-mini"},
            "embedding": {"provider": "local", "model": str(tmp_path / "no-model")},
        }
    }

    with pytest.raises(ConfigError, match="no API key: set the environment variable"):
        build_engine(load_config(config))


def test_the_items_services_are_the_engines_judge_and_models(server: JudgeServer) -> None:
    endpoint = {"provider": "openai-compatible", "base_url": server.url}
    config: dict[str, Any] = {
        "llm": {
            "generation": {**endpoint, "model": "judge"},
            "embedding": {**endpoint, "model": "embedder"},
            "cache": {"enabled": False},
        }
    }

    async def main() -> tuple[Any, ...]:
        engine = build_engine(load_config(config))
        assert engine is not None
        try:
            services = services_of(engine)
            assert services.embedder is not None
            embedded = await services.embedder.embed(["a b"], metric="probe")
            return services, engine, len(embedded.vectors)
        finally:
            await engine.aclose()

    services, engine, vectors = asyncio.run(main())

    assert services.judge is engine and isinstance(services.embedder, RemoteEmbedder)
    assert services.bert_scorer is None and services.store is None
    assert services.provided == {"judge", "embeddings"}
    assert vectors == 1
    assert services_of(None).provided == frozenset()
