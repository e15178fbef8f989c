"""The drill-down of the HTML report: what is shown for one question (its texts, scores,
judge reasons, errors, skipped metrics, and its reference and actual steps with how they
matched), read from its typed result; see docs/report.md."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from graphrag_eval.formatting import Unit, format_value
from graphrag_eval.metrics.base import Aggregation, KeyKind, OutputKey
from graphrag_eval.metrics.registry import IDENTITY_KEYS
from graphrag_eval.report.injection import injection_notes
from graphrag_eval.report.step_views import MismatchView, mismatch_views
from graphrag_eval.results.model import QuestionResult
from graphrag_eval.steps.reasons import NOT_REACHED

__all__ = [
    "ItemView",
    "StepView",
    "clip_text",
    "headline_keys",
    "headline_score",
    "headline_scores",
    "item_view",
]

_TEXT_LIMIT = 4_000  # characters of an answer or step output shown per item


@dataclass(frozen=True, slots=True)
class StepView:
    label: str
    name: str
    args: str
    status: str
    detail: str


@dataclass(slots=True)
class ItemView:
    """One question in the drill-down list."""

    question_id: str
    template_id: str
    status: str
    score: float | None
    """The mean of its headline scores as a fraction of their best values."""
    question: str
    reference: str
    actual: str
    error: str
    scores: list[tuple[str, str]] = field(default_factory=list)
    reasons: list[tuple[str, str]] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """Metrics that did not apply to the question, with why."""
    injection: list[str] = field(default_factory=list)
    """Where its answer or step outputs address the grader (report/injection.py)."""
    reference_steps: list[StepView] = field(default_factory=list)
    actual_steps: list[StepView] = field(default_factory=list)
    mismatches: list[MismatchView] = field(default_factory=list)
    """Reference steps below a full match, with why (report/step_views.py)."""


def clip_text(value: Any) -> str:
    """A value as text (tool arguments one per line, other data as JSON), cut at the length
    shown per item."""
    if value is None:
        return ""
    if isinstance(value, str):
        text = value
    elif isinstance(value, Mapping):  # tool arguments: one per line, strings as they are
        text = "\n".join(
            f"{key}: {item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)}"
            for key, item in value.items()
        )
    else:
        text = json.dumps(value, ensure_ascii=False, indent=1)
    if len(text) > _TEXT_LIMIT:
        return text[:_TEXT_LIMIT] + f"... ({len(text) - _TEXT_LIMIT:,} more characters)"
    return text


def headline_keys(keys: Mapping[str, OutputKey]) -> dict[str, float]:
    """The headline scores among ``keys`` that have a best value, with that value."""
    return {name: spec.maximum for name, spec in keys.items() if spec.headline and spec.maximum}


def headline_score(scores: Mapping[str, float], headline: Mapping[str, float]) -> float | None:
    """The mean of an item's headline scores (``headline``: from :func:`headline_keys`), each
    as a fraction of its best value."""
    return headline_scores([scores], headline)[0]


def headline_scores(
    rows: Iterable[Mapping[str, float]], headline: Mapping[str, float]
) -> list[float | None]:
    """:func:`headline_score` of each row (in one loop: the report asks it of every row)."""
    pairs = tuple(headline.items())
    means: list[float | None] = []
    for scores in rows:
        total, count = 0.0, 0
        for name, best in pairs:
            value = scores.get(name)
            if value is not None:
                total += value / best
                count += 1
        means.append(total / count if count else None)
    return means


def item_view(
    result: QuestionResult,
    scores: Mapping[str, float],
    keys: Mapping[str, OutputKey],
    score: float | None,
) -> ItemView:
    """The texts shown for one question (made only for the questions listed): its scores and
    labels, the judge's reasons (text values of keys that are not aggregated), the errors of
    its metrics, and the metrics skipped on it with why."""
    fields = result.fields
    item = ItemView(
        question_id=str(result.question_id),
        template_id=str(result.template_id),
        status=str(result.status),
        score=score,
        question=clip_text(fields.get("question_text")),
        reference=clip_text(fields.get("reference_answer")),
        actual=clip_text(fields.get("actual_answer")),
        error=clip_text(result.error),
    )
    declared = result.layout.outputs()
    item.scores = [
        (name, format_value(value, shown.unit) + _repeats(result, name, shown.unit))
        for name, value in scores.items()
        if (shown := _spec(name, declared, keys)).kind is not KeyKind.COST
    ]
    for name, value in result.values().items():
        spec = declared[name][0] if name in declared else keys.get(name)
        if spec is not None and spec.aggregation is Aggregation.LABEL:
            item.scores.append((name, clip_text(value)))
        elif spec is not None and spec.aggregation is Aggregation.NONE and _is_text(value):
            item.reasons.append((name, clip_text(value)))
    for name, value in fields.items():  # text the record holds that no metric declares
        if name not in IDENTITY_KEYS and _is_text(value):
            item.reasons.append((name, clip_text(value)))
    item.errors = [
        (name, clip_text(message)) for name, message in result.failed_keys().items() if message
    ]
    problems = fields.get("input_errors")
    for problem in problems if isinstance(problems, list) else ():
        item.errors.append(("input_errors", clip_text(problem)))
    item.skipped = [(name, clip_text(reason)) for name, reason in result.skipped().items()]
    item.injection = injection_notes(result.fields)
    matched: dict[str, str] = {}
    item.reference_steps = _reference_steps(fields, matched)
    item.actual_steps = _actual_steps(result, matched)
    item.mismatches = mismatch_views(fields)
    return item


def _repeats(result: QuestionResult, name: str, unit: Unit) -> str:
    """`` (repeats: 40, 60, 50)``: a judged score's values under ``llm.repeats`` (``-`` for a
    repeat that failed), shown after its mean; empty without repeats."""
    values = result.repeat_values(name)
    if values is None:
        return ""
    return f" (repeats: {', '.join(format_value(value, unit) for value in values)})"


def _spec(
    name: str, declared: Mapping[str, tuple[OutputKey, bool]], keys: Mapping[str, OutputKey]
) -> OutputKey:
    """The declaration of a key: its metric's, the run's, or a score's (docs/outputs.md)."""
    if name in declared:
        return declared[name][0]
    return keys.get(name) or OutputKey(name)


