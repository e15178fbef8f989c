"""The message of a test whose evaluation failed: the failed gates, then the questions that
explain them (the lowest on a missed threshold, the largest falls from the baseline, the
questions the agent or a metric failed on), and where the run's files are
(docs/integrations.md, "pytest"). Every text from the inputs is shown with its hidden
characters escaped (:func:`graphrag_eval.formatting.visible_text`) and each on one line."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from graphrag_eval.comparison.gates import Threshold
from graphrag_eval.comparison.units import format_amount
from graphrag_eval.formatting import format_number, plural, visible_text
from graphrag_eval.testing.evaluation import Evaluation

__all__ = ["failure_message"]


def failure_message(evaluation: Evaluation, worst: int = 5) -> str:
    """What failed, and at most ``worst`` questions per reason."""
    checks = len(evaluation.failures)
    checks += bool(evaluation.agent_failures) + bool(evaluation.failed_metrics)
    lines = [
        f"graphrag-eval: {plural(checks, 'check')} failed; the run is in "
        f"{evaluation.out_dir} (report: {evaluation.report})"
    ]
    lines += [f"  FAIL {failure}" for failure in evaluation.failures]
    questions = len(evaluation.records)
    if evaluation.agent_failures:
        count = len(evaluation.agent_failures)
        lines.append(f"  FAIL agent: failed on {count:,} of {plural(questions, 'question')}")
    if evaluation.failed_metrics:
        count = len({failure.question_id for failure in evaluation.failed_metrics})
        lines.append(
            f"  FAIL {plural(len(evaluation.failed_metrics), 'metric value')} could not be "
            f"computed, on {plural(count, 'question')}"
        )
    lines += _lowest(evaluation, worst)
    lines += _falls(evaluation, worst)
    lines += _listed(
        "questions the agent failed on",
        [(f.question_id, f.template_id, f.reason) for f in evaluation.agent_failures],
        worst,
    )
    lines += _listed(
        "metrics that could not be computed",
        [
            (f.question_id, f.template_id, f"{f.metric}: {f.message}")
            for f in evaluation.failed_metrics
        ],
        worst,
    )
    return "\n".join(_one_line(line) for line in lines)


def _one_line(line: str) -> str:
    """``line`` with its hidden characters escaped, and a line break (from an id, a reason)
    written as ``\\n``: each entry stays on its line, and no line of the message begins
    with what the input put after a break (``::error::``, a workflow command under GitHub
    Actions, with ``--tb=native``)."""
    return visible_text(line).replace("\n", "\\n")


def _gated(evaluation: Evaluation) -> list[str]:
    """The metrics a gate names, each once."""
    names = [threshold.metric for threshold in evaluation.gates.thresholds]
    return list(dict.fromkeys([*names, *evaluation.regressed]))


def _values(record: dict[str, Any], metrics: Sequence[str]) -> str:
    """``steps_score 0.5, answer_f1 -`` (or the error of an error response)."""
    if record.get("status") == "error":
        return f"error: {' '.join(str(record.get('error', '')).split())[:200]}"
    return ", ".join(f"{name} {_shown(record.get(name))}" for name in metrics)


def _shown(value: Any) -> str:
    return format_number(value) if _number(value) else "-"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _lowest(evaluation: Evaluation, worst: int) -> list[str]:
    """Per missed threshold, the questions furthest on the wrong side of it: error
    responses first, then the lowest values (the highest for ``fail_over``)."""
    lines: list[str] = []
    gated = _gated(evaluation)
    for threshold in evaluation.missed:
        name = threshold.metric

        def rank(record: dict[str, Any], name: str = name, upper: bool = threshold.upper) -> Any:
            value: Any = record.get(name)
            if record.get("status") == "error" or not _number(value):
                return (0, 0.0)
            return (1, -value if upper else value)

        wrong = [record for record in evaluation.records if _wrong_side(record, threshold)]
        ranked = sorted(wrong, key=rank)[:worst]
        side = "highest" if threshold.upper else "lowest"
        lines.append(f"worst questions on {name} ({side} first):")
        lines += [
            f"  {record.get('question_id')} (template {record.get('template_id')}): "
            + _values(record, gated)
            for record in ranked
        ]
    return lines


def _wrong_side(record: dict[str, Any], threshold: Threshold) -> bool:
    """An error response, or a value on the wrong side of ``threshold``."""
    value: Any = record.get(threshold.metric)
    if record.get("status") == "error":
        return True
    if not _number(value):
        return False
    return bool(value > threshold.value if threshold.upper else value < threshold.value)


def _falls(evaluation: Evaluation, worst: int) -> list[str]:
    """Per metric that regressed, the questions that fell most from the baseline."""
    comparison = evaluation.comparison
    if comparison is None:
        return []
    lines: list[str] = []
    for name in evaluation.regressed:
        change = comparison.overall[name]
        lines.append(
            f"questions worse on {name} than in the baseline {comparison.run_a} "
            f"({change.regressed:,} of {change.pairs:,}; largest fall first):"
        )
        lines += [
            f"  {item.question_id} (template {item.template_id}): "
            f"{format_amount(item.a, change.unit)} -> {format_amount(item.b, change.unit)}"
            for item in change.worse_items[:worst]
        ]
    return lines


def _listed(title: str, items: Sequence[tuple[str, str, str]], worst: int) -> list[str]:
    if not items:
        return []
    lines = [f"{title}:"]
    lines += [f"  {qid} (template {template}): {why}" for qid, template, why in items[:worst]]
    if len(items) > worst:
        lines.append(f"  ... and {len(items) - worst:,} more (see results.jsonl)")
    return lines
