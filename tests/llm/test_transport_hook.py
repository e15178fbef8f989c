"""The engine's transport hook (docs/llm.md): the real engine and SDK client, answered by an
in-process scripted judge instead of an HTTP server."""

from __future__ import annotations

import asyncio
from typing import Any

from graphrag_eval.llm.engine import build_engine
from graphrag_eval.metrics.loading import load_config

from judge_server import scripted_transport

CONFIG: dict[str, Any] = {
    "llm": {
        "generation": {
            "provider": "openai-compatible",
            "base_url": "http://judge.invalid/v1",
            "model": "gpt-4o-mini",
        },
        "embedding": {
            "provider": "openai-compatible",
            "base_url": "http://judge.invalid/v1",
            "model": "text-embedding-3-small",
        },
        "cache": {"enabled": False},
    }
}


def test_judge_and_embedding_calls_go_through_the_given_transport() -> None:
    async def main() -> tuple[str, int]:
        engine = build_engine(
            load_config(CONFIG), transport=scripted_transport(lambda body: "scripted")
        )
        assert engine is not None
        try:
            judged = await engine.judge(
                [{"role": "user", "content": "hi"}], lambda text: text, metric="probe"
            )
            embedded = await engine.embed(["a b", "c d"], metric="probe")
        finally:
            await engine.aclose()
        return judged.value, len(embedded.vectors)

    assert asyncio.run(main()) == ("scripted", 2)