def _unit(name: str, declared: Mapping[str, tuple[OutputKey, bool]]) -> Unit:
    return declared[name][0].unit if name in declared else Unit.SCORE


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _reference_steps(result: Mapping[str, Any], matched: dict[str, str]) -> list[StepView]:
    """The reference steps, numbered group.step; fills ``matched`` with the actual step ids
    they matched."""
    views = []
    for g, group in enumerate(result.get("reference_steps") or ()):
        for i, step in enumerate(group if isinstance(group, list) else ()):
            if not isinstance(step, Mapping):
                continue
            target = step.get("matches")
            if target is not None:
                matched[str(target)] = f"matches reference step {g + 1}.{i + 1}"
            views.append(
                StepView(
                    label=f"{g + 1}.{i + 1}",
                    name=str(step.get("name")),
                    args=clip_text(step.get("args")),
                    status=_reference_status(step),
                    detail=(
                        f"by actual step {target}"
                        if target is not None
                        else clip_text(step.get("input_error") or step.get("mismatch_reason"))
                    ),
                )
            )
    return views


def _reference_status(step: Mapping[str, Any]) -> str:
    """A reference step's status: matched, not matched, or, as its ``mismatch_reason`` begins,
    not scored (a group ``last_group`` mode does not score) or not compared (docs/steps.md)."""
    if step.get("matches") is not None:
        return "matched"
    reason = step.get("mismatch_reason")
    head = reason.partition(":")[0] if isinstance(reason, str) else ""
    return head if head in NOT_REACHED else "not matched"


def _actual_steps(result: QuestionResult, matched: Mapping[str, str]) -> list[StepView]:
    """The actual steps, with what they matched, their scores and their problems."""
    declared = result.layout.outputs()
    views = []
    for number, step in enumerate(result.actual_steps, start=1):
        if not isinstance(step, Mapping):
            continue
        label = str(step.get("id", number))
        step_scores = ", ".join(
            f"{name} {format_value(value, _unit(name, declared))}"
            for name, value in result.values(number - 1).items()
            if isinstance(value, int | float) and not isinstance(value, bool)
        )
        problems = "; ".join(
            clip_text(step[name])
            for name in ("error", "input_error", "output_error")
            if step.get(name)
        )
        views.append(
            StepView(
                label=label,
                name=str(step.get("name")),
                args=clip_text(step.get("args")),
                status=str(step.get("status", "")),
                detail="; ".join(
                    part for part in (matched.get(label, ""), step_scores, problems) if part
                ),
            )
        )
    return views
