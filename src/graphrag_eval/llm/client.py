"""One configured model at one endpoint: its client (a :class:`~.chat_client.ChatClient`, made
by its provider's registered factory, :mod:`.providers`), the request parameters it takes,
the limits (a
:class:`~.lane.Lane`) that every call to it shares, and its circuit breaker (a
:class:`Breaker`): an endpoint that refuses requests or cannot be reached gets no more calls.

See docs/llm.md (configuration).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from graphrag_eval.config.llm import EmbeddingConfig, GenerationConfig, LLMConfig
from graphrag_eval.config.secrets import (
    mask_url_credentials,
    proxy_credentials,
    secret_values,
    url_credentials,
)
from graphrag_eval.errors import CallFailed
from graphrag_eval.llm.chat_client import ChatClient, RequestOptions
from graphrag_eval.llm.lane import Lane
from graphrag_eval.llm.providers import ClientSpec, client_for
from graphrag_eval.llm.redaction import Redactor

__all__ = [
    "BREAKER_FAILURES",
    "BREAKER_UNUSABLE",
    "Breaker",
    "Endpoint",
    "Lane",
    "json_body",
    "request",
    "request_fields",
]


BREAKER_FAILURES = 5
"""Requests in a row that cannot reach an endpoint (connection refused, DNS or TLS failure,
timeout) after which it gets no more calls in the run."""

BREAKER_UNUSABLE = 10
"""Requests in a row that get no usable reply (a 5xx, a redirect, a 200 that is not the API's
JSON, such as a captive portal's page; requests that could not reach the endpoint count too)
after which it gets no more calls in the run. More than :data:`BREAKER_FAILURES`: an endpoint
that answers 5xx to a share of requests at random must not stop a run by chance."""


class Breaker:
    """An endpoint's circuit breaker: open (no more calls) once the endpoint refused a request
    (401, 403, 404), :data:`BREAKER_FAILURES` requests in a row could not reach it, or
    :data:`BREAKER_UNUSABLE` requests in a row got no usable reply. It stays open for the rest
    of the run, whose unmade calls ``--resume`` makes later."""

    def __init__(self, name: str) -> None:
        self.name = name
        """How messages name the endpoint: ``judge at http://...``."""
        self.reason: str | None = None
        """Why it is open (``None``: closed)."""
        self.unreachable = False
        """Open because the endpoint could not be reached or gave no usable reply (rather
        than refusing): the failed calls take the breaker's reason."""
        self._failures = 0
        self._unusable = 0

    def check(self) -> None:
        """Raise :class:`CallFailed` when the breaker is open."""
        if self.reason is not None:
            raise CallFailed(self.reason)

    def reached(self) -> None:
        """A request got a reply of the API (a success, or an error such as a 429 or a 400)."""
        self._failures = 0
        self._unusable = 0

    def not_reached(self, what: str) -> None:
        """A request could not reach the endpoint (``what`` says how); open the breaker after
        :data:`BREAKER_FAILURES` in a row (or :data:`BREAKER_UNUSABLE` requests in a row
        without a usable reply)."""
        self._failures += 1
        self._unusable += 1
        if self._failures >= BREAKER_FAILURES and self.reason is None:
            self.unreachable = True
            self.reason = (
                f"{self.name} unreachable ({what}; {self._failures} failures in a row): "
                "no more calls to it in this run"
            )
        self._give_up(what)

    def unusable(self, what: str) -> None:
        """A request got a reply of no use (``what`` says which: a 5xx, a redirect, a page
        that is not JSON); open the breaker after :data:`BREAKER_UNUSABLE` requests in a row
        without a usable reply."""
        self._failures = 0
        self._unusable += 1
        self._give_up(what)

    def _give_up(self, what: str) -> None:
        if self._unusable >= BREAKER_UNUSABLE and self.reason is None:
            self.unreachable = True
            self.reason = (
                f"{self.name} gives no usable reply ({what}; {self._unusable} requests in a "
                "row): no more calls to it in this run"
            )

    def refuse(self, reason: str) -> None:
        """The endpoint refused a request: open at once."""
        if self.reason is None:
            self.reason = reason


class Endpoint:
    """One configured model at one endpoint: its client, limits and identity."""

    def __init__(
        self,
        role: str,
        settings: GenerationConfig | EmbeddingConfig,
        config: LLMConfig,
        redactor: Redactor,
    ) -> None:
        self.role = role
        self.settings = settings
        self.model = settings.model
        redactor.add(*secret_values(settings.request_parameters))
        redactor.add(*url_credentials(settings.base_url), *proxy_credentials())
        self.client: ChatClient = client_for(ClientSpec(role, settings, config, redactor))
        # What identifies the endpoint in cache keys (never the key itself).
        base = mask_url_credentials(str(self.client.base_url).rstrip("/"))
        self.identity = f"{settings.provider}:{base}"
        self.lane = Lane(config)
        label = "judge" if role == "generation" else "embedding endpoint"
        self.breaker = Breaker(f"{label} at {base}")
        self.request_parameters = self.client.request_parameters(role, settings.request_parameters)
        """The config's extra request parameters, split once as the client takes them."""
        self.structured = (
            settings.structured_output if isinstance(settings, GenerationConfig) else "prompt"
        )
        self.schema_keywords = True
        """Whether its structured output takes the list limits of a tight schema (``enum``,
        ``minItems``, ``maxItems``); false once it rejected them (docs/llm.md)."""

    def ensure_usable(self) -> None:
        """Raise :class:`CallFailed` when the endpoint's breaker is open (it refused a
        request, or could not be reached)."""
        self.breaker.check()

    def shares_model_with(self, other: Endpoint) -> bool:
        """Whether both serve the same model at the same endpoint (and so share one lane)."""
        return (self.identity, self.model) == (other.identity, other.model)

    async def close(self) -> None:
        """Close the HTTP client."""
        await self.client.close()


REQUEST_OPTIONS = {"extra_headers": "headers", "extra_query": "params", "timeout": "timeout"}
"""Request parameters that are options of the request (by the name
:class:`~.chat_client.RequestOptions` gives them), not fields of the request body."""


def request_fields(
    body: dict[str, Any], parameters: Mapping[str, Any]
) -> tuple[dict[str, Any], RequestOptions]:
    """The fields and options of a request of ``body`` with ``parameters`` (the config's
    request parameters, in the client's form, and the call's own): :data:`REQUEST_OPTIONS`
    become the request's options, the rest, and ``extra_body``'s fields, go into the body."""
    options: Any = {
        REQUEST_OPTIONS[key]: value for key, value in parameters.items() if key in REQUEST_OPTIONS
    }
    fields = {
        key: value
        for key, value in parameters.items()
        if key not in REQUEST_OPTIONS and key != "extra_body"
    }
    fields.update(parameters.get("extra_body") or {})
    fields.update(body)
    return fields, options


def request(
    endpoint: Endpoint, path: str, body: dict[str, Any], parameters: Mapping[str, Any]
) -> Callable[[], Awaitable[bytes]]:
    """A POST of ``body`` with ``parameters`` to ``path`` through the endpoint's client
    (:func:`request_fields`), made anew by each call (each attempt): the reply's JSON bytes,
    or a :mod:`.failures` error."""
    fields, options = request_fields(body, parameters)
    return functools.partial(endpoint.client.post, path, fields, options)


def json_body(content: bytes) -> Any:
    """The JSON of a reply; ``None`` when it is not JSON (an HTML error page)."""
    try:
        return json.loads(content)
    except (TypeError, ValueError):
        return None
