"""The provider registry (docs/llm.md, providers): each endpoint's client is made by its
provider's registered factory, and a provider registered by a program is used like a built-in
one, through the same engine."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from graphrag_eval.evaluation.services import build_engine
from graphrag_eval.llm.providers import (
    ClientSpec,
    register_provider,
    registered_providers,
    unregister_provider,
)
from graphrag_eval.llm.wire import Timeouts, WireClient
from graphrag_eval.metrics.loading import load_config

from judge_server import JudgeServer


class CountingGateway:
    """A provider's client of the test's own: the production client, counting what it sends
    (a ``ChatClient`` by its methods alone)."""

    def __init__(self, spec: ClientSpec, sent: list[str]) -> None:
        assert spec.settings.base_url is not None
        self._wire = WireClient(spec.settings.base_url, None, Timeouts(5.0, 30.0))
        self.base_url = self._wire.base_url
        self._sent = sent

    def request_parameters(self, role: str, configured: Any) -> dict[str, Any]:
        return dict(configured)

    async def post(self, path: str, fields: dict[str, Any], options: Any) -> bytes:
        self._sent.append(path)
        return await self._wire.post(path, fields, options)

    def price(self, model: str) -> tuple[float, float] | None:
        return (1.0, 2.0) if model == "gateway-judge" else None

    async def close(self) -> None:
        await self._wire.close()


@pytest.fixture
def gateway() -> Iterator[list[str]]:
    """The provider ``lab-gateway``, registered for the test; the paths its clients sent."""
    sent: list[str] = []
    assert register_provider("lab-gateway", lambda spec: CountingGateway(spec, sent)) is None
    try:
        yield sent
    finally:
        unregister_provider("lab-gateway")


def test_a_registered_provider_makes_the_endpoints_client(
    server: JudgeServer, gateway: list[str]
) -> None:
    endpoint = {"provider": "lab-gateway", "base_url": server.url}
    config = {
        "llm": {
            "generation": {**endpoint, "model": "gateway-judge"},
            "embedding": {**endpoint, "model": "gateway-embedder"},
            "cache": {"enabled": False},
        }
    }

    async def main() -> tuple[str, int, float]:
        engine = build_engine(load_config(config))
        assert engine is not None
        try:
            judged = await engine.judge(
                [{"role": "user", "content": "Say yes."}], str, metric="probe"
            )
            embedded = await engine.embedding.embed(["a b", "c d"], metric="probe")
        finally:
            await engine.aclose()
        return judged.value, len(embedded.vectors), engine.stats.cost_usd

    text, vectors, cost = asyncio.run(main())

    assert text and vectors == 2
    # every request the server got came through the gateway's client (the embeddings one
    # twice: a second reply confirms the vectors' dimension)
    assert gateway == ["/chat/completions", "/embeddings", "/embeddings"]
    assert [request.path for request in server.requests] == [f"/v1{path}" for path in gateway]
    assert cost > 0  # priced by the client's own price, as LiteLLM's map prices its models


def test_the_built_in_providers_are_registered_and_the_rest_go_through_litellm() -> None:
    assert registered_providers() == ["azure", "ollama", "openai", "openai-compatible", "vllm"]
