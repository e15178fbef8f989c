"""Compare two runs item by item: what changed, whether it is more than noise, and where.

Items are paired by ``question_id``. For each numeric metric, overall and per template, the
comparison takes the questions scored in both runs and reports the mean in run A, the mean
in run B, their difference (B - A) and a paired bootstrap confidence interval of that
difference: the paired differences are resampled with replacement ``resamples`` times and
the interval is the percentiles of the resampled means. The generator is seeded from
``seed`` and the scope (overall or the template id), so the same runs and seed always give
the same intervals.

An error response (a question that failed) scores 0 on the scores it would have had
(``error_samples="zero"``, the default of both :func:`compare_results` and
``graphrag-eval compare``), so a run that fails more questions cannot look better;
``error_samples="exclude"`` leaves such questions out of the pairs instead. See
docs/report.md, "The method".

A difference whose interval excludes 0 is significant: the metric got ``better`` or
``worse`` (a fall is better for costs, tokens and seconds). Fewer than :data:`MIN_PAIRS`
pairs get ``too few pairs`` instead of a verdict. With many metrics and templates
some intervals will exclude 0 by chance (about 1 in 20 at 95%): read the per-template rows as
pointers to look at, the overall row as the verdict.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from graphrag_eval.aggregation import item_values
from graphrag_eval.config import ConfigSource, EvaluationConfig, load_config
from graphrag_eval.metrics.base import OutputKey

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_ERROR_SAMPLES",
    "DEFAULT_SEED",
    "DEFAULT_TOP",
    "Comparison",
    "ErrorSamples",
    "ItemChange",
    "MetricChange",
    "Verdict",
    "auto_resamples",
    "bootstrap_interval",
    "bootstrap_intervals",
    "compare_results",
    "format_interval",
    "format_signed",
]

Verdict = Literal["better", "worse", "unchanged", "too few pairs", "no pairs"]
ErrorSamples = Literal["zero", "exclude"]

MIN_PAIRS = 6
"""Fewer paired questions than this get no verdict: with 5 pairs even a change in the same
direction on all of them is within chance (a sign test gives p = 0.06), and a bootstrap of
so few values cannot show otherwise."""

# The defaults of compare_results, which `graphrag-eval compare` takes too: a notebook and a
# CI job comparing the same runs reach the same verdicts.
DEFAULT_SEED = 0
DEFAULT_RESAMPLES = 10_000
DEFAULT_CONFIDENCE = 0.95
DEFAULT_TOP = 10
DEFAULT_ERROR_SAMPLES: ErrorSamples = "zero"
_CELLS_PER_CHUNK = 2_000_000  # resamples x items drawn at once: about 55 MB at the peak
_TOLERANCE = 1e-12  # differences below this are float noise, not changes
_AUTO_BUDGET = 200_000_000  # pairs x resamples drawn per interval by default


@dataclass(frozen=True, slots=True)
class ItemChange:
    """One question whose score differs between the runs."""

    question_id: str
    template_id: str
    a: float
    b: float

    @property
    def difference(self) -> float:
        return self.b - self.a

    def as_dict(self) -> dict[str, Any]:
        return {
            "question_id": self.question_id,
            "template_id": self.template_id,
            "a": self.a,
            "b": self.b,
            "difference": self.difference,
        }


@dataclass(frozen=True, slots=True)
class MetricChange:
    """How one metric moved between the runs, over the questions scored in both."""

    metric: str
    pairs: int
    mean_a: float | None
    mean_b: float | None
    difference: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: Verdict
    lower_is_better: bool
    improved: int
    """Questions whose score changed for the better."""
    regressed: int
    unchanged: int
    scored_only_in_a: int
    """Questions scored in run A but not in run B (a new error, a missing response...)."""
    scored_only_in_b: int
    better_items: list[ItemChange] = field(default_factory=list)
    """The questions that improved most, best first (at most ``top`` of them)."""
    worse_items: list[ItemChange] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "pairs": self.pairs,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "difference": self.difference,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "change": self.verdict,
            "lower_is_better": self.lower_is_better,
            "improved": self.improved,
            "regressed": self.regressed,
            "unchanged": self.unchanged,
            "scored_only_in_a": self.scored_only_in_a,
            "scored_only_in_b": self.scored_only_in_b,
            "better_items": [item.as_dict() for item in self.better_items],
            "worse_items": [item.as_dict() for item in self.worse_items],
        }


@dataclass(slots=True)
class Comparison:
    """The comparison of run B against run A."""

    run_a: str
    run_b: str
    seed: int
    resamples: int
    confidence: float
    questions_a: int
    questions_b: int
    paired: int
    only_in_a: list[str]
    """Question ids of run A that run B does not have."""
    only_in_b: list[str]
    status_changes: dict[str, list[str]]
    """``"success -> error"`` (and the other way) -> the question ids whose status changed."""
    keys: dict[str, OutputKey]
    overall: dict[str, MetricChange]
    per_template: dict[str, dict[str, MetricChange]]

    def significant(self, verdict: Verdict) -> list[str]:
        """The metrics that got significantly ``better`` or ``worse`` overall."""
        return [name for name, change in self.overall.items() if change.verdict == verdict]

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_a": self.run_a,
            "run_b": self.run_b,
            "seed": self.seed,
            "resamples": self.resamples,
            "confidence": self.confidence,
            "questions_a": self.questions_a,
            "questions_b": self.questions_b,
            "paired": self.paired,
            "only_in_a": self.only_in_a,
            "only_in_b": self.only_in_b,
            "status_changes": self.status_changes,
            "metrics": {name: change.as_dict() for name, change in self.overall.items()},
            "per_template": {
                template: {name: change.as_dict() for name, change in changes.items()}
                for template, changes in self.per_template.items()
            },
        }


def compare_results(
    results_a: Sequence[Mapping[str, Any]],
    results_b: Sequence[Mapping[str, Any]],
    *,
    config_a: ConfigSource = None,
    config_b: ConfigSource = None,
    run_a: str = "A",
    run_b: str = "B",
    seed: int = DEFAULT_SEED,
    resamples: int | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    top: int = DEFAULT_TOP,
    error_samples: ErrorSamples = DEFAULT_ERROR_SAMPLES,
) -> Comparison:
    """Compare the per-question results of run B with those of run A.

    The defaults are those of ``graphrag-eval compare``, so both give the same comparison of
    the same runs. ``resamples`` defaults to :func:`auto_resamples` of the number of paired
    questions. ``top`` bounds the better and worse items listed per metric (0: list them
    all). ``error_samples`` applies to both runs, whatever their configs say: ``"zero"``
    scores an error response 0 on the scores it would have had, so a question that newly
    fails counts as a fall; ``"exclude"`` leaves it out of the pairs. The configs give each
    run's metrics (custom evaluations declare theirs). See docs/report.md, "The method".
    """
    if resamples is not None and resamples < 1:
        raise ValueError("resamples must be at least 1")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    if top < 0:
        raise ValueError("top must be 0 (all) or more")
    if error_samples not in ("zero", "exclude"):
        raise ValueError(f"error_samples must be 'zero' or 'exclude', got {error_samples!r}")
    values_a = item_values(results_a, _with_error_samples(config_a, error_samples))
    values_b = item_values(results_b, _with_error_samples(config_b, error_samples))
    by_id_a = _by_question(results_a, values_a.values)
    by_id_b = _by_question(results_b, values_b.values)
    # Sorted, so that the resamples do not depend on the order of either file.
    paired_ids = sorted(qid for qid in by_id_a if qid in by_id_b)
    keys = dict(values_a.keys)
    keys.update((name, spec) for name, spec in values_b.keys.items() if name not in keys)

    status_changes: dict[str, list[str]] = {}
    for qid in paired_ids:
        before = str(by_id_a[qid][0].get("status"))
        after = str(by_id_b[qid][0].get("status"))
        if before != after:
            status_changes.setdefault(f"{before} -> {after}", []).append(qid)

    if resamples is None:
        resamples = auto_resamples(len(paired_ids))
    # Question x metric matrices, NaN where the question was not scored.
    names = list(keys)
    matrix_a = np.full((len(paired_ids), len(names)), np.nan)
    matrix_b = np.full((len(paired_ids), len(names)), np.nan)
    for column, name in enumerate(names):
        matrix_a[:, column] = [by_id_a[qid][1].get(name, np.nan) for qid in paired_ids]
        matrix_b[:, column] = [by_id_b[qid][1].get(name, np.nan) for qid in paired_ids]
    templates = [str(by_id_b[qid][0].get("template_id")) for qid in paired_ids]
    # Templates in the order run B lists them; their questions in sorted order, as above.
    scopes: dict[str, list[int]] = {
        str(by_id_b[qid][0].get("template_id")): [] for qid in by_id_b if qid in by_id_a
    }
    for index, template in enumerate(templates):
        scopes[template].append(index)
    paired = _Paired(paired_ids, templates, names, keys, matrix_a, matrix_b)

    def scope_changes(scope: str, rows: np.ndarray) -> dict[str, MetricChange]:
        return _compare_scope(paired, scope, rows, seed, resamples, confidence, top)

    return Comparison(
        run_a=run_a,
        run_b=run_b,
        seed=seed,
        resamples=resamples,
        confidence=confidence,
        questions_a=len(by_id_a),
        questions_b=len(by_id_b),
        paired=len(paired_ids),
        only_in_a=[qid for qid in by_id_a if qid not in by_id_b],
        only_in_b=[qid for qid in by_id_b if qid not in by_id_a],
        status_changes=status_changes,
        keys=keys,
        overall=scope_changes("", np.arange(len(paired_ids))),
        per_template={
            template: scope_changes(template, np.array(rows)) for template, rows in scopes.items()
        },
    )


def _with_error_samples(config: ConfigSource, error_samples: ErrorSamples) -> EvaluationConfig:
    settings = load_config(config)
    aggregation = settings.aggregation.model_copy(update={"error_samples": error_samples})
    return settings.model_copy(update={"aggregation": aggregation})


def _by_question(
    results: Sequence[Mapping[str, Any]], values: Sequence[dict[str, float]]
) -> dict[str, tuple[Mapping[str, Any], dict[str, float]]]:
    """Results by question id; a repeated id keeps its first result, as evaluation does."""
    by_id: dict[str, tuple[Mapping[str, Any], dict[str, float]]] = {}
    for result, row in zip(results, values, strict=True):
        by_id.setdefault(str(result.get("question_id")), (result, row))
    return by_id


@dataclass(frozen=True, slots=True)
class _Paired:
    """The questions both runs have, and their scores side by side."""

    question_ids: list[str]
    templates: list[str]
    names: list[str]
    keys: Mapping[str, OutputKey]
    a: np.ndarray
    b: np.ndarray


def _compare_scope(
    paired: _Paired,
    scope: str,
    rows: np.ndarray,
    seed: int,
    resamples: int,
    confidence: float,
    top: int,
) -> dict[str, MetricChange]:
    a = paired.a[rows]
    b = paired.b[rows]
    has_a = ~np.isnan(a)
    has_b = ~np.isnan(b)
    both = has_a & has_b
    only_a = (has_a & ~has_b).sum(axis=0)
    only_b = (has_b & ~has_a).sum(axis=0)

    # Metrics scored on the same questions share their resamples: one draw serves them all.
    groups: dict[bytes, list[int]] = {}
    for column in range(len(paired.names)):
        if both[:, column].any():
            groups.setdefault(np.packbits(both[:, column]).tobytes(), []).append(column)
    intervals: dict[int, tuple[float, float]] = {}
    for columns in groups.values():
        where = np.flatnonzero(both[:, columns[0]])
        differences = b[where][:, columns] - a[where][:, columns]
        question_ids = [paired.question_ids[rows[index]] for index in where]
        rng = _generator(seed, scope, question_ids)
        found = bootstrap_intervals(differences, rng, resamples, confidence)
        intervals.update(zip(columns, found, strict=True))

    changes: dict[str, MetricChange] = {}
    for column, name in enumerate(paired.names):
        where = np.flatnonzero(both[:, column])
        if not len(where) and not only_a[column] and not only_b[column]:
            continue  # the metric is not about these questions
        changes[name] = _metric_change(
            paired,
            name,
            rows[where],
            a[where, column],
            b[where, column],
            intervals.get(column),
            int(only_a[column]),
            int(only_b[column]),
            top,
        )
    return changes


def _metric_change(
    paired: _Paired,
    name: str,
    rows: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    interval: tuple[float, float] | None,
    only_a: int,
    only_b: int,
    top: int,
) -> MetricChange:
    spec = paired.keys[name]
    if not len(rows) or interval is None:
        return MetricChange(
            name, 0, None, None, None, None, None, "no pairs", spec.lower_is_better,
            0, 0, 0, only_a, only_b,
        )  # fmt: skip
    low, high = interval
    if len(rows) < MIN_PAIRS:
        verdict: Verdict = "too few pairs"
    elif low > _TOLERANCE:
        verdict = "worse" if spec.lower_is_better else "better"
    elif high < -_TOLERANCE:
        verdict = "better" if spec.lower_is_better else "worse"
    else:
        verdict = "unchanged"
    gains = (a - b) if spec.lower_is_better else (b - a)
    improved = np.flatnonzero(gains > _TOLERANCE)
    regressed = np.flatnonzero(gains < -_TOLERANCE)
    # Largest change first; among equal changes, the questions' order.
    improved = improved[np.argsort(-gains[improved], kind="stable")]
    regressed = regressed[np.argsort(gains[regressed], kind="stable")]

    def listed(indices: np.ndarray) -> list[ItemChange]:
        return [
            ItemChange(
                paired.question_ids[rows[index]],
                paired.templates[rows[index]],
                float(a[index]),
                float(b[index]),
            )
            for index in (indices[:top] if top else indices)
        ]

    mean_a = math.fsum(a.tolist()) / len(a)
    mean_b = math.fsum(b.tolist()) / len(b)
    return MetricChange(
        metric=name,
        pairs=len(rows),
        mean_a=mean_a,
        mean_b=mean_b,
        difference=mean_b - mean_a,
        ci_low=low,
        ci_high=high,
        verdict=verdict,
        lower_is_better=spec.lower_is_better,
        improved=len(improved),
        regressed=len(regressed),
        unchanged=len(rows) - len(improved) - len(regressed),
        scored_only_in_a=only_a,
        scored_only_in_b=only_b,
        better_items=listed(improved),
        worse_items=listed(regressed),
    )


def _generator(seed: int, scope: str, question_ids: Sequence[str]) -> np.random.Generator:
    """The generator of one scope and set of paired questions: an interval depends on the
    seed and on its own pairs only, not on which other metrics or templates the runs have."""
    digest = zlib.crc32("\n".join(question_ids).encode("utf-8"))
    return np.random.default_rng([seed, zlib.crc32(scope.encode("utf-8")), digest])


def auto_resamples(pairs: int) -> int:
    """The default number of resamples: 10,000, fewer for runs so large that this would take
    long (each resample costs one draw per pair), but never fewer than 2,000."""
    return max(2_000, min(DEFAULT_RESAMPLES, _AUTO_BUDGET // max(pairs, 1)))


def bootstrap_interval(
    differences: np.ndarray,
    rng: np.random.Generator,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of the paired ``differences``."""
    return bootstrap_intervals(np.asarray(differences)[:, None], rng, resamples, confidence)[0]


