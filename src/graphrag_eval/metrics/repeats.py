"""A judged metric's N repeats made one outcome (``llm.repeats``; docs/llm.md, "Repeats and
judge noise"; the keys: docs/outputs.md, "Repeats").

Every LLM-judged metric of an item (one that ``needs`` the judge) is judged N times, each
repeat its own judge calls (:mod:`graphrag_eval.llm.repeat`); :func:`combine_repeats` makes
the N outcomes the one outcome the result holds:

- a numeric score ``K``: the mean over the successful repeats, with ``K_repeats`` (the N
  per-repeat values, ``null`` for a repeat that failed) and ``K_repeats_std`` (the sample
  standard deviation of the successful ones, ``null`` below two);
- a label (or a value that is no number, a custom output's ``true``): the commonest among the
  successful repeats (a tie goes to the one judged first), with ``K_repeats``;
- a cost: the sum over the repeats (what they cost together);
- a detail (the judge's reason, a count): the first successful repeat's.

A repeat that failed stays visible: its value is ``null`` in ``K_repeats``, the metric's
error keys say how many of the N failed and why (a partial failure, with its kind, which a
resumed run redoes when calling again may mend: only the failed repeat is asked again, the
others come from the cache), and the aggregates count the failed repeats. When every repeat
failed, the metric failed on the item. Without repeats (N = 1) nothing here runs.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from graphrag_eval.metrics.base import (
    Aggregation,
    Failed,
    FailureKind,
    JsonValue,
    KeyKind,
    Metric,
    Outcome,
    OutputKey,
    RepeatPart,
    Scored,
)

__all__ = [
    "combine_repeats",
    "is_judged",
    "repeat_companions",
    "repeat_key",
    "with_repeat_companions",
]


def is_judged(metric: Metric) -> bool:
    """Whether ``llm.repeats`` judges the metric N times: it needs the judge. Deterministic
    metrics, and the embedding-only ones, are computed once."""
    return "judge" in metric.needs


def repeat_key(name: str, part: RepeatPart) -> str:
    """The name of a companion of ``name``: ``<name>_repeats`` or ``<name>_repeats_std`` (the
    one place that makes it; readers take the companions from :func:`repeat_companions`'
    declarations)."""
    return f"{name}_repeats" if part is RepeatPart.VALUES else f"{name}_repeats_std"


def repeat_companions(output: OutputKey) -> tuple[OutputKey, ...]:
    """The keys a judged metric's ``output`` gets under repeats: a score's per-repeat values
    and their standard deviation (in its unit), a label's per-repeat labels; none for a
    detail or a cost. Details, not aggregated themselves: the aggregates' ``repeats`` block
    folds them (docs/outputs.md)."""
    if output.kind is not KeyKind.SCORE or output.aggregation is Aggregation.NONE:
        return ()
    parts = (
        (RepeatPart.VALUES,)
        if output.aggregation is Aggregation.LABEL
        else (RepeatPart.VALUES, RepeatPart.STD)
    )
    return tuple(
        OutputKey(
            repeat_key(output.name, part),
            Aggregation.NONE,
            error_keys=output.error_keys,
            requires=output.requires,
            maximum=output.maximum if part is RepeatPart.VALUES else None,
            unit=output.unit,
            kind=KeyKind.DETAIL,
            repeats_of=output.name,
            repeat_part=part,
        )
        for part in parts
    )


def with_repeat_companions(outputs: Sequence[OutputKey]) -> tuple[OutputKey, ...]:
    """``outputs`` with each one's :func:`repeat_companions` right after it."""
    return tuple(key for output in outputs for key in (output, *repeat_companions(output)))


def combine_repeats(
    outcomes: Sequence[Outcome], outputs: Sequence[OutputKey], error_keys: Sequence[str]
) -> Outcome:
    """The one outcome of a judged metric's repeats (``outcomes``, in repeat order), as the
    module's docstring says. ``outputs``: the metric's declared keys; ``error_keys``: the keys
    its failure is written to."""
    scored = [outcome if isinstance(outcome, Scored) else None for outcome in outcomes]
    if not any(scored):
        failed = [outcome for outcome in outcomes if isinstance(outcome, Failed)]
        if not failed:
            return outcomes[0]  # skipped every time: a reason of the item, not of the judge
        first = failed[0]
        message = f"all {len(outcomes)} repeats failed: {first.error}"
        return Failed(message, Scored.kind_of(*failed), first.source)
    declared = {output.name: output for output in outputs}
    values: dict[str, JsonValue] = {}
    for name in dict.fromkeys(name for one in scored if one for name in one.values):
        per_repeat = [one.values.get(name) if one else None for one in scored]
        values.update(_combined(name, per_repeat, declared.get(name)))
    failures, kind = _failures(outcomes, scored, error_keys)
    return Scored(values, failures, kind)


def _combined(
    name: str, per_repeat: list[JsonValue], output: OutputKey | None
) -> dict[str, JsonValue]:
    judged = [value for value in per_repeat if value is not None]
    if output is None or output.kind is KeyKind.DETAIL or output.aggregation is Aggregation.NONE:
        return {name: judged[0] if judged else None}
    if output.kind is KeyKind.COST:
        costs = [float(value) for value in judged if isinstance(value, int | float)]
        return {name: sum(costs) if costs else (judged[0] if judged else None)}
    if output.kind is not KeyKind.SCORE:
        return {name: judged[0] if judged else None}
    companions = {part.repeat_part: part.name for part in repeat_companions(output)}
    combined: dict[str, JsonValue] = {}
    if all(_is_number(value) for value in judged) and RepeatPart.STD in companions:
        numbers = [float(value) for value in judged if isinstance(value, int | float)]
        combined[name] = statistics.fmean(numbers) if numbers else None
        combined[companions[RepeatPart.VALUES]] = list(per_repeat)
        std = statistics.stdev(numbers) if len(numbers) >= 2 else None
        combined[companions[RepeatPart.STD]] = std
        return combined
    combined[name] = _commonest(judged)
    combined[companions[RepeatPart.VALUES]] = list(per_repeat)
    if RepeatPart.STD in companions:
        combined[companions[RepeatPart.STD]] = None  # no spread of labels
    return combined


def _commonest(values: Sequence[JsonValue]) -> JsonValue:
    """The commonest value (a tie: the one judged first), ``None`` when there is none."""
    if not values:
        return None
    counts = Counter(repr(value) for value in values)
    best = max(counts.values())
    return next(value for value in values if counts[repr(value)] == best)


def _failures(
    outcomes: Sequence[Outcome], scored: Sequence[Scored | None], error_keys: Sequence[str]
) -> tuple[dict[str, str], FailureKind | None]:
    """The error keys of the combined outcome: each successful repeat's own partial failures
    (the first message of each key), and, where some repeat failed, how many and why."""
    failures: dict[str, str] = {}
    kinds: list[Failed] = []
    for one in scored:
        if one is not None and one.failures:
            for key, message in one.failures.items():
                failures.setdefault(key, message)
            kinds.append(Failed(next(iter(one.failures.values())), one.failure_kind))
    failed = [outcome for outcome in outcomes if not isinstance(outcome, Scored)]
    if failed:
        first = failed[0]
        why = first.error if isinstance(first, Failed) else f"skipped: {first.reason}"
        message = f"{len(failed)} of {len(outcomes)} repeats failed: {why}"
        for key in error_keys:
            failures.setdefault(key, message)
        kinds.extend(outcome for outcome in failed if isinstance(outcome, Failed))
    return failures, Scored.kind_of(*kinds) if kinds else None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
