"""What judge and embedding calls cost: a built-in price table, overridable in config.

Prices are US dollars per million tokens, as the providers list them (standard tier, checked
2026-11). A model is looked up by its exact name, then without a provider prefix
(``openai/gpt-4o-mini``), an Ollama tag (``llama3.1:8b``) and a snapshot suffix
(``gpt-4o-mini-2024-07-18``, ``gpt-4-0613``); nothing else is guessed (``o1-pro`` is not
``o1``). A model the table does not know costs 0 and
the run summary says so; set ``llm.prices`` for it.

Where an endpoint reports no usage (and in a dry run), tokens are estimated from the text
(:func:`estimate_tokens`).

In batch mode (``llm.batch``) the judge model's calls are priced at its provider's batch
price (:data:`BATCH_PRICE_SHARES`: OpenAI's Batch API and Anthropic's Message Batches charge
half the synchronous price, input and output tokens alike; docs/llm.md, "Batch prices").
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from graphrag_eval.config.llm import ModelPrice

__all__ = [
    "BATCH_PRICE_SHARES",
    "BUILTIN_PRICES",
    "CONTEXT_WINDOWS",
    "DEFAULT_CONTEXT_WINDOW",
    "PriceTable",
    "TokenUsage",
    "batch_price_share",
    "batch_prices_text",
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

BATCH_PRICE_SHARES: Mapping[str, float] = {
    # the share of the synchronous price a provider's batch API charges, input and output
    # tokens alike (OpenAI's Batch API, Anthropic's Message Batches; checked 2026-11)
    "openai": 0.5,
    "anthropic": 0.5,
}


def batch_price_share(provider: str) -> float | None:
    """The share of the synchronous price ``provider``'s batch API charges
    (:data:`BATCH_PRICE_SHARES`); ``None`` for a provider without known batch prices."""
    return BATCH_PRICE_SHARES.get(provider)


def batch_prices_text(shares: Mapping[str, float]) -> str:
    """How the cost shown is priced in batch mode (``shares``: the models priced at batch
    prices and the share of the synchronous price): ``at batch prices (50% of the
    synchronous price)``, naming each model when their shares differ; ``""`` without any."""
    if not shares:
        return ""
    if len(set(shares.values())) == 1:
        return f"at batch prices ({next(iter(shares.values())):.0%} of the synchronous price)"
    each = ", ".join(f"{model}: {share:.0%}" for model, share in sorted(shares.items()))
    return f"at batch prices ({each} of the synchronous price)"


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
        self._batch_shares: dict[str, float] = {}
        """The models whose calls go to a batch API, and the share of the price it charges."""

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

    def price_batches(self, model: str, provider: str) -> float:
        """Price ``model``'s calls at ``provider``'s batch price from now on (batch mode);
        the share of the synchronous price that is (1 for a provider without known batch
        prices: its calls are priced as synchronous ones, never below what they may cost).
        The price itself, built in or from ``llm.prices``, stays the synchronous one."""
        share = batch_price_share(provider)
        self._batch_shares[model] = 1.0 if share is None else share
        return self._batch_shares[model]

    @property
    def batch_shares(self) -> dict[str, float]:
        """The models priced at batch prices, and the share of the synchronous price."""
        return dict(self._batch_shares)

    def cost_usd(self, model: str, usage: TokenUsage, *, batch: bool = True) -> float:
        """The dollars ``usage`` costs on ``model`` (0 for an unknown model): at the batch
        price when ``model``'s calls go to a batch API (:meth:`price_batches`), unless
        ``batch`` is false (a call of that model sent synchronously)."""
        price = self.price(model)
        if price is None:
            return 0.0
        dollars = (usage.input_tokens * price[0] + usage.output_tokens * price[1]) / 1_000_000
        share = self._batch_shares.get(model) if batch else None
        return dollars if share is None else dollars * share
