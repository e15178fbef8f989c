"""One configured model at one endpoint: its client (the engine's own for OpenAI-compatible
endpoints, :mod:`.wire`; the ``openai`` SDK's for Azure and the transport hook; LiteLLM's for
other providers), its API key, the request parameters it takes, the limits (a
:class:`~.lane.Lane`) that every call to it shares, and its circuit breaker (a
:class:`Breaker`): an endpoint that refuses requests or cannot be reached gets no more calls.

See docs/llm.md (configuration).
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import json
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from graphrag_eval.config.llm import EmbeddingConfig, GenerationConfig, LLMConfig
from graphrag_eval.config.secrets import (
    mask_url_credentials,
    proxy_credentials,
    secret_values,
    url_credentials,
)
from graphrag_eval.errors import CallFailed, ConfigError
from graphrag_eval.llm.failures import StatusError, unreachable
from graphrag_eval.llm.lane import Lane
from graphrag_eval.llm.litellm_client import LiteLLMClient, uses_litellm
from graphrag_eval.llm.redaction import Redactor
from graphrag_eval.llm.wire import Timeouts, WireClient, default_base_url

if TYPE_CHECKING:
    import httpx2  # the OpenAI SDK's HTTP client (the 'llm' extra)

__all__ = [
    "BREAKER_FAILURES",
    "BREAKER_UNUSABLE",
    "Breaker",
    "Endpoint",
    "Lane",
    "json_body",
    "raw_request",
]

_DEFAULT_BASE_URLS = {
    "ollama": "http://localhost:11434/v1",
    "vllm": "http://localhost:8000/v1",
}
_KEY_ENV = {"azure": "AZURE_OPENAI_API_KEY"}


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
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        """``transport``: an httpx transport the SDK client sends through instead of the
        network (a testing/embedding hook, see :func:`~graphrag_eval.llm.engine.build_engine`)."""
        self.role = role
        self.settings = settings
        self.model = settings.model
        redactor.add(*secret_values(settings.request_parameters))
        redactor.add(*url_credentials(settings.base_url), *proxy_credentials())
        if uses_litellm(settings.provider):  # not OpenAI-compatible: the 'litellm' extra
            self.client: Any = _litellm_client(role, settings, config, redactor, transport)
            self.base_url: str | None = self.client.base_url
        else:
            self.base_url = settings.base_url or _DEFAULT_BASE_URLS.get(settings.provider)
            api_key = _api_key(role, settings)
            redactor.add(api_key, *url_credentials(self.base_url or default_base_url()))
            if transport is None and settings.provider != "azure" and _aiohttp_installed():
                timeouts = Timeouts(config.connect_timeout_s, config.timeout_s)
                self.client = WireClient(self.base_url or default_base_url(), api_key, timeouts)
            else:  # Azure's deployment paths and auth, a transport: the SDK's own client
                openai = _sdk(role)
                self.client = _sdk_client(
                    openai, settings, self.base_url, api_key, config, transport
                )
        # What identifies the endpoint in cache keys (never the key itself).
        base = mask_url_credentials(str(self.client.base_url).rstrip("/"))
        self.identity = f"{settings.provider}:{base}"
        self.lane = Lane(config)
        label = "judge" if role == "generation" else "embedding endpoint"
        self.breaker = Breaker(f"{label} at {base}")
        self.request_parameters = _request_parameters(role, self.client, settings)
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


SDK_OPTIONS = {"extra_headers": "headers", "extra_query": "params", "timeout": "timeout"}
"""Request parameters that are options of the SDK's request (by the name its ``post`` takes),
not fields of the request body."""


def raw_request(
    client: Any, path: str, body: dict[str, Any], parameters: Mapping[str, Any]
) -> Callable[[], Awaitable[Any]]:
    """A POST of ``body`` to ``path`` through the endpoint's client: the engine's own
    (:mod:`.wire`), or an SDK client's ``post`` (its documented way to make custom requests:
    Azure's deployment paths and authentication are the SDK's), never its typed ``create``,
    which walks every message and level of a JSON schema against its type hints and builds
    objects from each reply (docs/benchmarks.md, "Judge client under load"). The reply is
    left as bytes to read as JSON; a failure is a :mod:`.failures` error.
    ``parameters``: the config's request parameters (:data:`SDK_OPTIONS` become the
    request's options, the rest, and ``extra_body``'s fields, go into the body)."""
    options = {SDK_OPTIONS[key]: value for key, value in parameters.items() if key in SDK_OPTIONS}
    fields = {
        key: value
        for key, value in parameters.items()
        if key not in SDK_OPTIONS and key != "extra_body"
    }
    fields.update(parameters.get("extra_body") or {})
    fields.update(body)
    if isinstance(client, WireClient):
        return functools.partial(client.post, path, fields, options)
    return functools.partial(_sdk_post, client, path, fields, options)


async def _sdk_post(client: Any, path: str, fields: dict[str, Any], options: Any) -> Any:
    """The request through an SDK client's ``post`` (or LiteLLM's, which raises the SDK's
    errors); its failures as :mod:`.failures` has them."""
    import httpx2
    import openai

    try:
        return await client.post(path, cast_to=httpx2.Response, body=fields, options=options)
    except openai.APIStatusError as exc:
        headers = getattr(getattr(exc, "response", None), "headers", None) or {}
        raise StatusError(exc.status_code, exc.message, exc.body, headers) from exc
    except openai.APIConnectionError as exc:  # timeouts too
        raise unreachable(exc, isinstance(exc, openai.APITimeoutError)) from exc


def json_body(response: Any) -> Any:
    """The JSON of a raw SDK response; ``None`` when it is not JSON (an HTML error page)."""
    try:
        return json.loads(response.content)
    except (AttributeError, TypeError, ValueError):
        return None


def _sdk(role: str) -> Any:
    """The ``openai`` module, or a :class:`ConfigError` naming the extra that brings it."""
    try:
        import openai
    except ImportError:
        raise ConfigError(
            "LLM calls need the 'llm' extra: pip install 'graphrag-eval[llm]'",
            field=f"llm.{role}",
        ) from None
    return openai


def _litellm_client(
    role: str,
    settings: GenerationConfig | EmbeddingConfig,
    config: LLMConfig,
    redactor: Redactor,
    transport: httpx2.AsyncBaseTransport | None,
) -> LiteLLMClient:
    """The client of a provider that is not OpenAI-compatible (``llm/litellm_client.py``)."""
    if transport is not None:
        raise ConfigError(
            f"the transport hook is for OpenAI-compatible endpoints, not '{settings.provider}'",
            field=f"llm.{role}.provider",
        )
    return LiteLLMClient(role, settings, config.timeout_s, redactor)


def _sdk_client(
    openai: Any,
    settings: GenerationConfig | EmbeddingConfig,
    base_url: str | None,
    api_key: str | None,
    config: LLMConfig,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> Any:
    """The OpenAI SDK's async client for the endpoint (retries are the engine's own), with
    the connect timeout apart from the others; ``transport``: send through it instead of the
    network."""
    timeout = openai.Timeout(config.timeout_s, connect=config.connect_timeout_s)
    options: dict[str, Any] = {"max_retries": 0, "timeout": timeout}
    if transport is not None:
        options["http_client"] = openai.DefaultAsyncHttpxClient(transport=transport)
    elif _aiohttp_installed():
        # The SDK's aiohttp transport (the 'llm' extra installs it): about half the CPU per
        # request of its default one, which bounds a run at high concurrency
        # (docs/benchmarks.md, "Judge client under load").
        options["http_client"] = openai.DefaultAioHttpClient(timeout=timeout)
    if settings.provider == "azure":
        return openai.AsyncAzureOpenAI(
            azure_endpoint=base_url or "",
            api_key=api_key,
            api_version=settings.api_version,
            **options,
        )
    return openai.AsyncOpenAI(api_key=api_key or "not-needed", base_url=base_url, **options)


def _aiohttp_installed() -> bool:
    return importlib.util.find_spec("aiohttp") is not None


def _api_key(role: str, settings: GenerationConfig | EmbeddingConfig) -> str | None:
    if settings.api_key is not None:
        return settings.api_key.get_secret_value()
    variable = settings.api_key_env or _KEY_ENV.get(settings.provider, "OPENAI_API_KEY")
    value = os.environ.get(variable)
    if value:
        return value
    if settings.provider in ("openai", "azure") or settings.api_key_env:
        raise ConfigError(
            f"no API key: set the environment variable {variable} (or llm.{role}.api_key)",
            field=f"llm.{role}",
        )
    return None  # a local server (Ollama, vLLM, ...) usually needs none


def _request_parameters(
    role: str, client: Any, settings: GenerationConfig | EmbeddingConfig
) -> dict[str, Any]:
    """The config's extra request parameters, as the client takes them: as they are for the
    engine's own (:func:`raw_request` puts them in the body), as the SDK's ``create`` takes
    them otherwise: the ones it declares as keywords, the rest (``top_k``, ``min_p``, ...) in
    ``extra_body``."""
    if isinstance(client, WireClient):
        return dict(settings.request_parameters)
    namespace = client.chat.completions if role == "generation" else client.embeddings
    declared = set(inspect.signature(namespace.create).parameters)
    params: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in settings.request_parameters.items():
        if key in declared and key not in ("model", "messages", "input", "extra_body"):
            params[key] = value
        else:
            extra[key] = value
    if extra:
        params["extra_body"] = extra
    return params
