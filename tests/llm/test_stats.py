"""The call statistics as ``run.yaml`` and the dry-run plan write them (docs/llm.md, cost):
their keys, in order, and their values."""

from __future__ import annotations

import pytest

from graphrag_eval.llm.pricing import TokenUsage
from graphrag_eval.llm.stats import CallStats

SUMMARY_KEYS = [
    "calls",
    "cache_hits",
    "failed_calls",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "local_texts",
]


def recorded() -> CallStats:
    stats = CallStats(max_cost_usd=1.0)
    stats.record_call("judged", TokenUsage(100, 20), 0.1234567)
    stats.record_call("judged", TokenUsage(50, 10), 0.0000004)
    stats.record_failure("judged")
    stats.record_cache_hit("other")
    stats.record_local("embedded", 3)
    stats.requests, stats.retries = 4, 1
    return stats


def test_the_run_summary_has_every_count_in_order() -> None:
    summary = recorded().as_dict()
    assert list(summary) == [
        "calls",
        "requests",
        "retries",
        *SUMMARY_KEYS[1:],
        "budget_reached",
        "budget_exceeded",
        "unusable_endpoints",
        "unpriced_models",
        "by_metric",
    ]
    assert [summary[key] for key in SUMMARY_KEYS] == [2, 1, 1, 150, 30, 0.123457, 3]
    judged = summary["by_metric"]["judged"]
    assert list(judged) == SUMMARY_KEYS
    assert list(judged.values()) == [2, 0, 1, 150, 30, 0.123457, 0]
    assert summary["by_metric"]["other"]["cache_hits"] == 1
    assert summary["by_metric"]["embedded"]["local_texts"] == 3


def test_the_dry_run_plan_sums_the_metrics_estimates() -> None:
    stats = CallStats()
    for name, calls, cost in (("a", 2, 0.1), ("b", 1, 0.2)):
        planned = stats.planned_for(name)
        planned.calls, planned.input_tokens, planned.output_tokens = calls, 10 * calls, calls
        planned.cost_usd = cost
    stats.planned_for("b").local_texts = 4
    stats.record_cache_hit("a")
    stats.record_cache_hit("c")
    plan = stats.plan_dict()
    keys = ["calls", "cached", "input_tokens", "output_tokens", "cost_usd", "local_texts"]
    assert list(plan) == [*keys, "by_metric", "unpriced_models"]
    assert [plan[key] for key in keys[:4]] == [3, 2, 30, 3]
    assert plan["cost_usd"] == pytest.approx(0.3)
    assert plan["local_texts"] == 4
    assert list(plan["by_metric"]) == ["a", "b", "c"]
    assert all(list(row) == keys for row in plan["by_metric"].values())
    assert list(plan["by_metric"]["a"].values()) == [2, 1, 20, 2, 0.1, 0]
    assert list(plan["by_metric"]["c"].values()) == [0, 1, 0, 0, 0.0, 0]
