"""One saved flat record read into its typed result (docs/outputs.md): each key goes to the
metric that declares it. Records of one set of keys are read by a plan worked out once for
that set (docs/benchmarks.md, "Report render, 100,000 questions");
:mod:`graphrag_eval.results.from_records` reads runs of records with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from graphrag_eval.metrics.base import Failed, FailureKind, Outcome, Scored, Skipped
from graphrag_eval.metrics.registry import IDENTITY_KEYS
from graphrag_eval.results.model import (
    FAILURE_KINDS_KEY,
    SKIPPED_KEY,
    OutcomeKey,
    QuestionResult,
    ResultLayout,
)

__all__ = ["PLANS_KEPT", "Owners", "is_reasons", "read_by_keys", "read_typed"]

PLANS_KEPT = 1024  # sets of keys remembered: a run has a few; a hostile file gets no more


class Owners:
    """Which metric each key belongs to: on the question, and on a step."""

    def __init__(self, layout: ResultLayout) -> None:
        self.item: dict[str, tuple[OutcomeKey, bool]] = {}
        """key -> (the question-level outcome it belongs to, whether it is an output)"""
        self.step: dict[str, tuple[str, bool]] = {}
        """key -> (the step metric it belongs to, whether it is an output)"""
        self.plans: dict[tuple[Any, ...], _Plan] = {}
        """A set of a record's keys -> how :func:`read_typed` reads it."""
        for metric in layout.metrics.values():
            at = OutcomeKey(metric.name)  # one key object per metric, not one per value read
            for output in metric.outputs:
                self.item.setdefault(output.name, (at, True))
            for key in metric.error_keys:
                self.item.setdefault(key, (at, False))
            if metric.on_steps:
                for output in metric.outputs:
                    self.step.setdefault(output.name, (metric.name, True))
                for key in metric.error_keys:
                    self.step.setdefault(key, (metric.name, False))


_Parts = dict[OutcomeKey, tuple[dict[str, Any], dict[str, Any]]]


class _Plan(NamedTuple):
    """How :func:`read_typed` reads every record with one set of keys that has no steps, skip
    reasons or failure kinds to read (worked out once per set of keys)."""

    fields: tuple[str, ...]
    """Its keys that are no metric's, in its order."""
    parts: tuple[tuple[OutcomeKey, tuple[str, ...], tuple[str, ...]], ...]
    """Each metric it has keys of, in order of its first key: the metric's outputs and error
    keys among them, in the record's order."""


_NO_PLAN = _Plan((), ())  # a set of keys read key by key


def _plan(keys: tuple[Any, ...], owners: Owners) -> _Plan:
    """:class:`_Plan` of a set of keys, or :data:`_NO_PLAN` when a key may hold steps, skip
    reasons or failure kinds (read key by key, as their values decide)."""
    if "actual_steps" in keys or SKIPPED_KEY in keys or FAILURE_KINDS_KEY in keys:
        return _NO_PLAN
    fields: list[str] = []
    parts: dict[OutcomeKey, tuple[list[str], list[str]]] = {}
    for key in keys:
        owner = owners.item.get(key)
        if owner is not None and key not in IDENTITY_KEYS:
            part = parts.get(owner[0])
            if part is None:
                part = parts[owner[0]] = ([], [])
            part[0 if owner[1] else 1].append(key)
        else:
            fields.append(key)
    return _Plan(tuple(fields), tuple((at, tuple(o), tuple(e)) for at, (o, e) in parts.items()))


