"""Providers that are not OpenAI-compatible (``anthropic``, ``bedrock``, ``vertex_ai``,
``gemini``, ``mistral``, ...), through LiteLLM: the ``litellm`` extra (docs/llm.md, other
providers).

A :class:`LiteLLMClient` is the :class:`~.chat_client.ChatClient` of every provider the
registry has no factory of its own for (:mod:`.providers`). It takes the OpenAI API's two
requests (chat completions, embeddings), makes them through LiteLLM, and gives back that
API's JSON and :mod:`.failures`' errors (LiteLLM's exceptions subclass the ``openai``
package's: ``RateLimitError``, ``APITimeoutError``, ``AuthenticationError``, ...). So the
engine's limits, retries, refusals, cache, cost accounting, structured output (LiteLLM turns
``response_format`` into the provider's own form, a forced tool call for Anthropic) and
redaction apply to these providers unchanged; only the client differs.

LiteLLM is imported only when such a provider is configured (it takes seconds to import),
and never reaches the network on its own: it would fetch its model price map, Anthropic's
beta headers and its blog feed from the web unless told to use its bundled copies, which
:func:`import_litellm` does before importing it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graphrag_eval.config.llm import (
    EmbeddingConfig,
    GenerationConfig,
)
from graphrag_eval.errors import ConfigError
from graphrag_eval.llm.redaction import Redactor
from graphrag_eval.llm.sdk_client import sdk_failures

if TYPE_CHECKING:
    from graphrag_eval.llm.chat_client import RequestOptions

__all__ = ["LiteLLMClient", "import_litellm"]

EXTRA_HINT = "pip install 'graphrag-eval[litellm]'"

_OFFLINE = {
    "LITELLM_OFFLINE_MODE": "true",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
    "LITELLM_LOCAL_BLOG_POSTS": "True",
}
"""Set before LiteLLM is imported: its bundled price map, headers and feed, never the web's."""

_PROVIDER_SECRETS = {
    "bedrock": ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK"),
    "sagemaker": ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "vertex_ai": ("VERTEXAI_CREDENTIALS",),
    "together_ai": ("TOGETHERAI_API_KEY", "TOGETHER_API_KEY"),
    "watsonx": ("WATSONX_APIKEY", "WATSONX_TOKEN"),
}
"""Environment variables LiteLLM reads credentials from, besides ``<PROVIDER>_API_KEY``:
their values are scrubbed from every message like a configured key."""


_open_clients = 0
"""LiteLLM clients open in this process; LiteLLM's HTTP clients are closed with the last."""


def import_litellm(role: str, provider: str) -> Any:
    """The ``litellm`` module, set up to stay off the network and quiet; a
    :class:`ConfigError` naming the extra when it is not installed, or when it does not know
    ``provider``."""
    os.environ.update(_OFFLINE)
    try:
        import litellm
    except ImportError:
        raise ConfigError(
            f"provider '{provider}' needs the 'litellm' extra: {EXTRA_HINT}",
            field=f"llm.{role}.provider",
        ) from None
    litellm.suppress_debug_info = True  # no "Provider List: <url>" banners on stderr
    litellm.disable_hf_tokenizer_download = True
    litellm.telemetry = False  # older versions' usage pings
    known = {str(getattr(name, "value", name)) for name in litellm.provider_list}
    if provider not in known:
        raise ConfigError(
            f"unknown provider '{provider}' (neither OpenAI-compatible nor a LiteLLM provider)",
            field=f"llm.{role}.provider",
        )
    return litellm


@dataclass(frozen=True, slots=True)
class _Embedding:
    index: int
    embedding: list[float]


@dataclass(frozen=True, slots=True)
class _Embeddings:
    """An embeddings reply with the attributes the SDK's has (``data``, ``usage``)."""

    data: list[_Embedding]
    usage: Any


