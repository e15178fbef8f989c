"""The agreement of a saved run with human labels (docs/report.md, "Agreement with human
labels").

Each label is checked against the run (its question, its metric, its value on the metric's
scale); one that does not fit is a located problem and left out. Per metric, the judge's
value on a question is paired with every human label of that question: Cohen's kappa (or
its quadratic-weighted form for grades) or Spearman's rho and the mean offset over those
pairs, and a confusion matrix of labels; Krippendorff's alpha among the annotators, and with
the judge as one more annotator. Every interval is a percentile bootstrap over questions
(a question drawn brings all its labels), seeded: the same labels give the same intervals.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from graphrag_eval.agreement.labels import LabelSet
from graphrag_eval.agreement.model import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    MIN_QUESTIONS,
    Agreement,
    Confusion,
    Estimate,
    MetricAgreement,
)
from graphrag_eval.agreement.scales import (
    MetricScale,
    Scale,
    did_you_mean,
    fit_value,
    judged_value,
)
from graphrag_eval.agreement.scales import metric_scales as _metric_scales
from graphrag_eval.agreement.statistics import (
    alpha,
    bootstrap,
    confusion,
    interval_alpha,
    kappa,
    libraries,
    mean_offset,
    spearman,
)
from graphrag_eval.results.read_run import SavedRun

__all__ = ["compute_agreement"]

MAX_LABELS = 200
"""A label metric with more distinct labels (in a hostile results file) gets no kappa and no
confusion matrix, which grow with their square."""

_LEVEL = {
    Scale.CATEGORICAL: "nominal",
    Scale.PASS_FAIL: "nominal",
    Scale.ORDINAL: "ordinal",
    Scale.SCORE: "interval",
}


@dataclass(frozen=True, slots=True)
class _Settings:
    seed: int
    resamples: int
    confidence: float

    def interval(self, statistic: Callable[[Any], float | None], questions: int) -> Any:
        return bootstrap(
            statistic,
            questions,
            seed=self.seed,
            resamples=self.resamples,
            confidence=self.confidence,
        )


@dataclass(slots=True)
class _MetricLabels:
    """One metric's labels by question (in run order) and annotator."""

    scale: MetricScale
    judge: dict[str, float | None] = field(default_factory=dict)
    human: dict[str, dict[str, float]] = field(default_factory=dict)


