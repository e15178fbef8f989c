"""Results and aggregates as pandas DataFrames (the ``report`` extra; a comparison:
:mod:`graphrag_eval.comparison.frames`).

::

    from graphrag_eval import load_run, results_frame, aggregates_frame

    run = load_run("out/")
    items = results_frame(run.results)          # one row per question
    stats = aggregates_frame(run.aggregates)    # one row per (scope, template, metric)
    stats.query("scope == 'template'").pivot(index="template_id", columns="metric",
                                               values="mean")

pandas is imported when a function is called, so the rest of the library works without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from graphrag_eval.config import ConfigSource
from graphrag_eval.errors import GraphragEvalError
from graphrag_eval.metrics.base import Aggregation
from graphrag_eval.results.aggregates import Aggregates
from graphrag_eval.results.aggregation import item_values
from graphrag_eval.results.from_records import layout_for, read_records
from graphrag_eval.results.model import RunResult

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["aggregates_frame", "pandas_module", "results_frame"]

_ITEM_COLUMNS = ("template_id", "question_id", "status", "question_text")
_STAT_COLUMNS = ("sum", "mean", "median", "min", "max")


def pandas_module() -> Any:
    """pandas, or a :class:`GraphragEvalError` saying how to install it."""
    try:
        import pandas
    except ImportError:
        raise GraphragEvalError(
            "DataFrames need pandas: pip install 'graphrag-eval[report]'"
        ) from None
    return pandas


def results_frame(
    evaluation_results: Sequence[Mapping[str, Any]] | RunResult, config: ConfigSource = None
) -> pd.DataFrame:
    """One row per question: its ids, status and text, every numeric score (the mean over the
    steps for keys written on steps; NaN where it was not scored), the labels (class,
    grade) and the error messages (a column per error key of the metrics that failed).
    ``evaluation_results``: typed results (a saved run's ``results``) or flat records."""
    pandas = pandas_module()
    run = (
        evaluation_results
        if isinstance(evaluation_results, RunResult)
        else read_records(evaluation_results, layout_for(config))
    )
    values = item_values(run, config)
    labels = [
        name
        for name, (spec, _) in run.layout.outputs().items()
        if spec.aggregation is Aggregation.LABEL
    ]
    rows = []
    for result, scores in zip(run.results, values.values, strict=True):
        row: dict[str, Any] = {column: result.fields.get(column) for column in _ITEM_COLUMNS}
        row["error"] = result.error
        row.update(scores)
        scored = result.values()
        for name in labels:
            if name in scored:
                row[name] = scored[name]
        for name, message in result.failed_keys().items():
            row.setdefault(name, message)
        rows.append(row)
    columns = [*_ITEM_COLUMNS, "error", *values.keys]
    frame = pandas.DataFrame.from_records(rows)
    ordered = [column for column in columns if column in frame.columns]
    return frame[ordered + [column for column in frame.columns if column not in ordered]]


def aggregates_frame(aggregates: Aggregates | Mapping[str, Any]) -> pd.DataFrame:
    """The numeric aggregates in long form: columns ``scope`` (``template`` or ``all``),
    ``template_id`` (None for ``all``), ``metric``, ``sum``, ``mean``, ``median``, ``min``,
    ``max``, ``macro_mean`` (``all`` rows), ``scored``, ``failed``, ``skipped``.
    ``aggregates``: a saved run's, or the dictionaries ``compute_aggregates`` returns."""
    pandas = pandas_module()
    # The frame's rows have the shape of aggregates.yaml (docs/outputs.md).
    data: Mapping[str, Any] = (
        aggregates.to_dict() if isinstance(aggregates, Aggregates) else aggregates
    )
    rows = []
    scopes: list[tuple[str, str | None, Mapping[str, Any]]] = [
        ("template", template_id, stats) for template_id, stats in data["per_template"].items()
    ]
    scopes.append(("all", None, data["micro"]))
    macro = data.get("macro", {})
    for scope, template_id, stats in scopes:
        coverage = stats.get("coverage", {})
        for metric, value in stats.items():
            if not isinstance(value, Mapping) or "mean" not in value:
                continue
            counts = coverage.get(metric, {})
            rows.append(
                {
                    "scope": scope,
                    "template_id": template_id,
                    "metric": metric,
                    **{column: value.get(column) for column in _STAT_COLUMNS},
                    "macro_mean": macro.get(metric, {}).get("mean") if scope == "all" else None,
                    "scored": counts.get("scored"),
                    "failed": counts.get("failed"),
                    "skipped": counts.get("skipped"),
                }
            )
    return pandas.DataFrame.from_records(
        rows,
        columns=[
            "scope",
            "template_id",
            "metric",
            *_STAT_COLUMNS,
            "macro_mean",
            "scored",
            "failed",
            "skipped",
        ],
    )
