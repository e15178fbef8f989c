"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions and embeddings API,
for tests and benchmarks of the judge engine. The real ``openai`` client talks to it over the
network stack.

It is a deterministic judge: it reads graphrag-eval's prompts and answers them by simple
rules (claims are the comma-separated parts of an answer; a claim matches when its words
occur in the other text), and embeds texts as hashed bags of words, so identical texts have
cosine 1 and unrelated texts about 0.

Faults are injected deterministically: whether a request fails depends on the seed, the
request body and how many times that body was seen, never on timing or arrival order. So a
retried request gets a fresh roll, and a whole run is reproducible.

Run it by hand (for benchmarks)::

    python tests/judge_server.py --port 8765 --latency 0.2 --rate-limit 0.1
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import random
import re
import socket
import sys
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from batch_api import BatchAPI

__all__ = [
    "Faults",
    "JudgeServer",
    "Recorded",
    "SilentServer",
    "chat_completion",
    "closed_port_url",
    "default_judge",
    "echoed_authorization",
    "embed_text",
    "noisy_reply",
]

DIMENSIONS = 64
MALFORMED_REPLY = "Sorry, I would rather not answer in that format."


@dataclass(frozen=True)
class Faults:
    """Shares of requests that fail, each way (decided per request, deterministically)."""

    rate_limit: float = 0.0
    """429 with ``retry-after-ms``."""
    server_error: float = 0.0
    """500."""
    malformed: float = 0.0
    """200 with a reply that is neither the JSON nor the tab-separated line asked for."""
    hang: float = 0.0
    """No reply for ``hang_s`` (longer than the client's timeout)."""
    truncated: float = 0.0
    """200 with ``finish_reason: length``."""
    html: float = 0.0
    """200 with an HTML page instead of JSON (a proxy's error page)."""
    foreign_json: float = 0.0
    """200 with JSON that is not the API's (``{"status": "ok"}``: a proxy's own reply)."""
    retry_after_ms: int = 20
    hang_s: float = 30.0
    # list-shape faults: JSON replies whose list does not fit what was asked (a list of
    # verdicts naming their items, or the questions of answer relevance). Decided per request
    # like the faults above, by a roll of their own; see reshape_list.
    short_list: float = 0.0
    """The list loses its last entry (when it has more than one)."""
    reversed_list: float = 0.0
    """The list in reverse order."""
    duplicate_entry: float = 0.0
    """The first entry repeated at the end, its verdict flipped."""
    out_of_range_entry: float = 0.0
    """An extra entry, for an item one past the last asked (or an extra question)."""
    drop_item: int | None = None
    """Every verdict list leaves out the entry for this item number (never judged)."""
    reject_schema_keywords: bool = False
    """A 400 naming the keyword for a ``response_format`` schema with ``enum``, ``minItems``
    or ``maxItems`` (an endpoint whose structured output lacks them)."""
    # network faults
    max_in_flight: int | None = None
    """A concurrency cap: a request that arrives while this many are being answered gets a
    429 at once (with ``retry-after-ms``), as a provider's rate limiter answers."""
    # unusable replies: a gateway with nothing behind it, a captive portal, a bad first reply
    bad_gateway: float = 0.0
    """502 with a proxy's HTML page."""
    redirect: float = 0.0
    """A redirect (``redirect_status``) to a login page, with an empty body."""
    redirect_status: int = 302
    half_dimension_first: bool = False
    """The first embeddings request gets vectors of half the dimension (a malformed reply);
    every later one the right dimension."""
    zero_vectors: bool = False
    """Every embeddings request gets vectors of zeros (no direction to compare)."""
    hang_first: str | None = None
    """A request whose body holds this text hangs (``hang_s``) the first time it comes; its
    copies after that are answered as usual (a hung request among healthy ones)."""
    fail_second: str | None = None
    """A request whose body holds this text gets a 500 the second time it comes, and only
    then (one of a judge's repeats failing among healthy ones, whatever their order)."""