def _dumped(value: Any) -> Any:
    """A LiteLLM reply object as plain JSON data (pydantic models dump themselves)."""
    dump = getattr(value, "model_dump", None)
    return dump() if callable(dump) else value


class LiteLLMClient:
    """One model of a LiteLLM provider (see the module docstring). Retries are the engine's
    own: LiteLLM makes none."""

    def __init__(
        self,
        role: str,
        settings: GenerationConfig | EmbeddingConfig,
        timeout_s: float,
        redactor: Redactor,
    ) -> None:
        self._litellm = import_litellm(role, settings.provider)
        self.provider = settings.provider
        api_key = _api_key(role, settings)
        redactor.add(api_key, *_provider_secrets(settings.provider))
        self.base_url = settings.base_url or "default"
        """The ``api_base`` given to LiteLLM (``default``: the provider's own)."""
        options: dict[str, Any] = {"timeout": timeout_s, "max_retries": 0, "num_retries": 0}
        if settings.base_url:
            options["api_base"] = settings.base_url
        if api_key is not None:
            options["api_key"] = api_key
        self._options = options
        if api_key is None:
            self._check_environment(role, settings)
        global _open_clients
        _open_clients += 1
        self._closed = False

    def model_name(self, model: str) -> str:
        """LiteLLM's name of ``model``: prefixed with the provider, as 6.4 configs name it."""
        prefix = f"{self.provider}/"
        return model if model.startswith(prefix) else prefix + model

    def price(self, model: str) -> tuple[float, float] | None:
        """What ``model`` costs in LiteLLM's bundled price map (dollars per million input
        and output tokens), the price of a model the built-in table does not know."""
        costs = self._litellm.model_cost
        info = costs.get(self.model_name(model)) or costs.get(model)
        if not isinstance(info, dict):
            return None
        per_input, per_output = info.get("input_cost_per_token"), info.get("output_cost_per_token")
        if not isinstance(per_input, int | float):
            return None
        output = per_output if isinstance(per_output, int | float) else 0.0
        return per_input * 1_000_000, output * 1_000_000

    async def complete(self, *, model: str, messages: list[dict[str, str]], **params: Any) -> Any:
        """A chat completion (``litellm.acompletion``), shaped as the SDK's."""
        with _transport_errors():
            return await self._litellm.acompletion(
                model=self.model_name(model), messages=messages, **self._options, **_flat(params)
            )

    async def embed(self, *, model: str, input: list[str], **params: Any) -> _Embeddings:
        """Embeddings (``litellm.aembedding``), shaped as the SDK's."""
        with _transport_errors():
            response = await self._litellm.aembedding(
                model=self.model_name(model), input=input, **self._options, **_flat(params)
            )
        data = [
            _Embedding(int(_field(item, "index")), list(_field(item, "embedding")))
            for item in response.data
        ]
        return _Embeddings(data, getattr(response, "usage", None))

    def request_parameters(self, role: str, configured: Mapping[str, Any]) -> dict[str, Any]:
        """All in ``extra_body`` (as the SDK's form has the ones it does not declare):
        LiteLLM takes each as a keyword of its own."""
        return {"extra_body": dict(configured)} if configured else {}

    async def post(self, path: str, fields: dict[str, Any], options: RequestOptions) -> bytes:
        """An OpenAI chat-completions or embeddings request body, made through LiteLLM; the
        reply as that API's JSON."""
        fields = dict(fields)
        model = fields.pop("model")
        headers = options.get("headers")
        if headers:
            fields["extra_headers"] = headers
        with sdk_failures():
            if path.rstrip("/").endswith("embeddings"):
                fields.pop(
                    "encoding_format", None
                )  # LiteLLM gives floats; not every provider takes it
                embedded = await self.embed(model=model, input=fields.pop("input"), **fields)
                usage = embedded.usage
                reply = {
                    "data": [{"index": e.index, "embedding": e.embedding} for e in embedded.data],
                    "usage": usage if isinstance(usage, dict) else _dumped(usage),
                }
            else:
                messages = fields.pop("messages")
                reply = _dumped(await self.complete(model=model, messages=messages, **fields))
        return json.dumps(reply).encode()

    async def close(self) -> None:
        """Close LiteLLM's HTTP clients when no other client of this process is open: it
        keeps them itself, shared by every caller (per event loop)."""
        global _open_clients
        if self._closed:
            return
        self._closed = True
        _open_clients -= 1
        if _open_clients == 0:
            from litellm.llms.custom_httpx.async_client_cleanup import (
                close_litellm_async_clients,
            )

            await close_litellm_async_clients()  # type: ignore[no-untyped-call]
            self._litellm.in_memory_llm_clients_cache.flush_cache()

    def _check_environment(self, role: str, settings: GenerationConfig | EmbeddingConfig) -> None:
        """A :class:`ConfigError` now, not a refused call later, when the provider's key
        variable is not set (other credentials, AWS's or Google's, are left to LiteLLM)."""
        found = self._litellm.validate_environment(model=self.model_name(settings.model))
        missing = [str(name) for name in found.get("missing_keys") or []]
        keys_only = all(name.endswith("_API_KEY") for name in missing)
        if not found.get("keys_in_environment") and missing and keys_only:
            raise ConfigError(
                f"no API key: set the environment variable {' or '.join(missing)} "
                f"(or llm.{role}.api_key)",
                field=f"llm.{role}",
            )


