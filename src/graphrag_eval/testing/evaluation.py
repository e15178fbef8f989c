"""One evaluation in a test: responses (a file, data, or an agent asked every question), the
run written to its output directory (results, aggregates, run.yaml, the HTML report) through
the library's own evaluation, and the CI gates of ``evaluate`` and ``compare`` checked on it
(docs/integrations.md, "pytest"; the gates: docs/report.md, "CI gating")."""

from __future__ import annotations

import difflib
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphrag_eval.comparison.gates import (
    Threshold,
    check_known,
    check_regressions,
    check_thresholds,
    parse_threshold,
)
from graphrag_eval.comparison.model import Comparison
from graphrag_eval.config import ConfigSource, EvaluationConfig
from graphrag_eval.errors import ConfigError
from graphrag_eval.evaluation.runner import evaluate, prepare_reference, run_sync
from graphrag_eval.files.documents import write_text_atomic
from graphrag_eval.inputs import Diagnostics
from graphrag_eval.metrics.base import Aggregation
from graphrag_eval.metrics.loading import load_config
from graphrag_eval.metrics.registry import configured_metrics, declared_outputs
from graphrag_eval.results.aggregates import Aggregates
from graphrag_eval.results.read_run import SavedRun, load_run
from graphrag_eval.results.run import EvaluationRun
from graphrag_eval.results.write_run import (
    REPORT_HTML,
    RunSummary,
    claim_out_dir,
    results_jsonl_text,
    write_run,
)
from graphrag_eval.testing.agents import Agent, AgentFailure, ask_agent

__all__ = ["Evaluation", "Gates", "MetricFailure", "evaluate_in_test", "parse_gates"]

RESPONSES_JSONL = "responses.jsonl"
"""The responses an agent gave, written into the run's output directory."""

Thresholds = str | Iterable[str] | Mapping[str, float] | None


@dataclass(frozen=True, slots=True)
class Gates:
    """What a test asks of a run: thresholds on its means, and no significant regression
    from a baseline run on the ``watched`` metrics (``None``: every score)."""

    thresholds: tuple[Threshold, ...] = ()
    baseline: Path | None = None
    watched: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class MetricFailure:
    """A metric that was attempted on a question and failed (no value)."""

    question_id: str
    template_id: str
    metric: str
    message: str


@dataclass(slots=True)
class Evaluation:
    """A run evaluated in a test, with the verdicts of its gates."""

    out_dir: Path
    records: list[dict[str, Any]]
    """The per-question results (docs/outputs.md), in reference order."""
    aggregates: Aggregates
    gates: Gates
    failures: list[str] = field(default_factory=list)
    """The failed gates, one message each (as ``evaluate``/``compare`` print them)."""
    agent_failures: list[AgentFailure] = field(default_factory=list)
    failed_metrics: list[MetricFailure] = field(default_factory=list)
    comparison: Comparison | None = None
    """The comparison with the baseline run, when one was given."""
    missed: list[Threshold] = field(default_factory=list)
    """The thresholds the run's means did not meet."""
    regressed: list[str] = field(default_factory=list)
    """The watched metrics that got significantly worse than in the baseline."""

    @property
    def passed(self) -> bool:
        """No gate failed, the agent answered every question, no metric failed."""
        return not (self.failures or self.agent_failures or self.failed_metrics)

    @property
    def report(self) -> Path:
        return self.out_dir / REPORT_HTML

    def mean(self, metric: str) -> float | None:
        """The mean of ``metric`` over all questions (``aggregates.yaml``'s ``micro``)."""
        stats = self.aggregates.micro.statistics(metric)
        return stats.mean if stats is not None else None


def parse_gates(
    fail_under: Thresholds,
    fail_over: Thresholds,
    baseline: str | Path | None,
    fail_on_regression: bool | Iterable[str] | None,
) -> Gates:
    """The gates a test gives, in the syntax of the command line: ``"steps_score=0.8"``
    (or several, or ``{"steps_score": 0.8}``); :class:`ConfigError` for one that is not."""
    thresholds = [*_thresholds(fail_under, False), *_thresholds(fail_over, True)]
    if fail_on_regression and baseline is None:
        raise ConfigError("fail_on_regression needs a baseline: the output directory of a run")
    watched: tuple[str, ...] | None = None  # every score
    if fail_on_regression is False:
        watched = ()
    elif fail_on_regression is not None and fail_on_regression is not True:
        names = [fail_on_regression] if isinstance(fail_on_regression, str) else fail_on_regression
        watched = tuple(dict.fromkeys(names))
    return Gates(tuple(thresholds), Path(baseline) if baseline is not None else None, watched)


def _thresholds(given: Thresholds, upper: bool) -> list[Threshold]:
    option = "fail_over" if upper else "fail_under"
    if given is None:
        return []
    if isinstance(given, Mapping):
        texts = [f"{metric}={value}" for metric, value in given.items()]
    else:
        texts = [given] if isinstance(given, str) else list(given)
    thresholds = []
    for text in texts:
        try:
            thresholds.append(parse_threshold(str(text), upper=upper))
        except ValueError as exc:
            raise ConfigError(f"{option}={text!r}: {exc}") from None
    return thresholds