@dataclass(frozen=True)
class Recorded:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    outcome: str
    """ok, rate_limit, server_error, malformed, hang, truncated, unauthorized, bad_request,
    schema_keyword, over_capacity, bad_gateway, redirect, or a list-shape fault (short_list,
    reversed_list, duplicate_entry, out_of_range_entry)"""
    query: str = ""
    """The request's query string (Azure's ``api-version=...``)."""


Responder = Callable[[dict[str, Any]], str | None]


@dataclass
class _State:
    latency_s: float
    faults: Faults
    seed: int
    json_schema: bool
    responder: Responder | None
    api_key: str | None
    lock: threading.Lock = field(default_factory=threading.Lock)
    seen: Counter[str] = field(default_factory=Counter)
    requests: list[Recorded] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    # network faults
    answering: int = 0
    """Requests admitted under ``Faults.max_in_flight`` and not answered yet."""
    # echoed credentials
    echo_authorization: bool = False
    """Echo each request's ``Authorization`` header (see :func:`echoed_authorization`)."""
    # unusable replies
    embedding_replies: int = 0
    """Embeddings requests answered (for ``Faults.half_dimension_first``)."""
    # batches
    batch_api: BatchAPI | None = None
    """OpenAI's Files and Batches routes (:mod:`batch_api`)."""
    # judge noise
    repeat_noise: int = 0
    """See :class:`JudgeServer` (``repeat_noise``)."""


