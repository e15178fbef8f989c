"""Batch prices (docs/llm.md, "Batch prices"): in batch mode the judge model's calls cost its
provider's batch price, half the synchronous one for OpenAI and Anthropic; the summary, the
dry run and the report say the cost is at batch prices."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from graphrag_eval.config.llm import ModelPrice
from graphrag_eval.llm.pricing import (
    BATCH_PRICE_SHARES,
    PriceTable,
    TokenUsage,
    batch_price_share,
    batch_prices_text,
)
from graphrag_eval.llm.stats import CallStats
from graphrag_eval.report.console import print_dry_run, print_llm_summary
from graphrag_eval.report.run_info import _totals

USAGE = TokenUsage(1_000_000, 200_000)


def test_openai_and_anthropic_batches_cost_half_the_synchronous_price() -> None:
    assert BATCH_PRICE_SHARES == {"openai": 0.5, "anthropic": 0.5}
    prices = PriceTable()
    synchronous = prices.cost_usd("gpt-4o-mini", USAGE)
    assert synchronous == pytest.approx(0.15 + 0.2 * 0.60)
    assert prices.price_batches("gpt-4o-mini", "openai") == 0.5
    assert prices.cost_usd("gpt-4o-mini", USAGE) == pytest.approx(synchronous / 2)
    # a call of the model sent synchronously (a retry outside the batch) pays in full
    assert prices.cost_usd("gpt-4o-mini", USAGE, batch=False) == pytest.approx(synchronous)
    # the synchronous price itself is unchanged, and other models are not batch-priced
    assert prices.price("gpt-4o-mini") == (0.15, 0.60)
    assert prices.cost_usd("gpt-4o", USAGE) == pytest.approx(2.5 + 0.2 * 10.0)
    assert prices.batch_shares == {"gpt-4o-mini": 0.5}


def test_a_configured_price_is_halved_too() -> None:
    prices = PriceTable(
        {"claude-haiku-4-5": ModelPrice(input_per_million=1.0, output_per_million=5.0)}
    )
    prices.price_batches("claude-haiku-4-5", "anthropic")
    assert prices.cost_usd("claude-haiku-4-5", USAGE) == pytest.approx((1.0 + 0.2 * 5.0) / 2)


def test_a_price_learned_from_the_provider_library_is_halved() -> None:
    prices = PriceTable()
    prices.add_default("claude-haiku-4-5", (1.0, 5.0))  # as LiteLLM's price map gives it
    prices.price_batches("claude-haiku-4-5", "anthropic")
    assert prices.cost_usd("claude-haiku-4-5", USAGE) == pytest.approx(1.0)


def test_a_provider_without_known_batch_prices_pays_the_synchronous_price() -> None:
    assert batch_price_share("mistral") is None
    prices = PriceTable()
    assert prices.price_batches("gpt-4o-mini", "mistral") == 1.0
    assert prices.cost_usd("gpt-4o-mini", USAGE) == pytest.approx(0.15 + 0.2 * 0.60)


def test_an_unknown_model_costs_nothing_in_batches_too() -> None:
    prices = PriceTable()
    prices.price_batches("my-model", "openai")
    assert prices.cost_usd("my-model", USAGE) == 0.0


def test_the_text_says_batch_prices_and_the_share() -> None:
    assert batch_prices_text({}) == ""
    assert batch_prices_text({"m": 0.5}) == "at batch prices (50% of the synchronous price)"
    assert batch_prices_text({"b": 0.5, "a": 1.0}) == (
        "at batch prices (a: 100%, b: 50% of the synchronous price)"
    )


def test_run_yaml_names_the_batch_prices_only_in_batch_mode() -> None:
    stats = CallStats(calls=2, cost_usd=0.25)
    assert "batch_prices" not in stats.as_dict()
    assert "batch_prices" not in stats.plan_dict()
    stats.batch_prices = {"claude-haiku-4-5": 0.5}
    assert stats.as_dict()["batch_prices"] == {"claude-haiku-4-5": 0.5}
    assert stats.plan_dict()["batch_prices"] == {"claude-haiku-4-5": 0.5}
    assert stats.as_dict()["cost_usd"] == 0.25  # the dollars charged, at batch prices


def printed(show: Any, *args: Any) -> str:
    console = Console(file=io.StringIO(), width=300, color_system=None)
    show(console, *args)
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue()


def test_the_summary_line_says_batch_prices() -> None:
    stats = CallStats(calls=4, input_tokens=1000, output_tokens=100, cost_usd=0.5)
    assert "batch prices" not in printed(print_llm_summary, stats, None)
    stats.batch_prices = {"claude-haiku-4-5": 0.5}
    line = printed(print_llm_summary, stats, None).splitlines()[0]
    assert line.endswith("$0.5000 spent at batch prices (50% of the synchronous price)")


def test_the_dry_run_says_batch_prices() -> None:
    stats = CallStats()
    planned = stats.planned_for("answer_correctness")
    planned.calls, planned.input_tokens, planned.output_tokens, planned.cost_usd = 3, 900, 90, 0.1
    assert "batch API" not in printed(print_dry_run, stats.plan_dict(), 3)
    stats.batch_prices = {"claude-haiku-4-5": 0.5}
    text = printed(print_dry_run, stats.plan_dict(), 3)
    assert (
        "Judge calls go to the provider's batch API: cost at batch prices (50% of the "
        "synchronous price)." in text
    )


def test_the_report_says_batch_prices() -> None:
    llm: dict[str, Any] = {"calls": 4, "cost_usd": 0.5}
    assert dict(_totals(llm))["cost"] == "$0.5000"
    llm["batch_prices"] = {"claude-haiku-4-5": 0.5}
    assert dict(_totals(llm))["cost"] == "$0.5000 at batch prices (50% of the synchronous price)"
    llm["batch_prices"] = {"claude-haiku-4-5": "half"}  # a hand-edited run.yaml
    assert dict(_totals(llm))["cost"] == "$0.5000"