def compute_agreement(
    run: SavedRun,
    sources: Sequence[LabelSet],
    *,
    seed: int = DEFAULT_SEED,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Agreement:
    """The agreement of ``run``'s metric values with the labels of ``sources``."""
    libraries()  # a missing extra is one line before any work
    found = Agreement(
        run=run.label,
        sources=[source.source for source in sources],
        labels_read=sum(len(source.labels) for source in sources),
        labels_used=0,
        seed=seed,
        resamples=resamples,
        confidence=confidence,
        problems=[problem for source in sources for problem in source.problems],
        unlisted=sum(source.unlisted for source in sources),
    )
    by_metric = _sort_labels(run, sources, found)
    settings = _Settings(seed, resamples, confidence)
    for name, labels in by_metric.items():
        found.metrics[name] = _metric_agreement(name, labels, settings)
        found.labels_used += found.metrics[name].labels
    return found


def _sort_labels(
    run: SavedRun, sources: Sequence[LabelSet], found: Agreement
) -> dict[str, _MetricLabels]:
    """Each usable label under its metric and question; the others as problems."""
    results = {str(result.question_id): result for result in run.results.results}
    scales = _metric_scales(run)
    by_metric: dict[str, _MetricLabels] = {}
    for source in sources:
        for label in source.labels:
            problem = _unknown(label.question_id, label.metric, results, scales)
            if problem is not None:
                found.problems.append(f"{label.where}: {problem}: left out")
                continue
            labels = by_metric.setdefault(label.metric, _MetricLabels(scales[label.metric]))
            try:
                value = fit_value(label.value, labels.scale)
            except ValueError as exc:
                found.problems.append(f"{label.where}: value: {exc}: left out")
                continue
            given = labels.human.setdefault(label.question_id, {})
            if label.annotator in given:
                found.problems.append(
                    f"{label.where}: a second label of {label.metric} on {label.question_id!r} "
                    f"by {label.annotator!r} (also in another source): left out"
                )
                continue
            given[label.annotator] = value
    for name, labels in by_metric.items():
        for question_id in labels.human:
            judged = judged_value(results[question_id], name)
            labels.judge[question_id] = None if judged is None else _judged(judged, labels.scale)
    return {name: labels for name, labels in by_metric.items() if labels.human}


def _judged(value: Any, scale: MetricScale) -> float | None:
    try:
        return fit_value(value, scale)
    except ValueError:  # a value the run's own file holds off the scale: no judge value
        return None


def _unknown(question_id: str, metric: str, results: Iterable[str], scales: Any) -> str | None:
    if question_id not in results:
        return f"question_id: no question {question_id!r} in the run" + did_you_mean(
            question_id, results
        )
    if metric not in scales:
        return f"metric: no question-level score or label {metric!r} in the run" + did_you_mean(
            metric, scales
        )
    return None


def _metric_agreement(name: str, labels: _MetricLabels, settings: _Settings) -> MetricAgreement:
    scale = labels.scale
    judged = [qid for qid in labels.human if labels.judge.get(qid) is not None]
    annotators = tuple(sorted({a for given in labels.human.values() for a in given}))
    pairs = _Pairs.of(labels, judged)
    offset = None
    if scale.scale is Scale.SCORE:
        judge = _estimate(pairs, lambda p, w: spearman(p.judge, p.human, w), settings)
        offset = _estimate(pairs, lambda p, w: mean_offset(p.judge, p.human, w), settings)
    elif len(scale.labels) > MAX_LABELS:
        judge = Estimate.missing(f"{len(scale.labels):,} distinct labels: at most {MAX_LABELS}")
    else:
        codes = range(len(scale.labels))
        quadratic = scale.scale is Scale.ORDINAL
        judge = _estimate(
            pairs, lambda p, w: kappa(p.judge, p.human, codes, quadratic, w), settings
        )
    return MetricAgreement(
        metric=name,
        scale=scale.scale,
        questions=len(judged),
        labels=len(pairs.judge),
        unjudged=sum(len(labels.human[qid]) for qid in labels.human if qid not in judged),
        annotators=annotators,
        judge=judge,
        offset=offset,
        alpha_humans=_alpha(labels, list(labels.human), annotators, False, settings),
        alpha_with_judge=_alpha(labels, judged, annotators, True, settings),
        confusion=(
            None
            if scale.scale is Scale.SCORE or not pairs.judge or len(scale.labels) > MAX_LABELS
            else Confusion(
                scale.labels, confusion(pairs.judge, pairs.human, range(len(scale.labels)))
            )
        ),
    )


@dataclass(frozen=True, slots=True)
class _Pairs:
    """The (judge, human) pairs of a metric, with the question each is of."""

    judge: Any
    """The judge's value of each pair (a list, or an array for the statistics)."""
    human: Any
    question: list[int]
    questions: int

    @classmethod
    def of(cls, labels: _MetricLabels, judged: Sequence[str]) -> _Pairs:
        judge: list[float] = []
        human: list[float] = []
        question: list[int] = []
        for index, qid in enumerate(judged):
            value = labels.judge[qid]
            assert value is not None
            for given in labels.human[qid].values():
                judge.append(value)
                human.append(given)
                question.append(index)
        return cls(judge, human, question, len(judged))


def _too_few(questions: int, what: str) -> str | None:
    if questions >= MIN_QUESTIONS:
        return None
    return f"too few labels: {questions} {what} ({MIN_QUESTIONS} needed)"


def _estimate(
    pairs: _Pairs, statistic: Callable[[_Pairs, Any], float | None], settings: _Settings
) -> Estimate:
    """A statistic of the pairs with its bootstrap interval (each question drawn weighs its
    pairs)."""
    note = _too_few(pairs.questions, "judged questions")
    if note is not None:
        return Estimate.missing(note)
    np = libraries().numpy
    # Arrays once, not a list converted again in each of the resamples.
    pairs = replace(
        pairs,
        judge=np.asarray(pairs.judge, dtype=float),
        human=np.asarray(pairs.human, dtype=float),
    )
    value = statistic(pairs, None)
    if value is None:
        return Estimate.missing("not defined: every value is the same")
    question = np.asarray(pairs.question)
    interval = settings.interval(lambda drawn: statistic(pairs, drawn[question]), pairs.questions)
    return Estimate(value, interval.low, interval.high)


def _alpha(
    labels: _MetricLabels,
    questions: Sequence[str],
    annotators: Sequence[str],
    with_judge: bool,
    settings: _Settings,
) -> Estimate:
    """Krippendorff's alpha of the annotators (and the judge) over ``questions``."""
    if len(annotators) < 2 and not with_judge:
        return Estimate.missing("one annotator: alpha needs two")
    np = libraries().numpy
    rows = [[labels.human[qid].get(a, np.nan) for qid in questions] for a in annotators]
    if with_judge:
        rows.append([labels.judge[qid] for qid in questions])
    matrix = np.asarray(rows, dtype=float).reshape(len(rows), len(questions))
    units = int(np.sum(np.sum(~np.isnan(matrix), axis=0) >= 2)) if len(questions) else 0
    note = _too_few(units, "questions with two values")
    if note is not None:
        return Estimate.missing(note)
    scale = labels.scale
    level = _LEVEL[scale.scale]
    domain = list(range(len(scale.labels))) if scale.scale is not Scale.SCORE else None
    try:
        value = alpha(matrix, level, domain)
    except ValueError as exc:  # too many labels to hold
        return Estimate.missing(str(exc))
    if value is None:
        return Estimate.missing("not defined: every value is the same")
    if level == "interval":  # resampled by weighing each question
        interval = settings.interval(lambda drawn: interval_alpha(matrix, drawn), len(questions))
    else:
        columns = np.arange(matrix.shape[1])
        interval = settings.interval(
            lambda drawn: alpha(matrix[:, np.repeat(columns, drawn)], level, domain),
            len(questions),
        )
    return Estimate(value, interval.low, interval.high)
