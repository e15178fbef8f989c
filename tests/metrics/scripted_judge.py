"""A scripted judge for the unit tests of metrics (docs/architecture.md, "Tests"): the real
engine and its production client (the engine's own, ``llm/wire.py``) send their requests over
HTTP to the test server (tests/judge_server.py) on 127.0.0.1, started for each run with the
script as its ``responder``.

A :class:`ScriptedJudge` answers ``/chat/completions`` from its script, by the structured-output
schema a request asks for (``FactualAccuracyReply=...``) or by a responder function, and
everything else as the rule judge of the test server does; it answers ``/embeddings`` with the
server's bag-of-words vectors. Every request is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphrag_eval import run_evaluation

from judge_server import JudgeServer, Recorded

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
    received: list[Recorded] = field(default_factory=list)
    """Every request of its runs, as the server received it (headers included)."""

    @property
    def requests(self) -> list[tuple[str, Body]]:
        """The path and body of every request of its runs."""
        return [(request.path, request.body) for request in self.received]

    def server(self) -> JudgeServer:
        """A test server answering from the script (not started)."""
        return JudgeServer(responder=self._respond)

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
    """Evaluate with the real engine talking to ``judge`` over HTTP; the flat per-question
    results. The config's endpoints at :data:`BASE_URL` are pointed at the judge's server."""
    with judge.server() as server:
        try:
            return run_evaluation(reference, responses, _pointed_at(config, server.url))
        finally:
            judge.received.extend(server.requests)


def _pointed_at(config: dict[str, Any], url: str) -> dict[str, Any]:
    """``config`` with every endpoint at :data:`BASE_URL` at ``url`` instead."""
    llm = dict(config.get("llm") or {})
    for role in ("generation", "embedding"):
        endpoint = llm.get(role)
        if isinstance(endpoint, dict) and endpoint.get("base_url") == BASE_URL:
            llm[role] = {**endpoint, "base_url": url}
    return {**config, "llm": llm}


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
