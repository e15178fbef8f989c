"""An in-process scripted judge for the unit tests of metrics (docs/architecture.md, "Plan and
run"): the real engine and the real OpenAI SDK client run, only the wire is an
``httpx2.MockTransport`` (the engine's ``transport`` hook, docs/llm.md). End-to-end tests of the
engine and the CLI keep the HTTP test server (tests/judge_server.py).

A :class:`ScriptedJudge` answers ``/chat/completions`` from its script, by the structured-output
schema a request asks for (``FactualAccuracyReply=...``) or by a responder function, and
everything else as the rule judge of the test server does; it answers ``/embeddings`` with the
server's bag-of-words vectors. Every request is recorded.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2

from graphrag_eval.evaluation.runner import evaluate
from graphrag_eval.llm.engine import build_engine
from graphrag_eval.metrics.loading import load_config

from judge_server import scripted_transport

Body = dict[str, Any]
Reply = str | dict[str, Any] | Callable[[Body], str | dict[str, Any] | None]

BASE_URL = "http://judge.invalid/v1"


def task(body: Body) -> str:
    """The first user message of a chat request (the prompt, without any re-ask)."""
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def schema_of(body: Body) -> str | None:
    """The structured-output schema a chat request asks for."""
    return ((body.get("response_format") or {}).get("json_schema") or {}).get("name")


@dataclass
class ScriptedJudge:
    """A judge that answers from ``replies`` (keyed by schema name; a reply is text, a
    JSON-able dict or a function of the request body), then ``responder``, then by rule."""

    replies: dict[str, Reply] = field(default_factory=dict)
    responder: Callable[[Body], str | None] | None = None
    requests: list[tuple[str, Body]] = field(default_factory=list)

    def transport(self) -> httpx2.AsyncBaseTransport:
        """The transport to hand to ``build_engine``; it records every request."""
        answer = scripted_transport(self._respond)

        async def handle(request: httpx2.Request) -> httpx2.Response:
            self.requests.append((request.url.path, json.loads(request.content or b"{}")))
            return await answer.handle_async_request(request)  # type: ignore[no-any-return]

        return httpx2.MockTransport(handle)

    def _respond(self, body: Body) -> str | None:
        reply = self.replies.get(schema_of(body) or "")
        if callable(reply):
            reply = reply(body)
        if reply is None and self.responder is not None:
            reply = self.responder(body)
        if reply is None or isinstance(reply, str):
            return reply
        return json.dumps(reply)

    def count(self, path: str = "") -> int:
        """How many requests were made (only those to a path ending with ``path``)."""
        return sum(1 for made, _ in self.requests if made.endswith(path))

    def chats(self, schema: str | None = None, containing: str = "") -> list[Body]:
        """The chat request bodies, optionally only those asking for ``schema`` or whose
        prompt contains ``containing``."""
        return [
            body
            for path, body in self.requests
            if path.endswith("chat/completions")
            and (schema is None or schema_of(body) == schema)
            and containing in task(body)
        ]


def judge_config(**sections: Any) -> dict[str, Any]:
    """A config whose judge and embedding model are the scripted judge (no cache, so every
    request reaches the script), with ``sections`` added."""
    endpoint = {"provider": "openai-compatible", "base_url": BASE_URL}
    llm = {
        "generation": {**endpoint, "model": "gpt-4o-mini"},
        "embedding": {**endpoint, "model": "text-embedding-3-small"},
        "cache": {"enabled": False},
        "backoff_initial_s": 0.001,
    }
    return {"llm": llm, **sections}


def run_scripted(
    judge: ScriptedJudge,
    reference: Sequence[Any],
    responses: Sequence[Any],
    config: dict[str, Any],
) -> list[dict[str, Any]]:
    """Evaluate with the real engine talking to ``judge``; the flat per-question results."""

    async def main() -> list[dict[str, Any]]:
        engine = build_engine(load_config(config), transport=judge.transport())
        assert engine is not None
        try:
            run = await evaluate(reference, responses, config, engine=engine)
        finally:
            await engine.aclose()
        return run.results

    return asyncio.run(main())


def answering(**replies: Reply) -> ScriptedJudge:
    """A judge answering the schemas named (``ClaimVerdicts=...``) with the given replies;
    the rule judge answers everything else."""
    return ScriptedJudge(dict(replies))


def replying(marker: str, reply: str) -> Callable[[Body], str | None]:
    """A responder that answers ``reply`` to prompts containing ``marker`` (the rule judge
    answers the others)."""
    return lambda body: reply if marker in task(body) else None


def only(config: dict[str, Any], *enabled: str) -> dict[str, Any]:
    """``config`` with only the named built-in LLM metrics enabled (of the seed's three)."""
    sections = ("answer_correctness", "answer_relevance", "retrieval_answer")
    return {**config, **{name: {"enabled": name in enabled} for name in sections}}


def selecting(config: dict[str, Any], *metrics: str, **sections: Any) -> dict[str, Any]:
    """``config`` running only ``metrics`` (with ``sections`` added to it)."""
    return {**config, "metrics": list(metrics), **sections}


def llm_keys(result: dict[str, Any]) -> list[str]:
    """The keys of the seed's LLM metrics in a result, its steps' included."""
    keys = [key for key in result if key.startswith(("answer_", "fluency"))]
    for step_result in result.get("actual_steps", ()):
        keys += [key for key in step_result if key.startswith("retrieval_answer")]
    return keys