def read_typed(record: Mapping[str, Any], layout: ResultLayout, owners: Owners) -> QuestionResult:
    """The typed result of one record; read by its set of keys' :class:`_Plan` when it has
    one (docs/benchmarks.md, "Report render, 100,000 questions"), else key by key."""
    keys = tuple(record)
    plan = owners.plans.get(keys)
    if plan is None:
        plan = _plan(keys, owners)
        if len(owners.plans) < PLANS_KEPT:
            owners.plans[keys] = plan
    if plan is _NO_PLAN:
        return read_by_keys(record, layout, owners)
    outcomes: dict[OutcomeKey, Outcome] = {}
    for at, outputs, errors in plan.parts:
        values = {key: record[key] for key in outputs}
        outcomes[at] = (
            _outcome(layout, at, values, {key: record[key] for key in errors}, {})
            if errors
            else Scored(values)
        )
    return QuestionResult({key: record[key] for key in plan.fields}, outcomes, layout)


def read_by_keys(record: Mapping[str, Any], layout: ResultLayout, owners: Owners) -> QuestionResult:
    fields: dict[str, Any] = {}
    parts: _Parts = {}
    skipped: Any = None
    kinds: Mapping[str, FailureKind] = {}
    for key, value in record.items():
        owner = owners.item.get(key)
        if owner is not None and key not in IDENTITY_KEYS:
            part = parts.get(owner[0])
            if part is None:
                part = parts[owner[0]] = ({}, {})
            part[0 if owner[1] else 1][key] = value
        elif key == "actual_steps" and isinstance(value, list):
            fields[key] = [_read_step(i, step, owners, parts) for i, step in enumerate(value)]
        elif key == SKIPPED_KEY and is_reasons(value):
            skipped = value
        elif key == FAILURE_KINDS_KEY and is_reasons(value):
            kinds = _kinds(value)
        else:
            fields[key] = value
    outcomes = {
        key: Scored(values) if not errors else _outcome(layout, key, values, errors, kinds)
        for key, (values, errors) in parts.items()
    }
    if skipped is not None:
        if skipped and not any(OutcomeKey(name) in outcomes for name in skipped):
            outcomes.update({OutcomeKey(name): Skipped(reason) for name, reason in skipped.items()})
        else:  # empty, or naming a metric that has values: not ours to read, kept as it was
            fields[SKIPPED_KEY] = skipped
    return QuestionResult(fields, outcomes, layout)


def _read_step(index: int, step: Any, owners: Owners, parts: _Parts) -> Any:
    if not isinstance(step, Mapping):
        return step
    kept = {}
    for key, value in step.items():
        owner = owners.step.get(key)
        if owner is None:
            kept[key] = value
        else:
            _collect(parts, OutcomeKey(owner[0], index), owner[1], key, value)
    return kept


def _collect(parts: _Parts, at: OutcomeKey, is_output: bool, key: str, value: Any) -> None:
    part = parts.get(at)
    if part is None:
        part = parts[at] = ({}, {})
    part[0 if is_output else 1][key] = value


def _outcome(
    layout: ResultLayout,
    at: OutcomeKey,
    values: dict[str, Any],
    errors: dict[str, Any],
    kinds: Mapping[str, FailureKind],
) -> Outcome:
    """A metric's keys read back: :class:`Failed` when they are exactly what a failure
    writes (every error key, one message), else :class:`Scored` with its partial failures;
    either with the kind the record gives the metric (``None`` in an older record)."""
    kind = kinds.get(at.metric)
    if not errors:
        return Scored(values)
    metric = layout.metrics.get(at.metric)
    messages = set(map(repr, errors.values()))
    if (
        not values
        and metric is not None
        and metric.error_keys
        and set(errors) == set(metric.error_keys)
        and len(messages) == 1
        and all(isinstance(message, str) for message in errors.values())
    ):
        return Failed(next(iter(errors.values())), kind)
    return Scored(values, errors, kind)


def _kinds(value: Mapping[str, str]) -> dict[str, FailureKind]:
    """The known kinds of a record's ``failure_kinds`` (an unknown one, as not given)."""
    known = {kind.value: kind for kind in FailureKind}
    return {metric: known[kind] for metric, kind in value.items() if kind in known}


def is_reasons(value: Any) -> bool:
    return isinstance(value, Mapping) and all(
        isinstance(name, str) and isinstance(reason, str) for name, reason in value.items()
    )
