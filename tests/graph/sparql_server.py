"""A small real HTTP server on 127.0.0.1 (``aiohttp.web``, in the test's event loop) that
answers SPARQL 1.1 Protocol requests as a test scripts it: for the behaviours of an endpoint
that the Oxigraph server cannot show (a 429, 5xx, 401, an HTML page, a huge reply). It records
every request it receives.

    async with ScriptedEndpoint(handler) as server:
        store = open_endpoint(SparqlConfig(endpoint=server.url))
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = ["Received", "ScriptedEndpoint", "results", "select_reply"]


@dataclass
class Received:
    """One request the server received."""

    number: int
    """Counted from 1."""
    headers: dict[str, str]
    form: dict[str, str]
    request: web.Request
    """To stream a reply (``web.StreamResponse.prepare``)."""


Handler = Callable[[Received], Awaitable[web.StreamResponse]]


def results(*values: str) -> dict[str, Any]:
    """SPARQL JSON results of one variable ``x`` with a literal row per value."""
    rows = [{"x": {"type": "literal", "value": value}} for value in values]
    return {"head": {"vars": ["x"]}, "results": {"bindings": rows}}


def select_reply(*values: str) -> web.Response:
    """A successful reply holding :func:`results`."""
    return web.Response(
        body=json.dumps(results(*values)).encode(),
        content_type="application/sparql-results+json",
    )


@dataclass
class ScriptedEndpoint:
    """Answers each request with ``handler(received)``; an async context manager."""

    handler: Handler
    path: str = "/sparql"
    received: list[Received] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    _runner: web.AppRunner | None = None
    _port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}{self.path}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        form = dict(urllib.parse.parse_qsl(body.decode()))
        received = Received(len(self.received) + 1, dict(request.headers), form, request)
        self.received.append(received)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self.handler(received)
        finally:
            self.in_flight -= 1

    async def __aenter__(self) -> ScriptedEndpoint:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(
            app, handler_cancellation=True, access_log=None, shutdown_timeout=0.1
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self._port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()
