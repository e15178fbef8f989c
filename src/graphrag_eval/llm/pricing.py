"""What judge and embedding calls cost: a built-in price table, overridable in config.

Prices are US dollars per million tokens, as the providers list them (standard tier, checked
2026-11). A model is looked up by its exact name, then without a provider prefix
(``openai/gpt-4o-mini``), an Ollama tag (``llama3.1:8b``) and a snapshot suffix
(``gpt-4o-mini-2024-07-18``, ``gpt-4-0613``); nothing else is guessed (``o1-pro`` is not
``o1``). A model the table does not know costs 0 and
the run summary says so; set ``llm.prices`` for it.

Where an endpoint reports no usage (and in a dry run), tokens are estimated from the text
(:func:`estimate_tokens`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from graphrag_eval.config.llm import ModelPrice

__all__ = [
    "BUILTIN_PRICES",
    "CONTEXT_WINDOWS",
    "DEFAULT_CONTEXT_WINDOW",
    "PriceTable",
    "TokenUsage",
    "context_window",
    "estimate_tokens",
]

_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{4})$")

BUILTIN_PRICES: Mapping[str, tuple[float, float]] = {
    # chat models: (input, output) per million tokens
    "gpt-5": (1.25, 10.0),
    "gpt-5-mini": (0.25, 2.0),
    "gpt-5-nano": (0.05, 0.40),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4o": (2.50, 10.0),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4-turbo": (10.0, 30.0),
    "gpt-3.5-turbo": (0.50, 1.50),
    "o1": (15.0, 60.0),
    "o1-mini": (1.10, 4.40),
    "o3": (2.0, 8.0),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    # embedding models: input only
    "text-embedding-3-small": (0.02, 0.0),
    "text-embedding-3-large": (0.13, 0.0),
    "text-embedding-ada-002": (0.10, 0.0),
}


CONTEXT_WINDOWS: Mapping[str, int] = {
    # the input tokens a chat model takes (the default of llm.max_input_tokens)
    "gpt-5": 272_000,
    "gpt-5-mini": 272_000,
    "gpt-5-nano": 272_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
}
DEFAULT_CONTEXT_WINDOW = 128_000
"""The context window assumed for a model the table does not know."""


def _candidates(model: str) -> tuple[str, ...]:
    """``model`` and the names it is looked up by: without a provider prefix, an Ollama tag
    and a snapshot suffix."""
    name = model.rsplit("/", 1)[-1]
    untagged = name.split(":", 1)[0]
    return (model, name, untagged, _SNAPSHOT.sub("", untagged))


EMBEDDING_WINDOWS: Mapping[str, int] = {
    # the input tokens an embedding model takes (the default of llm.embedding.max_input_tokens)
    "text-embedding-3-small": 8_191,
    "text-embedding-3-large": 8_191,
    "text-embedding-ada-002": 8_191,
}
DEFAULT_EMBEDDING_WINDOW = 8_192
"""The input limit assumed for an embedding model the table does not know."""


def embedding_window(model: str) -> int:
    """The input tokens embedding ``model`` takes, from :data:`EMBEDDING_WINDOWS` (looked up
    as prices are), else :data:`DEFAULT_EMBEDDING_WINDOW`."""
    for candidate in _candidates(model):
        if candidate in EMBEDDING_WINDOWS:
            return EMBEDDING_WINDOWS[candidate]
    return DEFAULT_EMBEDDING_WINDOW


def context_window(model: str) -> int:
    """The input tokens ``model`` takes, from :data:`CONTEXT_WINDOWS` (looked up as prices
    are), else :data:`DEFAULT_CONTEXT_WINDOW`."""
    for candidate in _candidates(model):
        if candidate in CONTEXT_WINDOWS:
            return CONTEXT_WINDOWS[candidate]
    return DEFAULT_CONTEXT_WINDOW


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens of one or more calls, as the provider reported them."""

    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def estimate_tokens(text: str) -> int:
    """A provider-independent token estimate (about four characters per token)."""
    return max(1, math.ceil(len(text) / 4))


class PriceTable:
    """Prices by model: the built-in table overlaid with the config's ``llm.prices``."""

    def __init__(self, overrides: Mapping[str, ModelPrice] | None = None) -> None:
        self._prices = dict(BUILTIN_PRICES)
        for model, price in (overrides or {}).items():
            self._prices[model] = (price.input_per_million, price.output_per_million)

    def price(self, model: str) -> tuple[float, float] | None:
        """``(input, output)`` dollars per million tokens, or ``None`` when unknown."""
        for candidate in _candidates(model):
            if candidate in self._prices:
                return self._prices[candidate]
        return None

    def add_default(self, model: str, price: tuple[float, float] | None) -> None:
        """Price ``model`` at ``price`` (dollars per million input and output tokens) when
        neither the built-in table nor ``llm.prices`` does."""
        if price is not None and self.price(model) is None:
            self._prices[model] = price

    def cost_usd(self, model: str, usage: TokenUsage) -> float:
        """The dollars ``usage`` costs on ``model`` (0 for an unknown model)."""
        price = self.price(model)
        if price is None:
            return 0.0
        return (usage.input_tokens * price[0] + usage.output_tokens * price[1]) / 1_000_000
