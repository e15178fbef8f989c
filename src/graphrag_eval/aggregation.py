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

``coverage`` counts questions: for each key, how many were scored, failed (an error key of
its metric is present) or skipped (the metric did not apply, or the response was an error),
so a mean is never read without its denominator. For keys written on steps, a question counts
as scored when any of its steps has the key.

:func:`load_results` (reading saved results back) lives in :mod:`graphrag_eval.saved_results`
and is re-exported here.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graphrag_eval.config import ConfigSource, load_config
from graphrag_eval.metrics.base import (
    IDENTITY_KEYS,
    Aggregation,
    OutputKey,
    configured_metrics,
    declared_outputs,
)
from graphrag_eval.saved_results import load_results

__all__ = [
    "ItemValues",
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
    keys, zeroable = _aggregated_keys(evaluation_results, config)
    # What each question contributes is worked out once, then summed per template and overall.
    facts = [_facts(result, keys, zeroable) for result in evaluation_results]
    by_template: dict[str, list[_Facts]] = {}
    for result, item in zip(evaluation_results, facts, strict=True):
        by_template.setdefault(str(result.get("template_id")), []).append(item)

    per_template = {
        template_id: _aggregate(items, keys) for template_id, items in by_template.items()
    }
    micro = _aggregate(facts, keys)
    macro: dict[str, dict[str, float]] = {}
    for key, (spec, _) in keys.items():
        if spec.aggregation is not Aggregation.NUMERIC:
            continue
        # Only templates with data for the key: zeros shown for "no data" are not means.
        means = [
            stats[key]["mean"]
            for stats in per_template.values()
            if key in stats and stats["coverage"][key]["scored"]
        ]
        if means:
            macro[key] = {"mean": statistics.fmean(means)}
        elif spec.always:
            # As the per-template blocks show zeros for these keys (an all-error run, say).
            macro[key] = {"mean": 0}
    return {"per_template": per_template, "micro": micro, "macro": macro}


@dataclass(frozen=True, slots=True)
class ItemValues:
    """The numeric scores of each question, one number per key, as the aggregates count them."""

    keys: dict[str, OutputKey]
    """The numeric keys, in the aggregates' order, with their declarations."""
    values: list[dict[str, float]]
    """Per result, in order: key -> value (the mean over the steps for keys on steps). A key
    is absent where the question was not scored; error samples count as 0 under
    ``aggregation.error_samples: zero``, as in the aggregates."""


def item_values(
    evaluation_results: Sequence[Mapping[str, Any]], config: ConfigSource = None
) -> ItemValues:
    """Each question's value of every numeric key (for comparing runs item by item)."""
    keys, zeroable = _aggregated_keys(evaluation_results, config)
    numeric = {
        name: spec for name, (spec, _) in keys.items() if spec.aggregation is Aggregation.NUMERIC
    }
    zeroable = {name: spec for name, spec in zeroable.items() if name in numeric}
    on_items = [name for name in numeric if not keys[name][1]]
    on_steps = [name for name in numeric if keys[name][1]]
    values: list[dict[str, float]] = []
    for result in evaluation_results:
        row: dict[str, float] = {}
        if result.get("status") == "error":
            for name, spec in zeroable.items():
                if all(field in result for field in spec.requires):
                    row[name] = 0.0
        else:
            for name in on_items:
                value: Any = result.get(name)
                if _is_number(value):
                    row[name] = float(value)
            steps: Any = result.get("actual_steps") if on_steps else None
            for name in on_steps if isinstance(steps, list) else ():
                numbers = [
                    step[name]
                    for step in steps
                    if isinstance(step, Mapping) and _is_number(step.get(name))
                ]
                if numbers:
                    row[name] = statistics.fmean(numbers)
        values.append(row)
    return ItemValues(numeric, values)


def _aggregated_keys(
    results: Sequence[Mapping[str, Any]], config: ConfigSource
) -> tuple[dict[str, tuple[OutputKey, bool]], dict[str, OutputKey]]:
    """The keys aggregated (with whether they are written on steps), and those an error
    sample counts as 0 on (none unless ``aggregation.error_samples`` is ``zero``)."""
    settings = load_config(config)
    keys = _collect_keys(results, declared_outputs(configured_metrics(settings)))
    if settings.aggregation.error_samples != "zero":
        return keys, {}
    return keys, _zeroable_keys(results, keys)


def _is_number(value: Any) -> bool:
    """A real, finite number: booleans are labels, and NaN or infinity (which older tools
    wrote for a failure) is not a score."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _collect_keys(
    results: Iterable[Mapping[str, Any]], declared: Mapping[str, tuple[OutputKey, bool]]
) -> dict[str, tuple[OutputKey, bool]]:
    """Aggregated keys in a stable order: declared keys that occur (or must always appear),
    then undeclared numeric item keys in order of first appearance."""
    present: set[str] = set()
    undeclared: dict[str, None] = {}
    for result in results:
        for key, value in result.items():
            if key in declared:
                present.add(key)
            elif key not in IDENTITY_KEYS and not key.endswith("_error") and _is_number(value):
                undeclared[key] = None
        for step in result.get("actual_steps") or ():
            if isinstance(step, Mapping):
                present.update(key for key in step if key in declared and declared[key][1])
    keys = {
        name: entry
        for name, entry in declared.items()
        if entry[0].aggregation is not Aggregation.NONE and (name in present or entry[0].always)
    }
    for name in undeclared:
        keys[name] = (OutputKey(name, error_keys=(f"{name}_error",)), False)
    return keys


def _zeroable_keys(
    results: Sequence[Mapping[str, Any]], keys: Mapping[str, tuple[OutputKey, bool]]
) -> dict[str, OutputKey]:
    """Keys an error sample would have had: declared zeroable, and the run computed them
    (some success has the key, or the evaluation wrote its 0 on some error sample, as it
    does for ``steps_score`` under ``error_samples: zero``)."""
    zeroable = {}
    for name, (spec, on_steps) in keys.items():
        if (
            spec.zero_for_error_samples
            and not on_steps
            and any(
                name in result if result.get("status") != "error" else _is_number(result.get(name))
                for result in results
            )
        ):
            zeroable[name] = spec
    return zeroable


_SCORED, _FAILED, _SKIPPED = "scored", "failed", "skipped"


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


def _facts(
    item: Mapping[str, Any],
    keys: Mapping[str, tuple[OutputKey, bool]],
    zeroable: Mapping[str, OutputKey],
) -> _Facts:
    is_error = item.get("status") == "error"
    values: dict[str, list[Any]] = {}
    coverage: dict[str, str] = {}
    names: list[str] = []
    empty: list[str] = []
    errors: list[str] = []
    if is_error:
        for name in keys:
            zero = zeroable.get(name)
            if zero is not None and all(field in item for field in zero.requires):
                values[name] = [0.0]
                coverage[name] = _SCORED
            else:
                coverage[name] = _SKIPPED
        return _Facts(True, bool(item.get("missing_response")), values, coverage, [], [], [])
    steps = [s for s in item.get("actual_steps") or () if isinstance(s, Mapping)]
    for name, (spec, on_steps) in keys.items():
        sources = steps if on_steps else [item]
        found = [source[name] for source in sources if source.get(name) is not None]
        if found:
            values[name] = found
            coverage[name] = _SCORED
        elif any(key in source for source in sources for key in spec.error_keys):
            coverage[name] = _FAILED
        else:
            coverage[name] = _SKIPPED
    for step in steps:
        step_name = step.get("name")
        if not isinstance(step_name, str):
            continue
        names.append(step_name)
        if step.get("status") == "error":
            errors.append(step_name)
        elif step.get("status") == "success" and is_empty_output(step.get("output")):
            empty.append(step_name)
    return _Facts(False, False, values, coverage, names, empty, errors)


def _aggregate(
    items: Sequence[_Facts], keys: Mapping[str, tuple[OutputKey, bool]]
) -> dict[str, Any]:
    errors = [item for item in items if item.is_error]
    out: dict[str, Any] = {
        "number_of_error_samples": len(errors),
        "number_of_success_samples": len(items) - len(errors),
        "number_of_missing_samples": sum(1 for item in errors if item.is_missing),
    }
    coverage = {name: {_SCORED: 0, _FAILED: 0, _SKIPPED: 0} for name in keys}
    for item in items:
        for name, status in item.coverage.items():
            coverage[name][status] += 1
    for name, (spec, _) in keys.items():
        values = [value for item in items for value in item.values.get(name, ())]
        if spec.aggregation is Aggregation.LABEL:
            counted = Counter(str(value) for value in values)
            if values:
                ordered = {label: counted[label] for label in spec.labels}
                out[name] = ordered | {k: v for k, v in counted.items() if k not in ordered}
            for label, count_key in spec.counts:
                out[count_key] = counted[label]
            continue
        numbers = [value for value in values if _is_number(value)]
        if numbers:
            out[name] = _statistics(numbers)
        elif spec.always:
            out[name] = {"sum": 0, "mean": 0, "median": 0, "min": 0, "max": 0}
    total: Counter[str] = Counter()
    once: Counter[str] = Counter()
    empty: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    for item in items:
        total.update(item.step_names)
        once.update(set(item.step_names))
        empty.update(item.empty_steps)
        failed.update(item.error_steps)
    out["steps"] = {
        "total": dict(total),
        "once_per_sample": dict(once),
        "empty_results": dict(empty),
        "errors": dict(failed),
    }
    out["coverage"] = coverage
    return out


def _statistics(numbers: Sequence[int | float]) -> dict[str, int | float]:
    return {
        "sum": sum(numbers),
        "mean": statistics.fmean(numbers),
        "median": statistics.median(numbers),
        "min": min(numbers),
        "max": max(numbers),
    }


def is_empty_output(output: Any) -> bool:
    """Whether a successful step returned nothing: no output, blank text, an empty JSON list
    or object, or SPARQL results JSON without bindings."""
    if output is None:
        return True
    if isinstance(output, str):
        if not output.strip():
            return True
        if output.lstrip()[:1] not in ("[", "{"):
            return False
        try:
            output = json.loads(output)
        except (json.JSONDecodeError, RecursionError):
            return False
    if isinstance(output, list | tuple):
        return len(output) == 0
    if isinstance(output, Mapping):
        if not output:
            return True
        results = output.get("results")
        if isinstance(results, Mapping) and isinstance(results.get("bindings"), list):
            return not results["bindings"]
    return False
