"""The batch providers by name (:func:`register_batch_provider`), and which one a run with
``llm.batch: true`` uses (:func:`batch_provider_for`): ``llm.batch_provider`` when set, else
the judge's ``provider``. A judge without one is a configuration error naming the option,
before anything is sent (docs/llm.md, batch mode).

The built-in providers are modules of this package, imported when first used: each defines
``batch_provider(spec: ClientSpec) -> BatchProvider`` (:data:`BUILT_IN`). A provider of
another name registers its factory here.
"""

from __future__ import annotations

import difflib
import importlib
import urllib.parse
from collections.abc import Callable

from graphrag_eval.config.llm import LLMConfig
from graphrag_eval.config.secrets import mask_url_credentials
from graphrag_eval.errors import ConfigError
from graphrag_eval.llm.batch.protocol import BatchProvider
from graphrag_eval.llm.providers import ClientSpec

__all__ = [
    "BUILT_IN",
    "OPENAI_HOST",
    "BatchFactory",
    "batch_provider_for",
    "batch_provider_name",
    "register_batch_provider",
    "registered_batch_providers",
    "unregister_batch_provider",
]

BatchFactory = Callable[[ClientSpec], BatchProvider]
"""Makes the batch provider of the judge's endpoint (``spec``: the same as its synchronous
client's, :mod:`graphrag_eval.llm.providers`); raises :class:`ConfigError` when it cannot
(no key, an endpoint it cannot serve)."""

BUILT_IN = {
    "openai": "graphrag_eval.llm.batch.openai",
    "anthropic": "graphrag_eval.llm.batch.anthropic",
}
"""The built-in batch providers: name -> module (defining ``batch_provider``)."""

OPENAI_HOST = "api.openai.com"
"""The host whose endpoints have OpenAI's Batch API without ``llm.batch_provider``."""

_FACTORIES: dict[str, BatchFactory] = {}


def register_batch_provider(name: str, factory: BatchFactory) -> BatchFactory | None:
    """Give judges of batch provider ``name`` the providers ``factory`` makes; the factory it
    replaces, if any."""
    previous = _FACTORIES.get(name)
    _FACTORIES[name] = factory
    return previous


def unregister_batch_provider(name: str) -> None:
    _FACTORIES.pop(name, None)


def registered_batch_providers() -> list[str]:
    """Every batch provider name a run can use (registered or built in)."""
    return sorted({*_FACTORIES, *(name for name in BUILT_IN if _built_in(name) is not None)})


def batch_provider_name(config: LLMConfig) -> str:
    """The batch provider of the judge of ``config`` (which has ``llm.batch: true``);
    :class:`ConfigError` naming the option when it has none."""
    settings = config.generation
    if settings is None:
        raise ConfigError(
            "batch mode needs a judge (llm.generation), and the config has none",
            field="llm.batch",
        )
    name = config.batch_provider or settings.provider
    if config.batch_provider is not None and _factory(name) is None:
        known = registered_batch_providers()
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        raise ConfigError(
            f"no batch provider {name!r}"
            + (f" (did you mean {close[0]!r}?)" if close else "")
            + f"; the batch providers are {', '.join(known)}",
            field="llm.batch_provider",
        )
    if _factory(name) is None:
        raise ConfigError(
            f"the judge's provider {name!r} has no batch API graphrag-eval can use "
            f"(batch providers: {', '.join(registered_batch_providers())}); set llm.batch: "
            "false, or llm.batch_provider for a server that has one of these batch APIs",
            field="llm.batch",
        )
    if config.batch_provider is None and name == "openai" and settings.base_url:
        host = urllib.parse.urlsplit(settings.base_url).hostname or ""
        if host != OPENAI_HOST:
            where = mask_url_credentials(settings.base_url)
            raise ConfigError(
                f"the judge at {where} is not OpenAI's API, whose Batch API batch "
                "mode uses; if that server has the same Batch API (/files, /batches), set "
                "llm.batch_provider: openai, else llm.batch: false",
                field="llm.batch_provider",
            )
    return name


def batch_provider_for(spec: ClientSpec) -> BatchProvider:
    """The batch provider of ``spec``'s endpoint (the judge), checked by
    :func:`batch_provider_name`."""
    name = batch_provider_name(spec.config)
    factory = _factory(name)
    assert factory is not None  # checked above
    return factory(spec)


def _factory(name: str) -> BatchFactory | None:
    return _FACTORIES.get(name) or _built_in(name)


def _built_in(name: str) -> BatchFactory | None:
    module_name = BUILT_IN.get(name)
    if module_name is None:
        return None
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        return None  # not written yet
    factory: BatchFactory = module.batch_provider
    return factory