@contextmanager
def _transport_errors() -> Iterator[None]:
    """LiteLLM reports a connection that failed or timed out (refused, DNS, TLS) as a 500
    from the server; raise it as the SDK does, an ``APIConnectionError`` or
    ``APITimeoutError``, so the engine tells it from a server's error."""
    import httpx
    import openai

    try:
        yield
    except openai.APIStatusError as exc:
        request: Any = getattr(exc, "request", None)
        cause: BaseException | None = exc
        for _ in range(10):  # the exceptions it was raised from, not an unbounded walk
            cause = (cause.__cause__ or cause.__context__) if cause is not None else None
            if isinstance(cause, httpx.TimeoutException | TimeoutError):
                raise openai.APITimeoutError(request=request) from None
            if isinstance(cause, httpx.TransportError | OSError):
                raise openai.APIConnectionError(message=str(cause), request=request) from None
        raise


def _api_key(role: str, settings: GenerationConfig | EmbeddingConfig) -> str | None:
    """The configured key (``api_key``, or the variable ``api_key_env`` names); ``None``:
    LiteLLM reads the provider's own variable (``ANTHROPIC_API_KEY``, ...)."""
    if settings.api_key is not None:
        return settings.api_key.get_secret_value()
    if settings.api_key_env is None:
        return None
    value = os.environ.get(settings.api_key_env)
    if not value:
        raise ConfigError(
            f"no API key: set the environment variable {settings.api_key_env} "
            f"(or llm.{role}.api_key)",
            field=f"llm.{role}",
        )
    return value


def _provider_secrets(provider: str) -> list[str]:
    """The values of the variables LiteLLM may take ``provider``'s credentials from."""
    own = re.sub(r"[^A-Z0-9]", "_", provider.upper()) + "_API_KEY"
    names = (own, *_PROVIDER_SECRETS.get(provider, ()))
    return [os.environ[name] for name in names if os.environ.get(name)]


def _flat(params: dict[str, Any]) -> dict[str, Any]:
    """The request parameters with ``extra_body`` (where the endpoint puts the ones the SDK
    does not declare) spread out: LiteLLM takes them all as keywords."""
    flat = dict(params)
    extra = flat.pop("extra_body", None)
    if isinstance(extra, dict):
        flat.update(extra)
    return flat


def _field(item: Any, name: str) -> Any:
    return item[name] if isinstance(item, dict) else getattr(item, name)