def evaluate_in_test(
    reference: str | Path | Sequence[Any],
    responses: Any,
    agent: Agent | None,
    config: ConfigSource,
    out_dir: Path,
    gates: Gates,
    concurrency: int = 8,
    timeout: float | None = None,
) -> Evaluation:
    """Evaluate into ``out_dir`` (replacing an earlier run there) and check ``gates``.

    Raises :class:`~graphrag_eval.errors.GraphragEvalError` for unusable inputs, config or
    gates (before anything is written)."""
    started = time.perf_counter()
    if (responses is None) == (agent is None):
        raise ConfigError("give either responses or an agent to ask the questions")
    if timeout is not None and not timeout > 0:  # 0, a negative number, NaN
        raise ConfigError(f"timeout={timeout!r}: a number of seconds over 0 (or None: no limit)")
    settings = load_config(config)
    _check_gates(gates, settings)
    out_dir.mkdir(parents=True, exist_ok=True)
    claim_out_dir(out_dir, overwrite=True)
    agent_failures: list[AgentFailure] = []
    if agent is not None:
        questions = prepare_reference(
            reference, Diagnostics(), settings.steps.rules.keys(), sparql=settings.sparql
        )
        responses, agent_failures = run_sync(
            lambda: ask_agent(agent, questions, concurrency, timeout)
        )
        write_text_atomic(out_dir / RESPONSES_JSONL, results_jsonl_text(responses))
    run = run_sync(lambda: evaluate(reference, responses, settings))
    summary = RunSummary.of(
        run,
        reference=_described(reference, "reference data"),
        responses=out_dir / RESPONSES_JSONL if agent is not None else _described(responses),
        config_file=config if isinstance(config, str | Path) else None,
    )
    written = write_run(out_dir, run, summary, started_s=started)
    saved = load_run(out_dir, settings)
    from graphrag_eval.report.html import write_report  # Jinja and pygal: only here

    write_report(saved, out_dir / REPORT_HTML)
    if agent is not None:  # a reply with a field that is not as documented: not a response
        agent_failures += _malformed(run.results)
    evaluation = Evaluation(
        out_dir, run.results, written.aggregates, gates, agent_failures=agent_failures
    )
    _check_gates_of(evaluation, run, saved, gates)
    return evaluation


def _check_gates_of(
    evaluation: Evaluation, run: EvaluationRun, saved: SavedRun, gates: Gates
) -> None:
    """The thresholds each checked alone (so each missed one is named), the metrics that
    failed on a question, and the regressions from the baseline."""
    for threshold in gates.thresholds:
        missed = check_thresholds(evaluation.aggregates.micro, [threshold])
        if missed:
            evaluation.missed.append(threshold)
            evaluation.failures += missed
    evaluation.failed_metrics = [
        MetricFailure(str(item.question_id), str(item.template_id), key.metric, failed.error)
        for item in run.items
        for key, failed in item.failures()
    ]
    if gates.baseline is not None:
        _check_baseline(evaluation, saved, gates)


def _malformed(records: Sequence[dict[str, Any]]) -> list[AgentFailure]:
    """The questions whose reply had a field the evaluation had to ignore (its
    ``input_errors``: ``actual_steps`` not a list, a step without a name, ...)."""
    failures = []
    for record in records:
        errors = record.get("input_errors")
        if isinstance(errors, list) and errors:
            question_id = str(record.get("question_id"))
            first = str(errors[0]).split(f"(question {question_id!r}): ", 1)[-1]
            more = f" (and {len(errors) - 1:,} more)" if len(errors) > 1 else ""
            reason = f"returned a malformed response: {first}{more}"
            failures.append(AgentFailure(question_id, str(record.get("template_id")), reason))
    return failures


def _described(source: Any, data: str = "responses data") -> str:
    return str(source) if isinstance(source, str | Path) else f"({data} given in the test)"


def _check_gates(gates: Gates, config: EvaluationConfig) -> None:
    """A threshold or watched metric no configured metric writes as a number is an error
    (with a did-you-mean), as on the command line; so is a baseline that is no run."""
    numeric = {
        name
        for name, (spec, _) in declared_outputs(configured_metrics(config)).items()
        if spec.aggregation is Aggregation.NUMERIC
    }
    check_known(gates.thresholds, numeric)
    for name in gates.watched or ():
        if name not in numeric:
            close = difflib.get_close_matches(name, sorted(numeric), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ConfigError(f"fail_on_regression: no metric writes {name!r}{hint}")
    if gates.baseline is not None and not gates.baseline.exists():
        raise ConfigError(f"baseline {gates.baseline}: no such run (an evaluate output directory)")


def _check_baseline(evaluation: Evaluation, saved: Any, gates: Gates) -> None:
    """Compare the run with the baseline (as ``compare`` does, with its defaults) and add
    the regressions of the watched metrics to the failures."""
    from graphrag_eval.comparison.compare import compare_results  # numpy: only here

    assert gates.baseline is not None
    baseline = load_run(gates.baseline)
    comparison = compare_results(
        baseline.results,
        saved.results,
        config_a=baseline.config,
        config_b=saved.config,
        run_a=str(gates.baseline),
        run_b=str(evaluation.out_dir),
    )
    watched: Iterable[str] = gates.watched if gates.watched is not None else (
        name for name, spec in comparison.keys.items() if not spec.lower_is_better
    )  # fmt: skip
    evaluation.comparison = comparison
    for name in dict.fromkeys(watched):
        regression = check_regressions(comparison, [name])
        if regression:
            evaluation.regressed.append(name)
            evaluation.failures += regression
