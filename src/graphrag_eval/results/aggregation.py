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

The results are read as typed results (:func:`~graphrag_eval.results.to_records.read_records`), so a
key's owner and its failures come from the outcomes, never from key names.
``coverage`` counts questions: for each key, how many were scored, failed (its metric's
outcome failed, on the question or a step) or skipped (the metric did not apply, or the
response was an error), so a mean is never read without its denominator. For keys written
on steps, a question counts as scored when any of its steps has the key.

:func:`load_results` (reading saved results back) lives in :mod:`graphrag_eval.results.read_files`
and is re-exported here.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from graphrag_eval.collector import collection_paused
from graphrag_eval.config import ConfigSource
from graphrag_eval.metrics.base import Aggregation, OutputKey
from graphrag_eval.metrics.loading import load_config
from graphrag_eval.results.aggregates import (
    Aggregates,
    Coverage,
    GroupAggregates,
    Statistics,
    StepCounts,
)
from graphrag_eval.results.item_values import AggregatedKeys, ItemValues, KeyEvidence, item_values
from graphrag_eval.results.model import QuestionResult, RunResult
from graphrag_eval.results.read_files import load_results
from graphrag_eval.results.to_records import is_number, layout_for, read_records

__all__ = [
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
    keys, zeroable = _aggregated_keys(run, config)
    # What each question contributes is worked out once, then summed per template and overall.
    facts = [_facts(result, keys, zeroable) for result in run.results]
    by_template: dict[str, list[_Facts]] = {}
    for result, item in zip(run.results, facts, strict=True):
        by_template.setdefault(str(result.template_id), []).append(item)

    per_template = {
        template_id: _aggregate(items, keys) for template_id, items in by_template.items()
    }
    macro: dict[str, float] = {}
    for key, (spec, _) in keys.items():
        if spec.aggregation is not Aggregation.NUMERIC:
            continue
        # Only templates with data for the key: zeros shown for "no data" are not means.
        means = [
            stats.mean
            for group in per_template.values()
            if (stats := group.statistics(key)) is not None and group.coverage[key].scored
        ]
        if means:
            macro[key] = statistics.fmean(means)
        elif spec.always:
            # As the per-template blocks show zeros for these keys (an all-error run, say).
            macro[key] = 0
    return Aggregates(per_template, _aggregate(facts, keys), macro)


def _aggregated_keys(
    run: RunResult, config: ConfigSource
) -> tuple[AggregatedKeys, dict[str, OutputKey]]:
    """The keys aggregated (with whether they are written on steps), and those an error
    sample counts as 0 on (none unless ``aggregation.error_samples`` is ``zero``)."""
    evidence = KeyEvidence(run.layout)
    for result in run.results:
        failed: dict[str, str] = {}
        if result.failed_metrics():  # rare: no further pass over most results
            for step in (None, *result.step_indices()):
                failed.update(result.failed_keys(step))
        evidence.add(result.is_error, result.values(), result.step_scores(), failed)
    keys = evidence.keys()
    if load_config(config).aggregation.error_samples != "zero":
        return keys, {}
    return keys, evidence.zeroable(keys)


@dataclass(slots=True)
class _Facts:
    """What one question contributes to the aggregates of every group it belongs to."""

    is_error: bool
    is_missing: bool
    values: dict[str, list[Any]]
    coverage: dict[str, str]
    step_names: list[str]
    empty_steps: list[str]
    error_steps: list[str]
    failure_reasons: dict[str, str] = field(default_factory=dict)
    """Key -> the error of its metric, where it failed."""


def _facts(item: QuestionResult, keys: AggregatedKeys, zeroable: Mapping[str, OutputKey]) -> _Facts:
    values: dict[str, list[Any]] = {}
    coverage: dict[str, str] = {}
    if item.is_error:
        for name in keys:
            zero = zeroable.get(name)
            if zero is not None and all(item.has(field) for field in zero.requires):
                values[name] = [0.0]
                coverage[name] = "scored"
            else:
                coverage[name] = "skipped"
        return _Facts(True, item.missing_response, values, coverage, [], [], [])
    positions = item.step_positions()
    levels: dict[bool, list[int | None]] = {True: list(positions), False: [None]}
    scored = {level: item.values(level) for level in (None, *positions)}
    failed = {level: item.failed_keys(level) for level in (None, *positions)}
    reasons: dict[str, str] = {}
    for name, (spec, on_steps) in keys.items():
        found = [
            scored[level][name] for level in levels[on_steps] if scored[level].get(name) is not None
        ]
        if found:
            values[name] = found
            coverage[name] = "scored"
        elif messages := [
            failed[level][key]
            for level in levels[on_steps]
            for key in spec.error_keys
            if key in failed[level]
        ]:
            coverage[name] = "failed"
            reasons[name] = str(messages[0])
        else:
            coverage[name] = "skipped"
    names: list[str] = []
    empty: list[str] = []
    errors: list[str] = []
    for i in positions:
        step = item.actual_steps[i]
        if not isinstance(step, dict):  # (the positions are those of mappings)
            continue
        step_name = step.get("name")
        if not isinstance(step_name, str):
            continue
        names.append(step_name)
        if step.get("status") == "error":
            errors.append(step_name)
        elif step.get("status") == "success" and is_empty_output(step.get("output")):
            empty.append(step_name)
    return _Facts(False, False, values, coverage, names, empty, errors, reasons)


def _aggregate(items: Sequence[_Facts], keys: AggregatedKeys) -> GroupAggregates:
    errors = [item for item in items if item.is_error]
    group = GroupAggregates(
        error_samples=len(errors),
        success_samples=len(items) - len(errors),
        missing_samples=sum(1 for item in errors if item.is_missing),
        coverage={name: Coverage() for name in keys},
    )
    for item in items:
        for name, status in item.coverage.items():
            counts = group.coverage[name]
            setattr(counts, status, getattr(counts, status) + 1)
        for name, reason in item.failure_reasons.items():
            group.coverage[name].reasons[reason] += 1
    for name, (spec, _) in keys.items():
        values = [value for item in items for value in item.values.get(name, ())]
        if spec.aggregation is Aggregation.LABEL:
            counted = Counter(str(value) for value in values)
            if values:
                ordered = {label: counted[label] for label in spec.labels}
                group.keys[name] = ordered | {k: v for k, v in counted.items() if k not in ordered}
            for label, count_key in spec.counts:
                group.keys[count_key] = counted[label]
            continue
        numbers = [value for value in values if is_number(value)]
        if numbers:
            group.keys[name] = _statistics(numbers)
        elif spec.always:
            group.keys[name] = Statistics(0, 0, 0, 0, 0)
    total: Counter[str] = Counter()
    once: Counter[str] = Counter()
    empty: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    for item in items:
        total.update(item.step_names)
        # Each name once, in order of appearance: a set's order changes with the process's
        # string hashes, and so would the order of the keys written.
        once.update(dict.fromkeys(item.step_names, 1))
        empty.update(item.empty_steps)
        failed.update(item.error_steps)
    group.steps = StepCounts(dict(total), dict(once), dict(empty), dict(failed))
    return group


def _statistics(numbers: Sequence[int | float]) -> Statistics:
    return Statistics(
        sum=sum(numbers),
        mean=statistics.fmean(numbers),
        median=statistics.median(numbers),
        min=min(numbers),
        max=max(numbers),
    )


def is_empty_output(output: Any) -> bool:
    """Whether a successful step returned nothing: no output, blank text, an empty JSON list
    or object, or SPARQL results JSON without bindings."""
    if isinstance(output, str):
        if not output.strip():
            return True
        if output.lstrip()[:1] not in ("[", "{"):
            return False
        try:  # only what the answer needs is decoded: the rows are skipped, not built
            return _empty_json_text(output)
        except (msgspec.DecodeError, RecursionError):
            pass  # not strict JSON (NaN, say): the standard decoder decides
        try:
            output = json.loads(output)
        except (json.JSONDecodeError, RecursionError):
            return False
    if output is None:
        return True
    if isinstance(output, list | tuple):
        return len(output) == 0
    if isinstance(output, Mapping):
        if not output:
            return True
        results = output.get("results")
        if isinstance(results, Mapping) and isinstance(results.get("bindings"), list):
            return not results["bindings"]
    return False


_RawObject = dict[str, msgspec.Raw]
_top_level = msgspec.json.Decoder(list[msgspec.Raw] | _RawObject)
_object = msgspec.json.Decoder(_RawObject)
_array = msgspec.json.Decoder(list[msgspec.Raw])


def _empty_json_text(text: str) -> bool:
    """:func:`is_empty_output` of JSON text, decoding only the top level, ``results`` and the
    length of ``bindings`` (raises ``msgspec.DecodeError`` where it is not a list or object
    of strict JSON)."""
    top = _top_level.decode(text)
    if isinstance(top, list) or not top:
        return not top
    results = top.get("results")
    if results is None:
        return False
    try:
        bindings = _object.decode(results).get("bindings")
        return bindings is not None and not _array.decode(bindings)
    except msgspec.ValidationError:  # valid JSON of another shape: not SPARQL results
        return False
