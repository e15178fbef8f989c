"""One configured model at one OpenAI-compatible endpoint: its SDK client, its API key, the
request parameters it takes, and the limits (a :class:`Lane`) that every call to it shares.

See docs/llm.md (configuration).
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from aiolimiter import AsyncLimiter

from graphrag_eval.config.llm import EmbeddingConfig, GenerationConfig, LLMConfig
from graphrag_eval.config.secrets import mask_url_credentials, secret_values, url_credentials
from graphrag_eval.errors import CallFailed, ConfigError
from graphrag_eval.llm.litellm_client import LiteLLMClient, uses_litellm
from graphrag_eval.llm.redaction import Redactor

if TYPE_CHECKING:
    import httpx2  # the OpenAI SDK's HTTP client (the 'llm' extra)

__all__ = ["Endpoint", "Lane"]

_DEFAULT_BASE_URLS = {
    "ollama": "http://localhost:11434/v1",
    "vllm": "http://localhost:8000/v1",
}
_KEY_ENV = {"azure": "AZURE_OPENAI_API_KEY"}


class Lane:
    """The limits shared by every call to one endpoint and model: at most
    ``llm.max_concurrency`` calls in flight, and the optional requests- and tokens-per-minute
    limits."""

    def __init__(self, config: LLMConfig) -> None:
        self.slots = asyncio.Semaphore(config.max_concurrency)
        self.requests = (
            AsyncLimiter(config.requests_per_minute, 60) if config.requests_per_minute else None
        )
        self.tokens = (
            AsyncLimiter(config.tokens_per_minute, 60) if config.tokens_per_minute else None
        )

    @asynccontextmanager
    async def slot(self, tokens: int) -> AsyncIterator[None]:
        """Hold a place in the lane for one request of about ``tokens`` tokens."""
        async with self.slots:
            if self.requests is not None:
                await self.requests.acquire()
            if self.tokens is not None:
                await self.tokens.acquire(min(tokens, self.tokens.max_rate))
            yield


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
        redactor.add(*url_credentials(settings.base_url))
        if uses_litellm(settings.provider):  # not OpenAI-compatible: the 'litellm' extra
            self.client: Any = _litellm_client(role, settings, config, redactor, transport)
            self.base_url: str | None = self.client.base_url
        else:
            openai = _sdk(role)
            self.base_url = settings.base_url or _DEFAULT_BASE_URLS.get(settings.provider)
            api_key = _api_key(role, settings)
            redactor.add(api_key)
            self.client = _sdk_client(
                openai, settings, self.base_url, api_key, config.timeout_s, transport
            )
        # What identifies the endpoint in cache keys (never the key itself).
        base = mask_url_credentials(str(self.client.base_url).rstrip("/"))
        self.identity = f"{settings.provider}:{base}"
        self.lane = Lane(config)
        create = (
            self.client.chat.completions.create
            if role == "generation"
            else self.client.embeddings.create
        )
        self.request_parameters = _sdk_parameters(create, settings)
        """The config's extra request parameters, split once as the SDK takes them."""
        self.structured = (
            settings.structured_output if isinstance(settings, GenerationConfig) else "prompt"
        )
        self.schema_keywords = True
        """Whether its structured output takes the list limits of a tight schema (``enum``,
        ``minItems``, ``maxItems``); false once it rejected them (docs/llm.md)."""
        self.refused: str | None = None
        """Why the endpoint refused a request (bad key, unknown model): no more calls."""

    def ensure_usable(self) -> None:
        """Raise :class:`CallFailed` when the endpoint has refused a request before."""
        if self.refused is not None:
            raise CallFailed(self.refused)

    def shares_model_with(self, other: Endpoint) -> bool:
        """Whether both serve the same model at the same endpoint (and so share one lane)."""
        return (self.identity, self.model) == (other.identity, other.model)

    async def close(self) -> None:
        """Close the HTTP client."""
        await self.client.close()


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
    timeout_s: float,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> Any:
    """The OpenAI SDK's async client for the endpoint (retries are the engine's own);
    ``transport``: send through it instead of the network."""
    options: dict[str, Any] = {"max_retries": 0, "timeout": timeout_s}
    if transport is not None:
        options["http_client"] = openai.DefaultAsyncHttpxClient(transport=transport)
    if settings.provider == "azure":
        return openai.AsyncAzureOpenAI(
            azure_endpoint=base_url or "",
            api_key=api_key,
            api_version=settings.api_version,
            **options,
        )
    return openai.AsyncOpenAI(api_key=api_key or "not-needed", base_url=base_url, **options)


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


def _sdk_parameters(
    create: Callable[..., Any], settings: GenerationConfig | EmbeddingConfig
) -> dict[str, Any]:
    """The config's extra request parameters, as the SDK takes them: the ones its ``create``
    declares as keywords, and the rest (``top_k``, ``min_p``, ...) in ``extra_body``."""
    declared = set(inspect.signature(create).parameters)
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
