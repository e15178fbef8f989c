"""What the HTML report shows about the run itself, from its ``run.yaml``: the settings it ran
with, and its judge's calls, tokens and cost (docs/report.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from graphrag_eval.formatting import format_dollars, format_number, plural
from graphrag_eval.llm.pricing import batch_prices_text
from graphrag_eval.metrics.base import JsonValue, KeyKind
from graphrag_eval.results.aggregates import GroupAggregates
from graphrag_eval.results.model import ResultLayout
from graphrag_eval.results.read_run import SavedRun

__all__ = ["JudgeSummary", "judge_summary", "settings_rows"]

_INFO_LABELS = (
    ("reference", "reference"),
    ("responses", "responses"),
    ("config_file", "config file"),
    ("graphrag_eval_version", "evaluated with graphrag-eval"),
    ("elapsed_sec", "run time (s)"),
)
_MODEL_LABELS = (("judge_model", "judge model"), ("embedding_model", "embedding model"))


def settings_rows(run: SavedRun) -> list[tuple[str, str]]:
    """The run's settings as (label, value) rows: its files, models, metrics and resumption."""
    info = run.info
    rows = [("results", str(run.results_path))]
    for key, label in _INFO_LABELS:
        value = info.get(key)
        if value is not None:
            rows.append((label, str(value)))
    llm = info.get("llm")
    if isinstance(llm, Mapping):
        for key, label in _MODEL_LABELS:
            if llm.get(key):
                rows.append((label, str(llm[key])))
    config = info.get("config")
    if isinstance(config, Mapping):
        selected = config.get("metrics")
        named = ", ".join(map(str, selected)) if isinstance(selected, list) else None
        rows.append(("metrics", named if named is not None else str(selected or "default")))
        aggregation = config.get("aggregation")
        if isinstance(aggregation, Mapping) and "error_samples" in aggregation:
            rows.append(("error samples", str(aggregation["error_samples"])))
    resumed = info.get("resumed")
    if isinstance(resumed, Mapping):
        kept = resumed.get("kept")
        rows.append(("resumed", f"kept {plural(kept, 'item')}" if isinstance(kept, int) else "yes"))
    return rows


@dataclass(frozen=True, slots=True)
class JudgeSummary:
    """The judge's calls, tokens and cost (``totals``, from run.yaml), per metric, and the sum
    of each cost key written on the questions."""

    totals: list[tuple[str, str]] | None
    by_metric: list[Mapping[str, JsonValue]] = field(default_factory=list)
    item_costs: list[tuple[str, float]] = field(default_factory=list)


def judge_summary(
    info: Mapping[str, JsonValue], micro: GroupAggregates, layout: ResultLayout
) -> JudgeSummary | None:
    """The judge's calls, tokens and cost: from run.yaml, else summed from the items (the
    keys that declare a cost, but for a sum of others listed too), each named by its metric
    (by the key where its metric has more than one)."""
    llm = info.get("llm")
    costs = [
        (metric.name, output.name, stats.sum)
        for metric in layout.metrics.values()
        for output in metric.outputs
        if output.kind is KeyKind.COST
        and (stats := micro.statistics(output.name)) is not None
        and not (output.sums and all(part in micro.keys for part in output.sums))
    ]
    per_metric = Counter(metric for metric, _, _ in costs)
    item_costs = [
        (metric if per_metric[metric] == 1 else key, total) for metric, key, total in costs
    ]
    if not isinstance(llm, Mapping):
        return JudgeSummary(None, [], item_costs) if item_costs else None
    totals = _totals(llm)
    by_metric: list[Mapping[str, JsonValue]] = []
    metrics = llm.get("by_metric")
    for name, values in metrics.items() if isinstance(metrics, Mapping) else ():
        if isinstance(values, Mapping):
            by_metric.append({"name": name, **values})
    return JudgeSummary(totals, by_metric, item_costs)


def _totals(llm: Mapping[str, JsonValue]) -> list[tuple[str, str]]:
    def number(key: str) -> str:
        value = llm.get(key, 0)
        return format_number(value if isinstance(value, int | float) else 0)

    cost = llm.get("cost_usd")
    totals = [
        ("judge calls made", number("calls")),
        ("served from the cache", number("cache_hits")),
        ("retries", number("retries")),
        ("failed calls", number("failed_calls")),
        ("input tokens", number("input_tokens")),
        ("output tokens", number("output_tokens")),
        ("cost", format_dollars(float(cost) if isinstance(cost, int | float) else 0.0)),
    ]
    shares = llm.get("batch_prices")
    priced = {
        str(model): float(share)
        for model, share in (shares.items() if isinstance(shares, Mapping) else ())
        if isinstance(share, int | float)
    }
    if priced:
        totals[-1] = ("cost", f"{totals[-1][1]} {batch_prices_text(priced)}")
    if llm.get("local_texts"):
        totals.append(("texts encoded by local models", number("local_texts")))
    if llm.get("budget_reached"):
        totals.append(("cost limit", "reached: later calls were not made"))
    limit = llm.get("max_cost_usd")
    if llm.get("budget_exceeded") and isinstance(limit, int | float):
        totals.append(
            (
                "cost limit exceeded",
                f"by replies longer than estimated (limit {format_dollars(float(limit))})",
            )
        )
    unusable = llm.get("unusable_endpoints")
    for reason in unusable if isinstance(unusable, list) else ():
        totals.append(("endpoint not usable", str(reason)))
    return totals