class JudgeServer:
    """The server, started on a free port; use as a context manager.

    ``latency_s`` delays every reply; ``faults`` injects failures; ``json_schema=False``
    rejects structured-output requests with a 400, like endpoints that lack it;
    ``responder`` may answer a chat request itself (return ``None`` to fall back to the
    default judge); ``api_key`` makes the server demand that bearer token (and echo a wrong
    one in its 401, as some servers do). ``echo_authorization`` makes it echo each request's
    ``Authorization`` header, decoded too, in every error body, HTML page and chat reply
    (:func:`echoed_authorization`), as a careless server or proxy does.

    ``repeat_noise`` (points) makes the judge noisy, as a judge asked the same thing again
    is (graphrag-eval's ``llm.repeats``): the n-th time the same chat request comes, every
    ``score`` in its JSON reply is moved by ``(0, +repeat_noise, -repeat_noise)[(n - 1) % 3]``
    (kept within 0..100), and a ``CORRECT`` classification becomes ``WRONG`` the third time
    (:func:`noisy_reply`): three repeats of a score ``s`` are ``s``, ``s + d`` and ``s - d``,
    whatever order they arrive in.
    """

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        faults: Faults | None = None,
        seed: int = 0,
        json_schema: bool = True,
        responder: Responder | None = None,
        api_key: str | None = None,
        port: int = 0,
        echo_authorization: bool = False,
        repeat_noise: int = 0,
    ) -> None:
        self.state = _State(latency_s, faults or Faults(), seed, json_schema, responder, api_key)
        self.state.echo_authorization = echo_authorization
        self.batch_api = self.state.batch_api = BatchAPI(self._answer)
        self.state.repeat_noise = repeat_noise
        handler = type("Handler", (_Handler,), {"state": self.state})
        self._server = _Server(("127.0.0.1", port), handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """A batch line's reply: what the chat route answers without faults."""
        responder = self.state.responder
        text = responder(body) if responder is not None else None
        return chat_completion(body, text if text is not None else default_judge(body))

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> JudgeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> JudgeServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def requests(self) -> list[Recorded]:
        with self.state.lock:
            return list(self.state.requests)

    def count(self, path: str | None = None, outcome: str | None = None) -> int:
        """Requests received, optionally only to ``path`` (``chat``/``embeddings``) or with
        ``outcome``."""
        return sum(
            1
            for request in self.requests
            if (path is None or request.path.endswith(path))
            and (outcome is None or request.outcome == outcome)
        )

    @property
    def max_in_flight(self) -> int:
        """The most requests the server was handling at once."""
        return self.state.max_in_flight

    def reset(self) -> None:
        with self.state.lock:
            self.state.requests.clear()
            self.state.max_in_flight = 0


class _Server(ThreadingHTTPServer):
    # The default backlog of 5 drops connections when a run opens 16 or more at once.
    request_queue_size = 128
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet about a client that went away (a process killed by a test or benchmark)."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    state: _State
    nth = 1
    """How many times the request being answered has come (its body, byte for byte)."""
    protocol_version = "HTTP/1.1"
    # network faults: a reply goes out in two writes (headers, body); without this, Nagle's
    # algorithm and the client's delayed ACK add ~40 ms to each reply on loopback.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        if not self._batch_route("GET"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def _batch_route(self, method: str) -> bool:
        """Whether the request is one of the batch API's, answered (:mod:`batch_api`)."""
        path = self.path.partition("?")[0]
        api = self.state.batch_api
        if api is None or not api.serves(path):
            return False
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        headers = {key.lower(): value for key, value in self.headers.items()}
        status, data = api.handle(method, path, headers, raw)
        if status == 0:  # the reply is lost: the connection closes without one
            self.close_connection = True
            return True
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        return True

    def do_POST(self) -> None:
        state = self.state
        if self._batch_route("POST"):
            return
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "body is not JSON"}})
            return
        with state.lock:
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        admitted = _admit(state)
        try:
            if admitted:
                self._handle(body, raw)
            else:
                self._over_capacity(body)
        finally:
            _leave(state, admitted)
            with state.lock:
                state.in_flight -= 1

    def _handle(self, body: dict[str, Any], raw: bytes) -> None:
        state = self.state
        path = self.path.partition("?")[0]
        headers = {key.lower(): value for key, value in self.headers.items()}
        outcome = "ok"
        if state.api_key is not None and headers.get("authorization") != f"Bearer {state.api_key}":
            given = headers.get("authorization", "").removeprefix("Bearer ")
            self._record(path, headers, body, "unauthorized")
            self._send(401, {"error": {"message": f"Incorrect API key provided: {given}"}})
            return
        digest = hashlib.sha256(raw).hexdigest()
        with state.lock:
            state.seen[digest] += 1
            nth = self.nth = state.seen[digest]
        roll = random.Random(f"{state.seed}|{digest}|{nth}").random()
        faults = state.faults
        for name, share in (
            ("rate_limit", faults.rate_limit),
            ("server_error", faults.server_error),
            ("hang", faults.hang),
            ("malformed", faults.malformed),
            ("truncated", faults.truncated),
            ("html", faults.html),
            ("foreign_json", faults.foreign_json),
            ("bad_gateway", faults.bad_gateway),
            ("redirect", faults.redirect),
        ):
            if roll < share:
                outcome = name
                break
            roll -= share
        if faults.hang_first is not None and nth == 1 and faults.hang_first.encode() in raw:
            outcome = "hang"
        if faults.fail_second is not None and nth == 2 and faults.fail_second.encode() in raw:
            outcome = "server_error"
        if path.endswith("/chat/completions") and outcome in ("malformed", "truncated"):
            pass
        elif outcome in ("malformed", "truncated"):
            outcome = "ok"  # embeddings have no reply text to spoil
        wants_schema = (body.get("response_format") or {}).get("type") == "json_schema"
        if wants_schema and not state.json_schema:
            outcome = "bad_request"
        keyword = _rejected_keyword(body, faults)
        if outcome == "ok" and keyword is not None:
            outcome = "schema_keyword"
        if outcome == "ok" and path.endswith("/chat/completions"):
            outcome = _list_fault(faults, f"{state.seed}|{digest}|{nth}|list")
        self._record(path, headers, body, outcome)
        if state.latency_s:
            time.sleep(state.latency_s)
        if outcome == "rate_limit":
            self._send(
                429,
                {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}},
                {"retry-after-ms": str(faults.retry_after_ms)},
            )
        elif outcome == "server_error":
            self._send(500, {"error": {"message": "The server had an error"}})
        elif outcome == "bad_request":
            self._send(400, {"error": {"message": "response_format json_schema is not supported"}})
        elif outcome == "schema_keyword":
            message = f"Invalid schema for response_format: '{keyword}' is not permitted."
            self._send(400, {"error": {"message": message, "param": "response_format"}})
        elif outcome == "html":
            page = b"<html><body>Bad gateway</body></html>"
            if state.echo_authorization:
                page = page.replace(b"</body>", f"<p>{self._echo()}</p></body>".encode())
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
        elif outcome == "foreign_json":
            self._send(200, {"status": "ok"})
        elif outcome in ("bad_gateway", "redirect"):
            self._unusable(outcome)
        elif outcome == "hang":
            time.sleep(faults.hang_s)
            self._send(500, {"error": {"message": "hung"}})
        elif path.endswith("/embeddings"):
            self._send(200, self._embed(body))
        elif path.endswith("/chat/completions"):
            self._send(200, self._chat(body, outcome))
        else:
            self._send(404, {"error": {"message": f"no route {path}"}})

    def _unusable(self, outcome: str) -> None:
        """A gateway's 502 page, or a redirect to a login page (``Faults.bad_gateway``,
        ``Faults.redirect``)."""
        if outcome == "bad_gateway":
            status, page = 502, b"<html><head><title>502 Bad Gateway</title></head></html>"
            headers = {"content-type": "text/html"}
        else:
            status, page = self.state.faults.redirect_status, b""
            headers = {"location": "http://127.0.0.1:9/login"}
        try:
            self.send_response(status)
            for key, value in {**headers, "content-length": str(len(page))}.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(page)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _embed(self, body: dict[str, Any]) -> dict[str, Any]:
        """The embeddings reply; the first at half the dimension with
        ``Faults.half_dimension_first``."""
        reply = _embeddings(body)
        with self.state.lock:
            self.state.embedding_replies += 1
            first = self.state.embedding_replies == 1
        if first and self.state.faults.half_dimension_first:
            for item in reply["data"]:
                item["embedding"] = item["embedding"][: DIMENSIONS // 2]
        if self.state.faults.zero_vectors:
            for item in reply["data"]:
                item["embedding"] = [0.0] * len(item["embedding"])
        return reply

    def _over_capacity(self, body: dict[str, Any]) -> None:
        """The concurrency cap's 429, answered at once (``Faults.max_in_flight``)."""
        headers = {key.lower(): value for key, value in self.headers.items()}
        self._record(self.path, headers, body, "over_capacity")
        retry_after = {"retry-after-ms": str(self.state.faults.retry_after_ms)}
        message = {"error": {"message": "Too many requests in flight", "code": "rate_limit"}}
        self._send(429, message, retry_after)

    def _chat(self, body: dict[str, Any], outcome: str) -> dict[str, Any]:
        text: str | None = None
        if outcome == "malformed":
            text = MALFORMED_REPLY
        elif self.state.responder is not None:
            text = self.state.responder(body)
        if text is None:
            text = default_judge(body)
        finish = "stop"
        text = reshape_list(text, outcome, self.state.faults.drop_item)
        if self.state.repeat_noise:
            text = noisy_reply(text, self.nth, self.state.repeat_noise)
        if outcome == "truncated":
            text, finish = text[: len(text) // 2], "length"
        if self.state.echo_authorization:
            text = _with_echo(text, self._echo())
        return chat_completion(body, text, finish)

    def _echo(self) -> str:
        return echoed_authorization(self.headers.get("authorization", ""))

    def _record(self, path: str, headers: dict[str, str], body: Any, outcome: str) -> None:
        path, query = path.partition("?")[0], self.path.partition("?")[2]
        with self.state.lock:
            self.state.requests.append(Recorded(path, headers, body, outcome, query))

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        if status >= 400 and self.state.echo_authorization and isinstance(payload, dict):
            error = payload.get("error") or {}
            message = f"{error.get('message', '')} ({self._echo()})"
            payload = {**payload, "error": {**error, "message": message}}
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
            pass  # the client gave up (a timeout): nothing to answer


# ------------------------------------------------------------------------------------------
# echoed credentials


def echoed_authorization(header: str) -> str:
    """What the server says back about an ``Authorization`` header: the header, and for
    basic authentication the ``user:password`` it carries, as is and URL-encoded."""
    echo = f"you sent Authorization: {header}"
    scheme, _, encoded = header.partition(" ")
    if scheme == "Basic":
        pair = base64.b64decode(encoded).decode()
        echo += f", that is {pair} ({urllib.parse.quote(pair, safe='')})"
    return echo


def _with_echo(text: str, echo: str) -> str:
    """A judge reply with ``echo`` in it where a reason is: appended to every ``reason``-like
    string of a JSON reply, or to the reason at the end of a tab-separated line."""
    try:
        reply = json.loads(text)
    except ValueError:
        return f"{text} ({echo})" if "\t" in text else text

    def add(value: Any, name: str = "") -> Any:
        if isinstance(value, dict):
            return {key: add(item, key) for key, item in value.items()}
        if isinstance(value, list):
            return [add(item, name) for item in value]
        if isinstance(value, str) and "reason" in name:
            return f"{value} ({echo})"
        return value

    return json.dumps(add(reply))


# ------------------------------------------------------------------------------------------
# list-shape faults

_LIST_FAULTS = ("short_list", "reversed_list", "duplicate_entry", "out_of_range_entry")
_SCHEMA_KEYWORDS = ("minItems", "maxItems", "enum")


def _rejected_keyword(body: dict[str, Any], faults: Faults) -> str | None:
    """The list-limit keyword of the request's schema that the server rejects, if any."""
    if not faults.reject_schema_keywords:
        return None
    schema = json.dumps((body.get("response_format") or {}).get("json_schema") or {})
    return next((word for word in _SCHEMA_KEYWORDS if f'"{word}"' in schema), None)


def _list_fault(faults: Faults, roll_key: str) -> str:
    """The list-shape fault of a chat request (``ok`` for none), by its own roll."""
    roll = random.Random(roll_key).random()
    for name in _LIST_FAULTS:
        share = getattr(faults, name)
        if roll < share:
            return name
        roll -= share
    return "ok"


def _index_key(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return None
    return next(
        (k for k in ("claim", "statement", "context") if isinstance(entry.get(k), int)), None
    )


def reshape_list(text: str, fault: str, drop_item: int | None = None) -> str:
    """``text`` with its list spoilt by ``fault`` (and without the entry for ``drop_item``),
    when it is a JSON object holding a list of indexed verdicts or of questions; else as is."""
    try:
        reply = json.loads(text)
    except ValueError:
        return text
    if not isinstance(reply, dict):
        return text
    name = next((key for key, value in reply.items() if isinstance(value, list)), None)
    if name is None:
        return text
    entries: list[Any] = reply[name]
    index = _index_key(entries[0]) if entries else None
    if index is None and name != "questions":
        return text
    if drop_item is not None and index is not None:
        entries = [entry for entry in entries if entry[index] != drop_item]
    if fault == "short_list" and len(entries) > 1:
        entries = entries[:-1]
    elif fault == "reversed_list":
        entries = entries[::-1]
    elif fault == "duplicate_entry" and entries:
        first = entries[0]
        if isinstance(first, dict):
            first = {k: (not v if isinstance(v, bool) else v) for k, v in first.items()}
        entries = [*entries, first]
    elif fault == "out_of_range_entry" and entries:
        extra = entries[-1]
        if index is not None:
            extra = {**extra, index: max(entry[index] for entry in entries) + 1}
        else:
            extra = "Is this an extra question?"
        entries = [*entries, extra]
    return json.dumps({**reply, name: entries})


def noisy_reply(text: str, nth: int, points: int) -> str:
    """A JSON reply as a noisy judge gives it the ``nth`` time it is asked the same thing
    (see :class:`JudgeServer`, ``repeat_noise``); any other reply unchanged."""
    try:
        reply = json.loads(text)
    except ValueError:
        return text
    offset = (0, points, -points)[(nth - 1) % 3]

    def shift(value: Any) -> Any:
        if isinstance(value, dict):
            moved = {key: shift(item) for key, item in value.items()}
            if isinstance(moved.get("score"), int) and not isinstance(moved["score"], bool):
                moved["score"] = min(100, max(0, moved["score"] + offset))
            if moved.get("classification") == "CORRECT" and (nth - 1) % 3 == 2:
                moved["classification"] = "WRONG"
            return moved
        if isinstance(value, list):
            return [shift(item) for item in value]
        return value

    return json.dumps(shift(reply))


def chat_completion(body: dict[str, Any], text: str, finish: str = "stop") -> dict[str, Any]:
    """The chat-completions reply carrying ``text`` (usage: about 4 characters a token)."""
    prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
    prompt_tokens = max(1, math.ceil(prompt_chars / 4))
    reply_tokens = max(1, math.ceil(len(text) / 4))
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "test"),
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": reply_tokens,
            "total_tokens": prompt_tokens + reply_tokens,
        },
    }


