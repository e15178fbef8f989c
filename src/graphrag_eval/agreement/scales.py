"""What kind of value each metric of a run gives, and a human's value fitted to it
(docs/report.md, "Agreement with human labels").

* **categorical**: a label key (``answer_classification``: CORRECT, WRONG, DON'T KNOW);
* **ordinal**: a label key whose labels are letter grades in order (``factual_accuracy_grade``:
  A to E), compared with quadratic weights;
* **pass/fail**: a numeric key whose values in the run are all ``true``/``false`` (a custom
  evaluation's verdict), or such a field of the results when the run is read without the
  config that declares it;
* **score**: any other numeric key of a question (``answer_correctness_f1``, ``steps_score``).
"""

from __future__ import annotations

import difflib
import enum
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from graphrag_eval.inputs.human_labels import LabelValue
from graphrag_eval.metrics.base import Aggregation, KeyKind, OutputKey
from graphrag_eval.results.model import QuestionResult, is_number
from graphrag_eval.results.read_run import SavedRun

__all__ = [
    "MetricScale",
    "Scale",
    "did_you_mean",
    "fit_value",
    "judged_value",
    "metric_scales",
]

_NOT_VERDICTS = frozenset({"missing_response"})
"""True/false fields of a result that are no metric's verdict."""
_PASS = frozenset({"pass", "passed", "yes", "true", "1"})
_FAIL = frozenset({"fail", "failed", "no", "false", "0"})


class Scale(enum.Enum):
    CATEGORICAL = "categorical"
    ORDINAL = "ordinal"
    PASS_FAIL = "pass/fail"
    SCORE = "score"

    @property
    def statistic(self) -> str:
        """The statistic of the judge against the humans that ``--fail-under`` gates."""
        return {Scale.ORDINAL: "weighted_kappa", Scale.SCORE: "rho"}.get(self, "kappa")


@dataclass(frozen=True, slots=True)
class MetricScale:
    """A metric's kind of value, and for labels the labels in their order."""

    name: str
    scale: Scale
    labels: tuple[str, ...] = ()
    maximum: float | None = None


_HINTED_NAMES = 20_000
"""Above so many known names (question ids of a large run), no hint is looked for: it would
cost a comparison with each for every unknown label."""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean X?)`` for the closest of ``known``, or nothing."""
    names = sorted(known)
    if len(names) > _HINTED_NAMES:
        return ""
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _is_grades(labels: tuple[str, ...]) -> bool:
    """Letter grades in order: A, B, C... (``factual_accuracy_grade``)."""
    return len(labels) > 1 and labels == tuple(string.ascii_uppercase[: len(labels)])


def metric_scales(run: SavedRun) -> dict[str, MetricScale]:
    """The question-level scores and labels of the run's metrics, each with its scale."""
    judged = _judged_values(run)
    scales: dict[str, MetricScale] = {}
    for name, (spec, on_steps) in run.layout.outputs().items():
        if on_steps or spec.kind is not KeyKind.SCORE:
            continue
        scale = _scale(spec, judged.get(name, []))
        if scale is not None:
            scales[name] = scale
    for name, values in judged.items():
        # A verdict of a metric the run is not read with (a custom evaluation's, without
        # its config): a field whose values are all true/false.
        if name not in scales and all(isinstance(value, bool) for value in values):
            scales[name] = MetricScale(name, Scale.PASS_FAIL, ("fail", "pass"))
    return scales


def judged_value(result: QuestionResult, name: str) -> object:
    """The run's value of ``name`` on a question: a metric's, else a true/false field's."""
    value = result.values().get(name)
    if value is None and name not in _NOT_VERDICTS:
        found = result.fields.get(name)
        return found if isinstance(found, bool) else None
    return value


def _judged_values(run: SavedRun) -> dict[str, list[object]]:
    values: dict[str, list[object]] = {}
    for result in run.results.results:
        for key, value in result.values().items():
            if value is not None:
                values.setdefault(key, []).append(value)
        for key, value in result.fields.items():
            if isinstance(value, bool) and key not in _NOT_VERDICTS:
                values.setdefault(key, []).append(value)
    return values


def _scale(spec: OutputKey, values: list[object]) -> MetricScale | None:
    if spec.aggregation is Aggregation.LABEL:
        seen = sorted({str(value) for value in values} - set(spec.labels))
        labels = (*spec.labels, *seen)
        ordinal = _is_grades(spec.labels) and not seen
        return MetricScale(spec.name, Scale.ORDINAL if ordinal else Scale.CATEGORICAL, labels)
    if spec.aggregation is not Aggregation.NUMERIC:
        return None
    if values and all(isinstance(value, bool) for value in values):
        return MetricScale(spec.name, Scale.PASS_FAIL, ("fail", "pass"))
    return MetricScale(spec.name, Scale.SCORE, maximum=spec.maximum)


def fit_value(value: LabelValue, scale: MetricScale) -> float:
    """A human's value (or the judge's) as the number the statistics take: a label's code
    (its position among the metric's labels), 0/1 for fail/pass, a score itself. Raises
    ValueError with the reason when the value does not fit the metric."""
    if scale.scale is Scale.SCORE:
        return _score(value, scale)
    if scale.scale is Scale.PASS_FAIL:
        folded = str(value).strip().lower()
        if isinstance(value, bool) or folded in _PASS | _FAIL or value in (0.0, 1.0):
            return 1.0 if (value is True or folded in _PASS or value == 1.0) else 0.0
        raise ValueError(f"{value!r} is not pass/fail (give true or false) for {scale.name}")
    return float(_label_code(value, scale))


def _score(value: LabelValue, scale: MetricScale) -> float:
    if isinstance(value, bool) or not is_number(value):
        raise ValueError(f"{value!r} is not a number, and {scale.name} is a score")
    number = float(value)
    maximum = scale.maximum
    if maximum is not None and not 0 <= number <= maximum:
        hint = f" (did you mean {number / 100:g}?)" if maximum == 1 and number <= 100 else ""
        raise ValueError(f"{number:g} is off {scale.name}'s 0-{maximum:g} scale{hint}")
    return number


def _label_code(value: LabelValue, scale: MetricScale) -> int:
    text = str(value).strip()
    folded: Mapping[str, int] = {label.casefold(): code for code, label in enumerate(scale.labels)}
    code = folded.get(text.casefold())
    if code is None:
        shown = ", ".join(scale.labels)
        hint = did_you_mean(text, scale.labels)
        raise ValueError(f"{text!r} is not a label of {scale.name} ({shown}){hint}")
    return code
