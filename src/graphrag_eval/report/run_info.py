"""What the HTML report shows about the run itself, from its ``run.yaml``: the settings it ran
with, and its judge's calls, tokens and cost (docs/report.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphrag_eval.formatting import COST_SUFFIX, format_dollars, format_number, is_cost_key, plural
from graphrag_eval.results.read_run import SavedRun

__all__ = ["judge_summary", "settings_rows"]

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
        rows.append(
            (
                "metrics",
                ", ".join(selected) if isinstance(selected, list) else str(selected or "default"),
            )
        )
        aggregation = config.get("aggregation")
        if isinstance(aggregation, Mapping) and "error_samples" in aggregation:
            rows.append(("error samples", str(aggregation["error_samples"])))
    resumed = info.get("resumed")
    if isinstance(resumed, Mapping):
        kept = resumed.get("kept")
        rows.append(("resumed", f"kept {plural(kept, 'item')}" if isinstance(kept, int) else "yes"))
    return rows


def judge_summary(info: Mapping[str, Any], micro: Mapping[str, Any]) -> dict[str, Any] | None:
    """The judge's calls, tokens and cost: from run.yaml, else summed from the items."""
    llm = info.get("llm")
    item_costs = [
        (name[: -len(COST_SUFFIX)], stats["sum"])
        for name, stats in micro.items()
        if is_cost_key(name)
        and isinstance(stats, Mapping)
        and "sum" in stats
        and not _sum_of_parts(name, micro)
    ]
    if not isinstance(llm, Mapping):
        if not item_costs:
            return None
        return {"totals": None, "by_metric": [], "item_costs": item_costs}
    totals = [
        ("judge calls made", format_number(llm.get("calls", 0))),
        ("served from the cache", format_number(llm.get("cache_hits", 0))),
        ("retries", format_number(llm.get("retries", 0))),
        ("failed calls", format_number(llm.get("failed_calls", 0))),
        ("input tokens", format_number(llm.get("input_tokens", 0))),
        ("output tokens", format_number(llm.get("output_tokens", 0))),
        ("cost", format_dollars(float(llm.get("cost_usd") or 0))),
    ]
    if llm.get("local_texts"):
        totals.append(("texts encoded by local models", format_number(llm["local_texts"])))
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
    for reason in llm.get("unusable_endpoints") or ():
        totals.append(("endpoint not usable", str(reason)))
    by_metric = [
        {"name": name, **values}
        for name, values in (llm.get("by_metric") or {}).items()
        if isinstance(values, Mapping)
    ]
    return {"totals": totals, "by_metric": by_metric, "item_costs": item_costs}


def _sum_of_parts(name: str, micro: Mapping[str, Any]) -> bool:
    """Whether the cost key ``name`` is the sum of two others listed too: an ``X_f1_cost`` is
    ``X_recall_cost`` plus ``X_precision_cost`` (retrieval_answer_f1_cost), and counting it
    beside them would count those calls twice."""
    if not name.endswith("_f1_cost"):
        return False
    stem = name[: -len("_f1_cost")]
    return f"{stem}_recall_cost" in micro and f"{stem}_precision_cost" in micro
