"""Human labels of a question: what annotators gave a metric on it (docs/inputs.md,
``human_labels``), checked against the judge by ``graphrag-eval agreement`` (docs/report.md).

A label is ``{metric, value, annotator}``: the output key it labels (``factual_accuracy_grade``,
``answer_correctness_f1``), the value (a number, ``true``/``false``, or a label such as ``B`` or
``CORRECT``) and who gave it (optional: ``human`` by default). This module checks the shape
only; whether a value fits its metric is decided against a run (``graphrag_eval.agreement``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from graphrag_eval.errors import InputError
from graphrag_eval.inputs.shapes import describe_kind

__all__ = [
    "DEFAULT_ANNOTATOR",
    "HumanLabel",
    "LabelValue",
    "label_value",
    "parse_human_labels",
]

DEFAULT_ANNOTATOR = "human"
MAX_TEXT = 200
"""The longest metric name, annotator or label value taken (longer is a bad label)."""
LABEL_KEYS = ("metric", "value", "annotator")

LabelValue = bool | float | str


@dataclass(frozen=True, slots=True)
class HumanLabel:
    """One annotator's value of one metric on one question, and where it was read."""

    question_id: str
    metric: str
    value: LabelValue
    annotator: str
    where: str
    """``file: item``, for messages about it (``labels.csv: line 4``, ``reference.yaml:
    question 'q1': human_labels[0]``)."""


def label_value(value: Any) -> LabelValue:
    """A label's value as given: a boolean, a finite number or a non-empty text; raises
    ValueError with the reason otherwise."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ValueError(f"expected a finite number, got {value}")
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise ValueError("empty")
        if len(text) > MAX_TEXT:
            raise ValueError(f"longer than {MAX_TEXT} characters")
        return text
    raise ValueError(f"expected a number, true/false or a label, got {describe_kind(value)}")


def name_of(value: Any, what: str) -> str:
    """A metric name or annotator: a non-empty text of at most ``MAX_TEXT`` characters."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected {what}, got {describe_kind(value)}")
    if len(value.strip()) > MAX_TEXT:
        raise ValueError(f"longer than {MAX_TEXT} characters")
    return value.strip()


def parse_human_labels(
    raw: Any, source: str, where: str, question_id: str
) -> tuple[HumanLabel, ...]:
    """A question's ``human_labels`` (absent: none): a list of ``{metric, value,
    annotator}``. Raises :class:`InputError` naming the label and field of the first problem
    (the reference is curated: docs/inputs.md)."""
    if raw is None:
        return ()
    if not isinstance(raw, list | tuple):
        raise InputError(
            f"expected a list of {{metric, value, annotator}}, got {describe_kind(raw)}",
            file=source,
            item=where,
            field="human_labels",
        )
    labels: list[HumanLabel] = []
    seen: dict[tuple[str, str], int] = {}
    for index, entry in enumerate(raw):
        path = f"human_labels[{index}]"
        label = _parse_label(entry, source, where, question_id, path)
        key = (label.metric, label.annotator)
        if key in seen:
            raise InputError(
                f"a second label of {label.metric} by {label.annotator!r} (the first is "
                f"human_labels[{seen[key]}]); give each annotator a name",
                file=source,
                item=where,
                field=f"{path}.annotator",
            )
        seen[key] = index
        labels.append(label)
    return tuple(labels)


def _parse_label(entry: Any, source: str, where: str, question_id: str, path: str) -> HumanLabel:
    if not isinstance(entry, Mapping):
        raise InputError(
            f"expected a mapping {{metric, value, annotator}}, got {describe_kind(entry)}",
            file=source,
            item=where,
            field=path,
        )
    unknown = sorted(str(key) for key in entry if key not in LABEL_KEYS)
    if unknown:
        raise InputError(
            f"unknown key {unknown[0]!r} (a label has metric, value and annotator)",
            file=source,
            item=where,
            field=path,
        )
    fields: dict[str, Any] = {}
    for name in LABEL_KEYS:
        value = entry.get(name)
        if value is None and name == "annotator":
            fields[name] = DEFAULT_ANNOTATOR
            continue
        if value is None:
            raise InputError("missing", file=source, item=where, field=f"{path}.{name}")
        try:
            fields[name] = (
                label_value(value) if name == "value" else name_of(value, f"a {name} name")
            )
        except ValueError as exc:
            raise InputError(str(exc), file=source, item=where, field=f"{path}.{name}") from None
    return HumanLabel(
        question_id,
        fields["metric"],
        fields["value"],
        fields["annotator"],
        f"{source}: {where}: {path}",
    )