def bootstrap_intervals(
    differences: np.ndarray,
    rng: np.random.Generator,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
) -> list[tuple[float, float]]:
    """Percentile bootstrap intervals of the column means of ``differences`` (pairs x
    metrics), resampling the rows (the questions) together for every column.

    Each resample draws as many row indices as there are rows, with replacement. A chunk of
    resamples is drawn at a time, so memory stays bounded at any size.
    """
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    n, columns = differences.shape
    if n == 0:
        raise ValueError("no differences to resample")
    means = np.empty((resamples, columns), dtype=np.float64)
    chunk = max(1, min(resamples, _CELLS_PER_CHUNK // n))
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        drawn = rng.integers(0, n, size=(rows, n), dtype=np.int32 if n < 2**31 else np.int64)
        if columns < 3:  # gathering is cheaper than counting for one or two metrics
            for column in range(columns):
                means[start : start + rows, column] = differences[drawn, column].mean(axis=1)
        else:
            offsets = (np.arange(rows, dtype=np.int64) * n)[:, None]
            counts = np.bincount((drawn + offsets).ravel(), minlength=rows * n)
            means[start : start + rows] = counts.reshape(rows, n).astype(np.float64) @ (
                differences / n
            )
    tail = (1 - confidence) / 2 * 100
    intervals = []
    for column in range(columns):
        values = differences[:, column]
        if np.all(values == values[0]):
            intervals.append((float(values[0]), float(values[0])))  # no spread to resample
            continue
        low, high = np.percentile(means[:, column], [tail, 100 - tail])
        intervals.append((float(low), float(high)))
    return intervals


def format_signed(value: float, digits: int = 3) -> str:
    """A difference with its sign and ``digits`` significant digits (no exponent below a
    billion)."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 10 ** (digits - 1):
        return f"{value:+,.0f}"
    decimals = max(0, digits - 1 - math.floor(math.log10(magnitude)))
    return f"{value:+.{decimals}f}"


def format_interval(low: float | None, high: float | None, digits: int = 3) -> str:
    """``[low, high]`` with signs, or ``-`` when there is no interval."""
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return "-"
    return f"[{format_signed(low, digits)}, {format_signed(high, digits)}]"
