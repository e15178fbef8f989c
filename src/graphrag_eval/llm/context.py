"""What every call of a run shares: the cache and the requests in flight, the budget, the
statistics and prices, the secrets to redact and the sender that retries requests.

The engine opens one :class:`CallContext` per run and hands it to each service (the judge,
the embedders, BERTScore). See docs/llm.md (what the engine does with each call).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from graphrag_eval.config.llm import LLMConfig
from graphrag_eval.llm.budget import Budget
from graphrag_eval.llm.cache import CallCache, default_cache_path
from graphrag_eval.llm.inflight import InFlight
from graphrag_eval.llm.pricing import PriceTable, TokenUsage
from graphrag_eval.llm.redaction import Redactor
from graphrag_eval.llm.retrying import Sender
from graphrag_eval.llm.stats import CallStats

__all__ = ["CallContext"]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class CallContext:
    """The services shared by a run's calls."""

    config: LLMConfig
    stats: CallStats
    prices: PriceTable
    budget: Budget
    redactor: Redactor
    sender: Sender
    in_flight: InFlight
    cache_path: Path | None = None
    cache: CallCache | None = None
    """``None`` without the cache, and once the engine is closed."""

    @classmethod
    def create(cls, config: LLMConfig, *, dry_run: bool, max_cost_usd: float | None) -> CallContext:
        """The context of a run, without its cache yet (:meth:`open_cache`);
        ``max_cost_usd`` overrides the config's."""
        stats = CallStats()
        prices = PriceTable(config.prices)
        judge = config.generation
        if config.batch and judge is not None:  # its calls cost the batch price (and say so)
            provider = config.batch_provider or judge.provider
            stats.batch_prices[judge.model] = prices.price_batches(judge.model, provider)
        budget = Budget(
            stats,
            prices,
            dry_run=dry_run,
            max_cost_usd=max_cost_usd if max_cost_usd is not None else config.max_cost_usd,
        )
        redactor = Redactor()
        return cls(
            config=config,
            stats=stats,
            prices=prices,
            budget=budget,
            redactor=redactor,
            sender=Sender(config, budget, redactor),
            in_flight=InFlight(enabled=False),
        )

    def open_cache(self, use_cache: bool | None) -> None:
        """Open the call cache, unless it is off (``use_cache`` overrides the config).

        A cache that cannot be opened (a corrupted file, a directory it cannot create) is a
        warning, and the run goes on without it (docs/llm.md, cache).
        """
        if not (self.config.cache.enabled if use_cache is None else use_cache):
            return
        self.cache_path = self.config.cache.path or default_cache_path()
        try:
            self.cache = CallCache(
                self.cache_path,
                busy_timeout_s=self.config.cache.busy_timeout_s,
                redact=self.redactor.redact,
            )
        except Exception as exc:  # sqlite3.Error, OSError
            logger.warning(
                "cannot open the call cache %s: %s (the run goes on without it)",
                self.cache_path,
                exc,
            )
            return
        self.in_flight.enabled = True

    def cost_usd(self, model: str, usage: TokenUsage) -> float:
        """What ``usage`` costs on ``model``."""
        return self.prices.cost_usd(model, usage)

    def close(self) -> None:
        """Close the cache."""
        if self.cache is not None:
            self.cache.close()
            self.cache = None
