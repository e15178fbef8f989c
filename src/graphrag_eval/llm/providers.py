"""The registry that gives each configured ``provider`` its endpoints' client
(:func:`register_provider`), every one a :class:`~.chat_client.ChatClient`.

Registered here: ``openai``, ``openai-compatible``, ``ollama`` and ``vllm`` go through the
engine's own HTTP client (:mod:`.wire`; the ``openai`` SDK's when aiohttp is missing),
``azure`` through the ``openai`` SDK's (:mod:`.sdk_client`: Azure's deployment paths and
authentication), and every other name through LiteLLM (:mod:`.litellm_client`, the
``litellm`` extra), which checks that it knows the provider. Everything after the client
(limits, retries, the breaker, the cache, cost, redaction) is shared: nothing reads which
client an endpoint has. See docs/llm.md (providers) and docs/architecture.md (where to add
a provider).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from graphrag_eval.config.llm import EmbeddingConfig, GenerationConfig, LLMConfig
from graphrag_eval.config.secrets import url_credentials
from graphrag_eval.errors import ConfigError
from graphrag_eval.llm.chat_client import ChatClient, RequestOptions
from graphrag_eval.llm.litellm_client import LiteLLMClient
from graphrag_eval.llm.redaction import Redactor
from graphrag_eval.llm.sdk_client import SDKClient, aiohttp_installed
from graphrag_eval.llm.wire import Timeouts, WireClient, default_base_url

__all__ = [
    "ChatClient",
    "ClientFactory",
    "ClientSpec",
    "RequestOptions",
    "api_key_of",
    "client_for",
    "register_provider",
    "registered_providers",
    "unregister_provider",
]


@dataclass(frozen=True, slots=True)
class ClientSpec:
    """What a provider's factory is given to make an endpoint's client."""

    role: str
    """``generation`` (the judge) or ``embedding``; messages name the config section
    ``llm.<role>``."""
    settings: GenerationConfig | EmbeddingConfig
    config: LLMConfig
    """The whole ``llm`` section (timeouts)."""
    redactor: Redactor
    """Every secret the client sends (its key) is added to it, to be scrubbed from messages."""


ClientFactory = Callable[[ClientSpec], ChatClient]
"""Makes the client of one endpoint; raises :class:`ConfigError` when it cannot (an extra is
missing, no key)."""

_PROVIDERS: dict[str, ClientFactory] = {}
_DEFAULT_BASE_URLS = {
    "ollama": "http://localhost:11434/v1",
    "vllm": "http://localhost:8000/v1",
}
_KEY_ENV = {"azure": "AZURE_OPENAI_API_KEY"}


def register_provider(name: str, factory: ClientFactory) -> ClientFactory | None:
    """Give endpoints of ``provider: name`` the clients ``factory`` makes; the factory it
    replaces (``None``: the provider went through LiteLLM). The name must pass the config's
    check of provider names (docs/llm.md)."""
    previous = _PROVIDERS.get(name)
    _PROVIDERS[name] = factory
    return previous


def unregister_provider(name: str) -> None:
    """Remove ``name``'s factory; its endpoints go through LiteLLM again."""
    _PROVIDERS.pop(name, None)


def registered_providers() -> list[str]:
    """The provider names with a factory of their own (the others go through LiteLLM)."""
    return sorted(_PROVIDERS)


def client_for(spec: ClientSpec) -> ChatClient:
    """The client of ``spec``'s endpoint, made by its provider's factory: a registered one,
    else LiteLLM's (which raises :class:`ConfigError` for a provider it does not know)."""
    factory = _PROVIDERS.get(spec.settings.provider, _litellm)
    return factory(spec)


def _litellm(spec: ClientSpec) -> ChatClient:
    """A provider that is not OpenAI-compatible, through LiteLLM (the ``litellm`` extra)."""
    return LiteLLMClient(spec.role, spec.settings, spec.config.timeout_s, spec.redactor)


def _openai_compatible(spec: ClientSpec) -> ChatClient:
    """The engine's own client (:mod:`.wire`), or the SDK's when aiohttp is not installed."""
    settings = spec.settings
    base_url = settings.base_url or _DEFAULT_BASE_URLS.get(settings.provider)
    api_key = _api_key(spec)
    spec.redactor.add(api_key, *url_credentials(base_url or default_base_url()))
    if not aiohttp_installed():
        return SDKClient(spec.role, settings, base_url, api_key, spec.config)
    timeouts = Timeouts(spec.config.connect_timeout_s, spec.config.timeout_s)
    return WireClient(base_url or default_base_url(), api_key, timeouts)


def _azure(spec: ClientSpec) -> ChatClient:
    """Azure OpenAI through the SDK's client (its deployment paths and ``api-version``)."""
    api_key = _api_key(spec)
    spec.redactor.add(api_key, *url_credentials(spec.settings.base_url or ""))
    return SDKClient(spec.role, spec.settings, spec.settings.base_url, api_key, spec.config)


def api_key_of(spec: ClientSpec) -> str | None:
    """The API key of ``spec``'s endpoint (``api_key``, ``api_key_env`` or the provider's
    variable); :class:`ConfigError` when OpenAI or Azure has none. Also for batch providers
    (:mod:`.batch`)."""
    return _api_key(spec)


def _api_key(spec: ClientSpec) -> str | None:
    settings, role = spec.settings, spec.role
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


for _name in ("openai", "openai-compatible", "ollama", "vllm"):
    register_provider(_name, _openai_compatible)
register_provider("azure", _azure)