# ------------------------------------------------------------------------------------------
# Network faults: a concurrency cap, a port where nothing listens, a server that never answers


def _admit(state: _State) -> bool:
    """Whether a request is answered, or gets the concurrency cap's 429."""
    cap = state.faults.max_in_flight
    with state.lock:
        if cap is not None and state.answering >= cap:
            return False
        state.answering += 1
        return True


def _leave(state: _State, admitted: bool) -> None:
    if admitted:
        with state.lock:
            state.answering -= 1


def closed_port_url() -> str:
    """A URL on 127.0.0.1 at which nothing listens: connecting is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class SilentServer:
    """Accepts connections on 127.0.0.1 and never answers (nor closes them) until stopped: a
    hung server, which a client can only detect by its read timeout. Use as a context
    manager; :attr:`connections` counts the connections accepted.

    ``trickle_s``: answer instead with the headers of a long reply, then one byte of it every
    ``trickle_s`` seconds, so that no single read ever times out."""

    def __init__(self, trickle_s: float | None = None) -> None:
        self.trickle_s = trickle_s
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(128)
        self._listener.settimeout(0.05)  # so the accepting thread sees stop() soon
        self._port: int = self._listener.getsockname()[1]
        self._held: list[socket.socket] = []
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}/v1"

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self._held)

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            with self._lock:
                self._held.append(connection)
            if self.trickle_s is not None:
                threading.Thread(target=self._trickle, args=(connection,), daemon=True).start()

    def _trickle(self, connection: socket.socket) -> None:
        try:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n")
            while not self._stopped.wait(self.trickle_s):
                connection.sendall(b" ")
        except OSError:
            pass  # the client gave up, or stop() closed it

    def __enter__(self) -> SilentServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopped.set()
        self._thread.join()
        self._listener.close()
        with self._lock:
            for connection in self._held:
                connection.close()


# ------------------------------------------------------------------------------------------
# The deterministic judge

_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def embed_text(text: str) -> list[float]:
    """A hashed bag of words, normalised: identical texts 1.0, disjoint ones about 0."""
    vector = [0.0] * DIMENSIONS
    for word in _words(text):
        index = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big")
        vector[index % DIMENSIONS] += 1.0
    norm = math.sqrt(sum(x * x for x in vector))
    if not norm:
        vector[0] = 1.0
        return vector
    return [x / norm for x in vector]


def _embeddings(body: dict[str, Any]) -> dict[str, Any]:
    inputs = body.get("input")
    texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
    tokens = sum(max(1, math.ceil(len(str(text)) / 4)) for text in texts)
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": index, "embedding": embed_text(str(text))}
            for index, text in enumerate(texts)
        ],
        "model": body.get("model", "test-embedding"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _section(text: str, label: str) -> str:
    """The text after ``label:`` up to the next blank line."""
    match = re.search(rf"^{re.escape(label)}:[ \t]*\n?(.*?)(?:\n\s*\n|\Z)", text, re.M | re.S)
    return match.group(1).strip() if match else ""


def _claims(text: str) -> list[str]:
    parts = re.split(r",|;|\n|\band\b", text)
    return [part.strip(" .*-") for part in parts if _words(part)]


def _states(claim: str, text: str) -> bool:
    """A claim is stated by a text when all of its words occur in it."""
    words = set(_words(text))
    return all(word in words for word in _words(claim))


def _ranked(text: str) -> list[tuple[int, str]]:
    """The contexts of a prompt with their ranks (a follow-up lists only some)."""
    block = text.split("Contexts:\n", 1)[1] if "Contexts:\n" in text else ""
    return [
        (int(match.group(1)), match.group(2).strip())
        for match in re.finditer(r"^\[(\d+)\] (.*)$", block, re.M)
    ]


def _contexts(text: str) -> list[str]:
    return [context for _, context in _ranked(text)]


def _numbered(block: str) -> list[tuple[int, str]]:
    """The items of a ``1. item`` list, with their numbers."""
    found = (re.match(r"^(\d+)\.\s*(.*)$", line.strip()) for line in block.splitlines())
    return [(int(match.group(1)), match.group(2).strip()) for match in found if match]


def default_judge(body: dict[str, Any]) -> str:
    """Answer one of graphrag-eval's prompts by rule (see the module docstring)."""
    messages = body.get("messages") or []
    users = [m.get("content", "") for m in messages if m.get("role") == "user"]
    task = users[0] if users else ""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
    if schema is None:
        found = re.search(r"schema name: (\w+)", task)
        schema = found.group(1) if found else None
    if schema == "GeneratedQuestions":
        answer = _section(task, "Answer")
        count = int(re.search(r"Write (\d+) different", task).group(1))  # type: ignore[union-attr]
        evasive = any(p in answer.lower() for p in ("don't know", "not sure", "cannot answer"))
        stems = ("What is", "Which are", "Tell me", "Name", "List")
        questions = [f"{stems[i % len(stems)]} {answer}?" for i in range(count)]
        return json.dumps({"questions": questions, "noncommittal": evasive})
    if schema == "AttributedStatements":
        reference = _section(task, "Reference answer")
        contexts = " ".join(_contexts(task))
        statements = [
            {"statement": claim, "attributed": _states(claim, contexts)}
            for claim in _claims(reference)
        ]
        found = sum(s["attributed"] for s in statements)
        reason = f"{found} of {len(statements)} statements are in the contexts"
        return json.dumps({"statements": statements, "reason": reason})
    if schema == "ContextVerdicts":
        claims = _claims(_section(task, "Reference answer"))
        verdicts = []
        for rank, context in _ranked(task):
            useful = any(_states(claim, context) for claim in claims)
            reason = "states a reference claim" if useful else "states no reference claim"
            verdicts.append({"context": rank, "useful": useful, "reason": reason})
        return json.dumps({"verdicts": verdicts})
    if schema == "ClaimList":
        answer = _section(task, "Answer")
        evasive = any(p in answer.lower() for p in ("don't know", "not sure", "cannot answer"))
        return json.dumps({"claims": [] if evasive else _claims(answer)})
    if schema == "StatementList":
        return json.dumps({"statements": _claims(_section(task, "Reference answer"))})
    if schema in ("ClaimVerdicts", "StatementVerdicts"):
        label, verdict = (
            ("claim", "supported") if schema == "ClaimVerdicts" else ("statement", "attributed")
        )
        items = _numbered(_section(task, "Claims" if label == "claim" else "Statements"))
        contexts = " ".join(_contexts(task))
        verdicts = [
            {
                label: number,
                verdict: _states(item, contexts),
                "reason": "in the contexts" if _states(item, contexts) else "not in the contexts",
            }
            for number, item in items
        ]
        return json.dumps({"verdicts": verdicts})
    if schema == "ContextRelevances":
        claims = _claims(_section(task, "Reference answer"))
        verdicts = []
        for rank, context in _ranked(task):
            relevant = any(_states(claim, context) for claim in claims)
            verdicts.append(
                {
                    "context": rank,
                    "relevant": relevant,
                    "score": 90 if relevant else 10,
                    "reason": "states the answer" if relevant else "does not state the answer",
                }
            )
        return json.dumps({"contexts": verdicts})
    if schema == "FactualAccuracyReply":
        reference = _claims(_section(task, "Ground truth"))
        candidate = _section(task, "Candidate")
        share = sum(_states(claim, candidate) for claim in reference) / max(1, len(reference))
        score = round(100 * share)
        criterion = {"score": score, "reasoning": f"{score}% of the ground truth is stated"}
        return json.dumps(
            {
                "correctness": criterion,
                "completeness": criterion,
                "consistency": {"score": 100, "reasoning": "no contradictions"},
                "overall_reasoning": f"the candidate states {score}% of the ground truth",
                "confidence": 90,
            }
        )
    if schema == "Classification":
        reference = _claims(_section(task, "Ground truth"))
        candidate = _section(task, "Candidate")
        correct = bool(reference) and all(_states(claim, candidate) for claim in reference)
        return json.dumps(
            {
                "classification": "CORRECT" if correct else "WRONG",
                "reason": "states the ground truth" if correct else "misses the ground truth",
            }
        )
    if "Reference answer:" in task and "Candidate answer:" in task:
        reference = _claims(_section(task, "Reference answer"))
        candidate_text = _section(task, "Candidate answer")
        candidate = _claims(candidate_text)
        matching = sum(_states(claim, candidate_text) for claim in reference)
        matching = min(matching, len(candidate))
        return (
            f"{max(1, len(reference))}\t{max(1, len(candidate))}\t{matching}\t"
            f"The candidate states {matching} of the {len(reference)} reference claims"
        )
    lines = re.search(r"Reply with exactly one line of (\d+) values", task)
    if lines:
        return "\t".join("1" for _ in range(int(lines.group(1))))
    return "I do not recognise this task."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    for name in ("rate-limit", "server-error", "malformed", "hang", "truncated"):
        parser.add_argument(f"--{name}", type=float, default=0.0)
    for name in _LIST_FAULTS:  # list-shape faults
        parser.add_argument(f"--{name.replace('_', '-')}", type=float, default=0.0)
    parser.add_argument("--reject-schema-keywords", action="store_true")
    parser.add_argument("--repeat-noise", type=int, default=0)
    args = parser.parse_args()
    faults = Faults(
        rate_limit=args.rate_limit,
        server_error=args.server_error,
        malformed=args.malformed,
        hang=args.hang,
        truncated=args.truncated,
        **{name: getattr(args, name) for name in _LIST_FAULTS},
        reject_schema_keywords=args.reject_schema_keywords,
    )
    server = JudgeServer(
        latency_s=args.latency,
        faults=faults,
        seed=args.seed,
        port=args.port,
        repeat_noise=args.repeat_noise,
    )
    print(f"judge server at {server.url}", flush=True)
    server._server.serve_forever()


if __name__ == "__main__":
    main()
