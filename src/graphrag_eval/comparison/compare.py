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

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from graphrag_eval.collector import fewer_collections
from graphrag_eval.comparison.bootstrap import (
    DEFAULT_RESAMPLES,
    auto_resamples,
    bootstrap_interval,
    bootstrap_intervals,
)
from graphrag_eval.comparison.changes import MIN_PAIRS, Resampling, scope_changes
from graphrag_eval.comparison.graph_identity import graph_difference, input_changes
from graphrag_eval.comparison.model import (
    DEFAULT_CONFIDENCE,
    DEFAULT_ERROR_SAMPLES,
    DEFAULT_SEED,
    DEFAULT_TOP,
    Comparison,
    ErrorSamples,
    Failures,
    ItemChange,
    MetricChange,
    Verdict,
)
from graphrag_eval.comparison.pairing import PairedRuns, pair_runs
from graphrag_eval.comparison.repeats import judge_repeats, with_repeats
from graphrag_eval.config import ConfigSource, EvaluationConfig
from graphrag_eval.formatting import format_interval, format_signed
from graphrag_eval.metrics.loading import load_config
from graphrag_eval.results.item_values import item_values
from graphrag_eval.results.model import RunResult

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_ERROR_SAMPLES",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "DEFAULT_TOP",
    "MIN_PAIRS",
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


def compare_results(
    results_a: Sequence[Mapping[str, Any]] | RunResult,
    results_b: Sequence[Mapping[str, Any]] | RunResult,
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
    graph_a: Mapping[str, Any] | None = None,
    graph_b: Mapping[str, Any] | None = None,
) -> Comparison:
    """Compare the per-question results of run B with those of run A: typed results (a
    saved run's ``results``) or flat records (docs/outputs.md).

    The defaults are those of ``graphrag-eval compare``, so both give the same comparison of
    the same runs. ``resamples`` defaults to :func:`auto_resamples` of the number of paired
    questions. ``top`` bounds the better and worse items listed per metric (0: list them
    all). ``error_samples`` applies to both runs, whatever their configs say: ``"zero"``
    scores an error response 0 on the scores it would have had, so a question that newly
    fails counts as a fall; ``"exclude"`` leaves it out of the pairs. The configs give each
    run's metrics (custom evaluations declare theirs). See docs/report.md, "The method".

    ``graph_a`` and ``graph_b`` are the graphs the runs executed SPARQL queries against
    (``run.yaml``'s ``graph``; ``None``: no store): the comparison warns when they differ,
    and says of each question whether its reference or its response changed
    (docs/knowledge-graph.md, "The graph's identity").
    """
    _check_arguments(resamples, confidence, top, error_samples)
    paired, failed = _paired((results_a, config_a), (results_b, config_b), error_samples)
    if resamples is None:
        resamples = auto_resamples(len(paired.question_ids))
    resampling = Resampling(seed, resamples, confidence)
    return Comparison(
        run_a=run_a,
        run_b=run_b,
        seed=seed,
        resamples=resamples,
        confidence=confidence,
        questions_a=paired.questions_a,
        questions_b=paired.questions_b,
        paired=len(paired.question_ids),
        only_in_a=paired.only_in_a,
        only_in_b=paired.only_in_b,
        status_changes=paired.status_changes,
        keys=paired.keys,
        overall=scope_changes(paired, "", np.arange(len(paired.question_ids)), resampling, top),
        per_template=_per_template(paired, resampling, top),
        error_samples=error_samples,
        failed=failed,
        graph_warning=graph_difference(graph_a, graph_b),
        changed_inputs=input_changes(results_a, results_b),
        repeats=judge_repeats(paired),
    )


def _per_template(
    paired: PairedRuns, resampling: Resampling, top: int
) -> dict[str, dict[str, MetricChange]]:
    return {
        template: scope_changes(paired, template, np.array(rows), resampling, top)
        for template, rows in paired.scopes.items()
    }


def _paired(
    run_a: tuple[Sequence[Mapping[str, Any]] | RunResult, ConfigSource],
    run_b: tuple[Sequence[Mapping[str, Any]] | RunResult, ConfigSource],
    error_samples: ErrorSamples,
) -> tuple[PairedRuns, dict[str, Failures]]:
    """The questions of both runs (results and config) paired, and on how many questions of
    each run every metric failed."""
    settings_a = _with_error_samples(run_a[1], error_samples)
    settings_b = _with_error_samples(run_b[1], error_samples)
    with fewer_collections():
        values_a = item_values(run_a[0], settings_a)
        values_b = item_values(run_b[0], settings_b)
        paired = with_repeats(pair_runs(values_a, values_b), values_a, values_b)
        failed = {
            name: Failures(values_a.failed.get(name, 0), values_b.failed.get(name, 0))
            for name in {**values_a.failed, **values_b.failed}
        }
        del values_a, values_b  # the pairs hold what the resampling needs: not these too
    return paired, failed


def _check_arguments(
    resamples: int | None, confidence: float, top: int, error_samples: ErrorSamples
) -> None:
    if resamples is not None and resamples < 1:
        raise ValueError("resamples must be at least 1")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    if top < 0:
        raise ValueError("top must be 0 (all) or more")
    if error_samples not in ("zero", "exclude"):
        raise ValueError(f"error_samples must be 'zero' or 'exclude', got {error_samples!r}")


def _with_error_samples(config: ConfigSource, error_samples: ErrorSamples) -> EvaluationConfig:
    settings = load_config(config)
    aggregation = settings.aggregation.model_copy(update={"error_samples": error_samples})
    return settings.model_copy(update={"aggregation": aggregation})
