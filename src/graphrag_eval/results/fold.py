"""The aggregates of a run folded in one result at a time (:class:`AggregateFold`), which
:func:`graphrag_eval.results.aggregation.aggregate` runs over a whole run and
``graphrag-eval evaluate`` as each item is scored, so that a large run's results are never
held (docs/architecture.md, "The data flow"; docs/benchmarks.md, "Whole run")."""

from __future__ import annotations

import json
import statistics
from array import array
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

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
from graphrag_eval.results.item_values import AggregatedKeys, KeyEvidence
from graphrag_eval.results.model import QuestionResult, ResultLayout, StepOutcomes, is_number
from graphrag_eval.results.noise import NoiseFold

__all__ = ["AggregateFold", "is_empty_output"]


class AggregateFold:
    """The aggregates of a run folded in one result at a time, in reference order, without
    holding the results: each group keeps, per key, only its values (floats in an
    ``array('d')``) and counts, so the sums, means and medians are exactly those of
    :func:`aggregate` over the whole list (it is this fold). Which keys are written, and which
    an error sample counts as 0 on, is decided at :meth:`finish`, from what every result
    showed (:class:`~graphrag_eval.results.item_values.KeyEvidence`)."""

    def __init__(self, layout: ResultLayout, config: ConfigSource = None) -> None:
        self.evidence = KeyEvidence(layout)
        self.candidates: AggregatedKeys = {
            name: entry
            for name, entry in self.evidence.declared.items()
            if entry[0].aggregation is not Aggregation.NONE
        }
        zero = load_config(config).aggregation.error_samples == "zero"
        self.zero_candidates = {
            name: spec
            for name, (spec, on_steps) in self.candidates.items()
            if zero and spec.zero_for_error_samples and not on_steps
        }
        self.micro = _Group()
        self.groups: dict[str, _Group] = {}
        self.noise = NoiseFold(layout)

    def add(self, result: QuestionResult) -> None:
        """Fold one result in (results come in reference order)."""
        found = result.by_step()  # one pass over its outcomes
        failed: dict[str, str] = {}
        if found.any_failed:  # rare
            for step in (None, *sorted(step for step in found.failed if step is not None)):
                failed.update(found.failed.get(step, {}))
        steps = found.step_scores(result.actual_steps)
        self.evidence.add(result.is_error, found.values[None], steps, failed)
        facts = _facts(result, found, self.candidates, self.zero_candidates)
        template = str(result.template_id)
        group = self.groups.get(template)
        if group is None:
            group = self.groups[template] = _Group()
        group.add(facts)
        self.micro.add(facts)
        self.noise.add(template, result, found.values[None], bool(found.scored_steps))

    def finish(self) -> Aggregates:
        """The aggregates of every result folded in."""
        keys = self.evidence.keys()
        zeroable = self.evidence.zeroable(keys) if self.zero_candidates else {}
        per_template = {
            template_id: group.aggregates(keys, zeroable)
            for template_id, group in self.groups.items()
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
        micro = self.micro.aggregates(keys, zeroable)
        micro.repeats, noise = self.noise.finish()
        for template_id, spreads in noise.items():
            per_template[template_id].repeats = spreads
        for group in (micro, *per_template.values()):
            for key, spread in group.repeats.items():
                if key in group.coverage:  # a failed repeat is a failure shown in coverage
                    group.coverage[key].failed_repeats = spread.failed_repeats
        return Aggregates(per_template, micro, macro)


@dataclass(slots=True)
class _Facts:
    """What one question contributes to the aggregates of every group it belongs to."""

    is_error: bool
    is_missing: bool
    values: dict[str, list[Any]]
    coverage: dict[str, str]
    """Key -> ``scored``, ``failed`` or ``zero`` (an error sample that counts as 0 on the key
    if the key turns out zeroable); the keys not named are skipped."""
    step_names: list[str]
    empty_steps: list[str]
    error_steps: list[str]
    failure_reasons: dict[str, str] = field(default_factory=dict)
    """Key -> the error of its metric, where it failed."""
    diagnoses: list[list[str]] = field(default_factory=list)
    """The labels of each reference step's ``query_diagnosis``."""


def _facts(
    item: QuestionResult,
    outcomes: StepOutcomes,
    keys: AggregatedKeys,
    zero_candidates: Mapping[str, OutputKey],
) -> _Facts:
    values: dict[str, list[Any]] = {}
    coverage: dict[str, str] = {}
    if item.is_error:
        for name, zero in zero_candidates.items():
            if all(item.has(field) for field in zero.requires):
                coverage[name] = "zero"
        return _Facts(True, item.missing_response, values, coverage, [], [], [])
    positions = item.step_positions()
    levels: dict[bool, list[int | None]] = {True: list(positions), False: [None]}
    scored = {level: outcomes.values.get(level, {}) for level in (None, *positions)}
    failed = {level: outcomes.failed.get(level, {}) for level in (None, *positions)}
    reasons: dict[str, str] = {}
    # Most of the keys the metrics declare are not on a given question (another metric's, a
    # step metric's on a question without such steps): only those it has are looked into.
    present = {name for level_values in scored.values() for name in level_values}
    any_failed = any(failed.values())
    for name, (spec, on_steps) in keys.items():
        if not any_failed and name not in present:
            continue  # neither scored nor failed: skipped, as a key left out is
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
    diagnoses = query_diagnoses(item.fields.get("reference_steps"))
    return _Facts(False, False, values, coverage, names, empty, errors, reasons, diagnoses)


def query_diagnoses(groups: Any) -> list[list[str]]:
    """The distinct labels of the ``query_diagnosis`` of each reference step that has one
    (docs/knowledge-graph.md)."""
    found: list[list[str]] = []
    for group in groups if isinstance(groups, list) else ():
        for step in group if isinstance(group, list) else ():
            diagnosis = step.get("query_diagnosis") if isinstance(step, Mapping) else None
            if isinstance(diagnosis, list):
                labels = (f.get("label") for f in diagnosis if isinstance(f, Mapping))
                found.append(list(dict.fromkeys(str(x) for x in labels if isinstance(x, str))))
    return found


class _Column:
    """The values of one key in one group, in order: floats in an ``array('d')`` while every
    value is a float (the common case), else the values themselves; and where an error
    sample would count as 0 (positions among the values)."""

    __slots__ = ("floats", "objects", "zeros_at")

    def __init__(self) -> None:
        self.floats = array("d")
        self.objects: list[Any] | None = None
        self.zeros_at = array("q")

    def extend(self, values: Sequence[Any]) -> None:
        if self.objects is None:
            for value in values:  # (a loop: most lists hold one value, no generator for it)
                if type(value) is not float:
                    break
            else:
                self.floats.extend(values)
                return
            self.objects = self.floats.tolist()
            self.floats = array("d")
        self.objects.extend(values)

    def values(self, zeros: bool) -> list[Any]:
        """The values in order, with the error samples' zeros when ``zeros``."""
        values = self.floats.tolist() if self.objects is None else self.objects
        if not zeros or not self.zeros_at:
            return values
        merged: list[Any] = []
        start = 0
        for position in self.zeros_at:
            merged.extend(values[start:position])
            merged.append(0.0)
            start = position
        merged.extend(values[start:])
        return merged

    def __len__(self) -> int:
        return len(self.floats) if self.objects is None else len(self.objects)


class _Group:
    """What the aggregates of one template (or ``micro``) need, folded one result at a time."""

    def __init__(self) -> None:
        self.items = 0
        self.errors = 0
        self.missing = 0
        self.columns: dict[str, _Column] = {}
        self.scored: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()
        self.reasons: dict[str, Counter[str]] = {}
        self.total: Counter[str] = Counter()
        self.once: Counter[str] = Counter()
        self.empty: Counter[str] = Counter()
        self.step_errors: Counter[str] = Counter()
        self.diagnosed = 0
        self.labels: Counter[str] = Counter()

    def column(self, name: str) -> _Column:
        column = self.columns.get(name)
        if column is None:
            column = self.columns[name] = _Column()
        return column

    def add(self, item: _Facts) -> None:
        self.items += 1
        if item.is_error:
            self.errors += 1
            self.missing += item.is_missing
        for name, status in item.coverage.items():
            if status == "zero":
                column = self.column(name)
                column.zeros_at.append(len(column))
            elif status == "scored":
                self.scored[name] += 1
            else:
                self.failed[name] += 1
        for name, values in item.values.items():
            self.column(name).extend(values)
        for name, reason in item.failure_reasons.items():
            self.reasons.setdefault(name, Counter())[reason] += 1
        if item.step_names:  # (most lists of steps are empty: no call for them)
            self.total.update(item.step_names)
            # Each name once, in order of appearance: a set's order changes with the
            # process's string hashes, and so would the order of the keys written.
            self.once.update(dict.fromkeys(item.step_names, 1))
        if item.empty_steps:
            self.empty.update(item.empty_steps)
        if item.error_steps:
            self.step_errors.update(item.error_steps)
        self.diagnosed += len(item.diagnoses)
        for labels in item.diagnoses:
            self.labels.update(labels)

    def aggregates(
        self, keys: AggregatedKeys, zeroable: Mapping[str, OutputKey]
    ) -> GroupAggregates:
        group = GroupAggregates(
            error_samples=self.errors,
            success_samples=self.items - self.errors,
            missing_samples=self.missing,
        )
        for name in keys:
            column = self.columns.get(name)
            zeros = len(column.zeros_at) if column is not None and name in zeroable else 0
            scored, failed = self.scored[name] + zeros, self.failed[name]
            group.coverage[name] = Coverage(
                scored, failed, self.items - scored - failed, Counter(self.reasons.get(name, ()))
            )
        for name, (spec, _) in keys.items():
            column = self.columns.get(name)
            values = column.values(name in zeroable) if column is not None else []
            if spec.aggregation is Aggregation.LABEL:
                counted = Counter(str(value) for value in values)
                if values:
                    ordered = {label: counted[label] for label in spec.labels}
                    group.keys[name] = ordered | {
                        k: v for k, v in counted.items() if k not in ordered
                    }
                for label, count_key in spec.counts:
                    group.keys[count_key] = counted[label]
                continue
            numbers = [value for value in values if is_number(value)]
            if numbers:
                group.keys[name] = _statistics(numbers)
            elif spec.always:
                group.keys[name] = Statistics(0, 0, 0, 0, 0)
        group.steps = StepCounts(
            dict(self.total), dict(self.once), dict(self.empty), dict(self.step_errors)
        )
        group.diagnosed_steps = self.diagnosed
        group.query_diagnosis = dict(self.labels.most_common())
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
