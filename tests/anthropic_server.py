"""A real HTTP server on 127.0.0.1 that speaks the Anthropic Messages API (``POST
/v1/messages``), for end-to-end tests of the providers that go through LiteLLM (the
``litellm`` extra, docs/llm.md).

It judges like :mod:`judge_server` (it translates each request into the OpenAI shape and asks
:func:`judge_server.default_judge`), so the scores of a run through it are those of a run
through the OpenAI-compatible server. A JSON schema arrives as LiteLLM sends it to Anthropic:
a forced tool (``tool_choice``) whose ``input_schema`` is the schema, without its name; the
server recognises the schema by its properties and answers with a ``tool_use`` block.

Faults: ``api_key`` makes it demand that ``x-api-key`` (and echo a wrong one in its 401);
``rate_limit_first`` answers the first N requests with a 429 and ``retry-after``;
``max_tokens_first`` cuts the first N replies off (``stop_reason: max_tokens``).

It also serves the Message Batches API (``/v1/messages/batches``, :mod:`anthropic_batches`,
``server.batches``: its controls), behind the same key; those requests are recorded too.
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from anthropic_batches import BatchStore, Served

from judge_server import Recorded, default_judge

__all__ = ["AnthropicServer", "openai_body", "schema_name"]


@dataclass
class _State:
    api_key: str | None
    rate_limit_first: int
    max_tokens_first: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: list[Recorded] = field(default_factory=list)
    batches: BatchStore | None = None


class AnthropicServer:
    """The server, started on a free port; use as a context manager. ``url`` is what
    ``base_url`` takes (LiteLLM appends ``/v1/messages``)."""

    def __init__(
        self, *, api_key: str | None = None, rate_limit_first: int = 0, max_tokens_first: int = 0
    ) -> None:
        self.state = _State(api_key, rate_limit_first, max_tokens_first)
        self.batches = self.state.batches = BatchStore(message)
        handler = type("Handler", (_Handler,), {"state": self.state})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._server.request_queue_size = 128
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> AnthropicServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        threading.Thread(target=self._stop, daemon=True).start()  # shutdown() waits a poll

    def _stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def requests(self) -> list[Recorded]:
        with self.state.lock:
            return list(self.state.requests)

    def count(self, outcome: str | None = None) -> int:
        return sum(1 for r in self.requests if outcome is None or r.outcome == outcome)


class _Handler(BaseHTTPRequestHandler):
    state: _State
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._batch_route("GET", {})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        headers = {key.lower(): value for key, value in self.headers.items()}
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._error(400, "invalid_request_error", "body is not JSON")
            return
        if self.path.startswith("/v1/messages/batches"):
            self._batch_route("POST", body)
            return
        state = self.state
        with state.lock:
            nth = len(state.requests)
            outcome = "ok"
            if self.path.rstrip("/") != "/v1/messages":
                outcome = "not_found"
            elif state.api_key is not None and headers.get("x-api-key") != state.api_key:
                outcome = "unauthorized"
            elif nth < state.rate_limit_first:
                outcome = "rate_limit"
            elif nth < state.max_tokens_first:
                outcome = "max_tokens"
            state.requests.append(Recorded(self.path, headers, body, outcome))
        if outcome == "not_found":
            self._error(404, "not_found_error", f"no route {self.path}")
        elif outcome == "unauthorized":
            given = headers.get("x-api-key", "")
            self._error(401, "authentication_error", f"invalid x-api-key: {given}")
        elif outcome == "rate_limit":
            self._error(429, "rate_limit_error", "rate limited", {"retry-after": "0"})
        else:
            self._send(200, message(body, truncated=outcome == "max_tokens"))

    def _batch_route(self, method: str, body: Any) -> None:
        """A Message Batches route (:mod:`anthropic_batches`), behind the same key."""
        headers = {key.lower(): value for key, value in self.headers.items()}
        state = self.state
        authorized = state.api_key is None or headers.get("x-api-key") == state.api_key
        host, port = self.server.server_address[:2]
        assert state.batches is not None
        served = (
            state.batches.route(method, self.path, body, f"http://{host!s}:{port}")
            if authorized
            else None
        )
        outcome = "unauthorized" if not authorized else "ok" if served else "not_found"
        with state.lock:
            state.requests.append(Recorded(self.path, headers, body, outcome))
        if not authorized:
            self._error(401, "authentication_error", "invalid x-api-key")
        elif served is None:
            self._error(404, "not_found_error", f"no route {method} {self.path}")
        elif served.text is not None:
            self._send_text(served)
        else:
            self._send(served.status, served.payload)

    def _send_text(self, served: Served) -> None:
        data = (served.text or "").encode()
        try:
            self.send_response(served.status)
            self.send_header("content-type", "application/binary")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _error(
        self, status: int, kind: str, text: str, headers: dict[str, str] | None = None
    ) -> None:
        self._send(status, {"type": "error", "error": {"type": kind, "message": text}}, headers)

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass


def _text(content: Any) -> str:
    """The text of an Anthropic ``content`` (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


def _forced_tool(body: dict[str, Any]) -> dict[str, Any] | None:
    """The tool the request forces (how LiteLLM asks Anthropic for a JSON schema)."""
    choice = body.get("tool_choice") or {}
    if choice.get("type") != "tool":
        return None
    return next((t for t in body.get("tools") or [] if t.get("name") == choice.get("name")), None)


def schema_name(schema: dict[str, Any]) -> str | None:
    """The name of one of graphrag-eval's reply schemas, recognised by its properties."""
    top = set((schema.get("properties") or {}).keys())
    text = json.dumps(schema)
    if "questions" in top:
        return "GeneratedQuestions"
    if "verdicts" in top:
        for word, name in (
            ("supported", "ClaimVerdicts"),
            ("attributed", "StatementVerdicts"),
            ("useful", "ContextVerdicts"),
        ):
            if f'"{word}"' in text:
                return name
    if "statements" in top:
        return "AttributedStatements" if '"attributed"' in text else "StatementList"
    names = {
        "claims": "ClaimList",
        "contexts": "ContextRelevances",
        "correctness": "FactualAccuracyReply",
        "classification": "Classification",
    }
    return next((name for key, name in names.items() if key in top), None)


def openai_body(body: dict[str, Any]) -> dict[str, Any]:
    """A Messages API request as the OpenAI chat-completions request it stands for."""
    messages = [{"role": "system", "content": _text(body["system"])}] if body.get("system") else []
    messages += [{"role": m["role"], "content": _text(m.get("content"))} for m in body["messages"]]
    converted: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    tool = _forced_tool(body)
    native = (body.get("output_format") or {}).get("schema")
    schema = tool["input_schema"] if tool is not None else native
    if schema is not None:
        converted["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": schema_name(schema), "schema": schema},
        }
    return converted


def message(body: dict[str, Any], truncated: bool = False) -> dict[str, Any]:
    """The Messages API reply to ``body``: the default judge's, in a ``tool_use`` block when
    a tool is forced (in a text block otherwise)."""
    converted = openai_body(body)
    text = default_judge(converted)
    tool = _forced_tool(body)
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    stop = "end_turn"
    if tool is not None:
        try:
            content = [
                {
                    "type": "tool_use",
                    "id": "toolu_test",
                    "name": tool["name"],
                    "input": json.loads(text),
                }
            ]
            stop = "tool_use"
        except ValueError:
            pass  # not JSON: a text block, as a model that ignored the tool would give
    if truncated:
        content, stop = [{"type": "text", "text": text[: len(text) // 2]}], "max_tokens"
    prompt_chars = sum(len(m["content"]) for m in converted["messages"])
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "test"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": max(1, math.ceil(prompt_chars / 4)),
            "output_tokens": max(1, math.ceil(len(text) / 4)),
        },
    }
