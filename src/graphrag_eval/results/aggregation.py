"""Aggregates over per-question results, with the seed's structure and keys (docs/outputs.md).

::

    per_template:
      <template_id>:
        number_of_error_samples, number_of_success_samples, number_of_missing_samples
        <numeric key>: {sum, mean, median, min, max}
        <label key>: {<label>: count}
        steps: {total, once_per_sample, empty_results, errors}   (counts by step name)
        coverage: {<key>: {scored, failed, skipped}}
    micro:  the same over all questions
    macro:  {<numeric key>: {mean}}   the mean of the per-template means (of the templates
                                      where some question has the key); {mean: 0} for the
                                      keys that always appear (tokens, time) without data

Which keys are aggregated, and how, comes from the metrics' declarations
(:class:`~graphrag_eval.metrics.base.OutputKey`), so metrics added later need no change
here. A numeric key no metric declares (a custom output in results read from a file, say) is
aggregated numerically too, rather than dropped.

The results are read as typed results
(:func:`~graphrag_eval.results.from_records.read_records`), so a key's owner and its failures
come from the outcomes, never from key names.
``coverage`` counts questions: for each key, how many were scored, failed (its metric's
outcome failed, on the question or a step) or skipped (the metric did not apply, or the
response was an error), so a mean is never read without its denominator. For keys written
on steps, a question counts as scored when any of its steps has the key.

:func:`load_results` (reading saved results back) lives in :mod:`graphrag_eval.results.read_files`
and is re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graphrag_eval.collector import collection_paused
from graphrag_eval.config import ConfigSource
from graphrag_eval.metrics.loading import load_config
from graphrag_eval.results.aggregates import Aggregates
from graphrag_eval.results.fold import AggregateFold, is_empty_output
from graphrag_eval.results.from_records import layout_for, read_records
from graphrag_eval.results.item_values import ItemValues, item_values
from graphrag_eval.results.model import RunResult
from graphrag_eval.results.read_files import load_results

__all__ = [
    "AggregateFold",
    "ItemValues",
    "aggregate",
    "compute_aggregates",
    "is_empty_output",
    "item_values",
    "load_results",
]


def compute_aggregates(
    evaluation_results: Sequence[Mapping[str, Any]], config: ConfigSource = None
) -> dict[str, Any]:
    """Aggregate per-question results per template (``per_template``), over all questions
    (``micro``) and as the mean of template means (``macro``)."""
    settings = load_config(config)
    # Nothing built here holds a cycle, and the typed run is freed on return.
    with collection_paused():
        run = read_records(evaluation_results, layout_for(settings))
        return aggregate(run, settings).to_dict()


def aggregate(run: RunResult, config: ConfigSource = None) -> Aggregates:
    """The typed aggregates of a run's results (:func:`compute_aggregates` before
    flattening)."""
    fold = AggregateFold(run.layout, config)
    for result in run.results:
        fold.add(result)
    return fold.finish()
