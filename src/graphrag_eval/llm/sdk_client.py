"""The ``openai`` SDK's client as a :class:`~.chat_client.ChatClient`: Azure OpenAI (its
deployment paths and authentication are the SDK's), and OpenAI-compatible endpoints when
aiohttp is not installed. Requests go through the SDK's ``post`` (its documented way to make
custom requests), never its typed ``create``, which walks every message and level of a JSON
schema against its type hints and builds objects from each reply (docs/benchmarks.md, "Judge
client under load"). Its errors, and LiteLLM's (which subclass them), become
:mod:`.failures`' (:func:`sdk_failures`). See docs/llm.md.
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from graphrag_eval.config.llm import EmbeddingConfig, GenerationConfig, LLMConfig
from graphrag_eval.errors import ConfigError
from graphrag_eval.llm.failures import StatusError, unreachable

if TYPE_CHECKING:
    from graphrag_eval.llm.chat_client import RequestOptions

__all__ = ["SDKClient", "aiohttp_installed", "sdk_failures", "split_parameters"]


class SDKClient:
    """One endpoint's ``openai`` SDK client (retries are the engine's own), with the connect
    timeout apart from the others."""

    def __init__(
        self,
        role: str,
        settings: GenerationConfig | EmbeddingConfig,
        base_url: str | None,
        api_key: str | None,
        config: LLMConfig,
    ) -> None:
        openai = _sdk(role)
        timeout = openai.Timeout(config.timeout_s, connect=config.connect_timeout_s)
        options: dict[str, Any] = {"max_retries": 0, "timeout": timeout}
        if aiohttp_installed():
            # The SDK's aiohttp transport (the 'llm' extra installs it): about half the CPU
            # per request of its default one (docs/benchmarks.md, "Judge client under load").
            options["http_client"] = openai.DefaultAioHttpClient(timeout=timeout)
        if settings.provider == "azure":
            self._client: Any = openai.AsyncAzureOpenAI(
                azure_endpoint=base_url or "",
                api_key=api_key,
                api_version=settings.api_version,
                **options,
            )
        else:
            self._client = openai.AsyncOpenAI(
                api_key=api_key or "not-needed", base_url=base_url, **options
            )
        self.base_url = str(self._client.base_url)

    def request_parameters(self, role: str, configured: Mapping[str, Any]) -> dict[str, Any]:
        """As the SDK's ``create`` takes them: the ones it declares as keywords, the rest
        (``top_k``, ``min_p``, ...) in ``extra_body``."""
        namespace = (
            self._client.chat.completions if role == "generation" else self._client.embeddings
        )
        return split_parameters(configured, set(inspect.signature(namespace.create).parameters))

    async def post(self, path: str, fields: dict[str, Any], options: RequestOptions) -> bytes:
        import httpx2

        with sdk_failures():
            response = await self._client.post(
                path, cast_to=httpx2.Response, body=fields, options=options
            )
        return bytes(response.content)

    def price(self, model: str) -> tuple[float, float] | None:
        return None  # the SDK knows no prices

    async def close(self) -> None:
        await self._client.close()


def split_parameters(configured: Mapping[str, Any], declared: set[str]) -> dict[str, Any]:
    """``configured`` with the keys not in ``declared`` (or naming the request itself) moved
    into ``extra_body``."""
    params: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in configured.items():
        if key in declared and key not in ("model", "messages", "input", "extra_body"):
            params[key] = value
        else:
            extra[key] = value
    if extra:
        params["extra_body"] = extra
    return params


@contextmanager
def sdk_failures() -> Iterator[None]:
    """The ``openai`` package's errors (LiteLLM's subclass them) as :mod:`.failures` has
    them."""
    import openai

    try:
        yield
    except openai.APIStatusError as exc:
        headers = getattr(getattr(exc, "response", None), "headers", None) or {}
        raise StatusError(exc.status_code, exc.message, exc.body, headers) from exc
    except openai.APIConnectionError as exc:  # timeouts too
        raise unreachable(exc, isinstance(exc, openai.APITimeoutError)) from exc


def aiohttp_installed() -> bool:
    return importlib.util.find_spec("aiohttp") is not None


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
