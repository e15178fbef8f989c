"""The per-repeat values of a judged key under ``llm.repeats``, read from a result's outcomes
through the companions its metric declares (:attr:`~graphrag_eval.results.model.MetricLayout.
repeats`), never from a key's name (docs/outputs.md, "Repeats"). What
:meth:`~graphrag_eval.results.model.QuestionResult.repeat_values` gives."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from graphrag_eval.metrics.base import Outcome, Scored

__all__ = ["RepeatValues", "repeat_row", "repeat_values", "repeated_keys"]

RepeatValues = tuple[float | None, ...]
"""The N values of a key, one per repeat in repeat order; ``None`` where the repeat failed."""


class _Layout(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def on_steps(self) -> bool: ...
    @property
    def repeats(self) -> Mapping[str, tuple[str, ...]]: ...


def repeated_keys(layouts: Iterable[_Layout]) -> dict[str, tuple[_Layout, str]]:
    """Every key with repeats the layouts declare -> (its metric, its per-repeat values'
    key)."""
    return {
        key: (layout, companions[0])
        for layout in layouts
        for key, companions in layout.repeats.items()
    }


def repeat_values(
    layouts: Iterable[_Layout],
    outcomes: Mapping[Any, Outcome],
    key: str,
    step: int | None = None,
) -> RepeatValues | None:
    """``key``'s values per repeat on the question (``step`` ``None``) or on one step; for a
    key of a metric of steps on the question, each repeat's mean over the steps that have a
    value in it. ``None`` when the key has no numeric repeats there."""
    found = repeated_keys(layouts).get(key)
    if found is None:
        return None
    layout, values_key = found
    if step is None and layout.on_steps:
        per_step = [
            listed
            for (metric, at), outcome in outcomes.items()
            if metric == layout.name and at is not None
            if (listed := _listed(outcome, values_key)) is not None
        ]
        if not per_step or len({len(listed) for listed in per_step}) != 1:
            return None
        return tuple(_mean([listed[i] for listed in per_step]) for i in range(len(per_step[0])))
    return _listed(outcomes.get((layout.name, step)), values_key)


def _listed(outcome: Outcome | None, values_key: str) -> RepeatValues | None:
    if not isinstance(outcome, Scored):
        return None
    return _numbers(outcome.values.get(values_key))


def _numbers(listed: Any) -> RepeatValues | None:
    """A per-repeat list as numbers (``None`` for a failed repeat); ``None`` for anything
    else (labels, no list)."""
    if not isinstance(listed, list) or not listed:
        return None
    numbers: list[float | None] = []
    for value in listed:
        if value is None:
            numbers.append(None)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            numbers.append(float(value) if math.isfinite(value) else None)
        else:
            return None  # labels: no numeric repeats
    return tuple(numbers)


def _mean(values: list[float | None]) -> float | None:
    numbers = [value for value in values if value is not None]
    return statistics.fmean(numbers) if numbers else None


def repeat_row(
    values: Mapping[str, Any],
    steps: Iterable[Mapping[str, Any]],
    keys: Mapping[str, tuple[_Layout, str]],
) -> dict[str, RepeatValues]:
    """Key -> its numeric repeats on one result, from its flat values (a record, or a typed
    result's :meth:`~graphrag_eval.results.model.QuestionResult.values`) and its steps'
    (each repeat's mean over the steps for a key of a metric of steps); ``keys`` from
    :func:`repeated_keys`. Empty for a result without repeats."""
    row: dict[str, RepeatValues] = {}
    step_list: list[Mapping[str, Any]] | None = None
    for key, (layout, values_key) in keys.items():
        if not layout.on_steps:
            listed = _numbers(values.get(values_key))
            if listed is not None:
                row[key] = listed
            continue
        step_list = list(steps) if step_list is None else step_list
        per_step = [
            listed for step in step_list if (listed := _numbers(step.get(values_key))) is not None
        ]
        if per_step and len({len(listed) for listed in per_step}) == 1:
            row[key] = tuple(
                _mean([listed[i] for listed in per_step]) for i in range(len(per_step[0]))
            )
    return row
