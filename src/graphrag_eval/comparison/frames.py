"""A comparison as a pandas DataFrame (the ``report`` extra; docs/report.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from graphrag_eval.comparison.model import Comparison, MetricChange
from graphrag_eval.report.frames import pandas_module

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["comparison_frame"]


def comparison_frame(comparison: Comparison) -> pd.DataFrame:
    """One row per (scope, template, metric) of a comparison: ``pairs``, ``mean_a``,
    ``mean_b``, ``difference``, ``ci_low``, ``ci_high``, ``change`` and the counts; with
    judge repeats, ``noise_*`` columns too (docs/report.md, "Judge noise in a comparison")."""
    pandas = pandas_module()
    rows = []
    scopes: list[tuple[str, str | None, Mapping[str, MetricChange]]] = [
        ("all", None, comparison.overall)
    ]
    scopes += [
        ("template", template, changes) for template, changes in comparison.per_template.items()
    ]
    for scope, template_id, changes in scopes:
        for metric, change in changes.items():
            data = change.as_dict()
            data.pop("better_items")
            data.pop("worse_items")
            noise = data.pop("noise", None)  # only with judge repeats: one column per figure
            if isinstance(noise, dict):
                data.update((f"noise_{name}", value) for name, value in noise.items())
            rows.append({"scope": scope, "template_id": template_id, "metric": metric, **data})
    return pandas.DataFrame.from_records(rows)
