"""What ``graphrag-eval evaluate`` prints when a run is written: the metrics, the input
problems, the judge's calls and cost, where the files are, and the gates that passed. The
tables (rich) are imported when printed: a quiet run never imports them."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from graphrag_eval.cli.console import stderr, stdout
from graphrag_eval.cli.guarded_import import guarded_import
from graphrag_eval.cli.incomplete import Failures, unexplained_failures
from graphrag_eval.comparison.gates import Threshold
from graphrag_eval.config import EvaluationConfig
from graphrag_eval.evaluation.runner import evaluate
from graphrag_eval.formatting import plain_number, plural
from graphrag_eval.inputs import ReferenceQuestion, ResponseSet
from graphrag_eval.llm.engine import LLMEngine
from graphrag_eval.metrics.registry import metrics_for
from graphrag_eval.results.checkpoint import REDO_CAUSES, Resumed
from graphrag_eval.results.model import QuestionResult, ResultLayout
from graphrag_eval.results.run import EvaluationRun
from graphrag_eval.results.write_run import REPORT_HTML, RUN_YAML, WrittenRun

__all__ = [
    "RunOutcome",
    "RunTally",
    "dry_run",
    "failed_values",
    "incomplete_line",
    "print_run_outcome",
    "resumed_line",
    "warn_unpriced",
]


class RunTally:
    """What the summary and the exit code need of a run's results, taken one at a time (the
    command line keeps none): how many questions, whether any had an answer, the metric
    values that failed and on how many questions, the metrics that failed everywhere."""

    def __init__(self) -> None:
        self.questions = 0
        self.answered = False
        self.failed_values = 0
        self.failed_questions = 0
        self.failures = Failures()

    @classmethod
    def of(cls, run: EvaluationRun) -> RunTally:
        """The tally of a run that kept its results."""
        tally = cls()
        for item in run.items:
            tally.add(item)
        return tally

    def add(self, item: QuestionResult) -> None:
        self.questions += 1
        self.answered = self.answered or item.fields.get("actual_answer") is not None
        failed = len(item.failed_metrics())
        self.failed_values += failed
        self.failed_questions += failed > 0
        self.failures.add(item)


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """A written run, as the summary shows it."""

    out_dir: Path
    tally: RunTally
    layout: ResultLayout
    """The metrics of the run's results (what their keys are)."""
    written: WrittenRun
    engine: LLMEngine | None
    resumed: Resumed | None
    """What the run started from, when it was resumed."""
    html_report: bool
    executions: str | None = None
    """What the run executed against its SPARQL store, in a line (none without one)."""


def print_run_outcome(
    outcome: RunOutcome, gates: Sequence[Threshold], failures: Sequence[str]
) -> None:
    """Print the summary of a written run; the failed gates are left to the caller."""
    with guarded_import():
        from graphrag_eval.report.console import print_llm_summary, print_notices, print_summary

    console = stdout()
    summary = outcome.written.summary
    print_summary(console, outcome.written.aggregates, outcome.layout)
    print_notices(console, summary.notices, str(outcome.out_dir / RUN_YAML))
    engine, tally = outcome.engine, outcome.tally
    if engine is not None:
        print_llm_summary(console, engine.stats, engine.max_cost_usd)
    elif tally.answered:
        console.print(
            "LLM-judged answer metrics not run: the config names no judge "
            "(llm.generation); see docs/llm.md"
        )
    if outcome.executions is not None:
        console.print(outcome.executions, markup=False, highlight=False, soft_wrap=True)
    failed = tally.failed_values
    if failed:
        console.print(
            f"{plural(failed, 'metric value')} failed (each failed metric has its _error key "
            "in the results)",
            markup=False,
        )
    if outcome.resumed is not None:
        console.print(resumed_line(outcome.resumed, tally.questions), markup=False)
    report_path = outcome.out_dir / REPORT_HTML
    console.print(
        f"{plural(tally.questions, 'question')} evaluated in {summary.elapsed_s:.2f} s; results "
        f"in {outcome.out_dir}/" + (f", report in {report_path}" if outcome.html_report else ""),
    )
    for threshold in gates:
        if not any(failure.startswith(f"{threshold.metric}:") for failure in failures):
            side = "at most" if threshold.upper else "at least"
            limit = plain_number(threshold.value)
            console.print(f"ok: {threshold.metric} mean is {side} {limit}")


def resumed_line(resumed: Resumed, questions: int) -> str:
    """What a resumed run kept and evaluated, with the items evaluated again counted by why
    (docs/llm.md, "Resume")."""
    line = (
        f"resumed: kept {plural(len(resumed.kept), 'finished item')}, evaluated "
        f"{questions - len(resumed.kept):,}"
    )
    if not resumed.redo:
        return line
    causes = "; ".join(
        f"{count:,} because {REDO_CAUSES[cause]}" for cause, count in resumed.redo_causes.items()
    )
    return f"{line}, {resumed.redo:,} of them again ({causes})"


def failed_values(run: EvaluationRun) -> int:
    """The metric values that were attempted and failed: one per metric and question (a
    metric that failed on several steps of a question counts once)."""
    return RunTally.of(run).failed_values


def incomplete_line(
    tally: RunTally, config: EvaluationConfig, engine: LLMEngine | None, resume: str
) -> str | None:
    """The one line that says a run could not do all it was asked, what is missing and how
    to finish it (``resume``: the command with ``--resume``); ``None`` for a complete run.
    Incomplete: a judge or embedding endpoint was unusable, the cost limit stopped calls, a
    judged metric failed on every question it applied to (a judge whose every reply was
    unusable), or a metric did for an internal error."""
    reasons = engine.incomplete_reasons() if engine is not None else []
    judged = {metric.name for metric in metrics_for(config) if metric.uses_llm}
    # A metric that is not judged fails on bad input too (the input notices say so): only
    # an internal error of one makes the run incomplete.
    failing = tally.failures.incomplete(judged)
    unexplained = unexplained_failures(failing, reasons)
    if not reasons and not unexplained:
        return None
    failed, questions = tally.failed_values, tally.failed_questions
    if reasons or any(set(metrics) & judged for metrics, _ in unexplained):
        finish = f"when that is fixed, finish the run with: {resume}"
    else:  # --resume keeps the questions whose failed metrics are not judged ones
        finish = "when that is fixed, run the command again (without --resume)"
    causes = reasons + [
        f"{', '.join(metrics)} failed on every question ({error})" for metrics, error in unexplained
    ]
    return (
        f"evaluation incomplete: {plural(failed, 'metric value')} on "
        f"{plural(questions, 'question')} not computed ({'; '.join(causes)}); {finish}"
    )


def dry_run(
    questions: Sequence[ReferenceQuestion],
    response_set: ResponseSet,
    config: EvaluationConfig,
    engine: LLMEngine | None,
) -> None:
    """``evaluate --dry-run``: the judge calls the run would make, and their price, without
    making one."""
    console = stdout()
    if engine is None:
        console.print(
            f"dry run: {plural(len(questions), 'question')}; the config names no LLM, so the "
            "run makes no judge calls"
        )
        return

    async def plan() -> None:
        try:
            await evaluate(questions, response_set, config, engine=engine)
        finally:
            await engine.aclose()

    asyncio.run(plan())
    with guarded_import():
        from graphrag_eval.report.console import print_dry_run

    print_dry_run(console, engine.stats.plan_dict(), len(questions))


def warn_unpriced(engine: LLMEngine | None) -> None:
    """Warn that the cost limit cannot stop the calls of models without a price."""
    if engine is not None and engine.max_cost_usd is not None and engine.stats.unpriced_models:
        stderr().print(
            f"warning: no price known for {', '.join(sorted(engine.stats.unpriced_models))}: "
            "its calls count as $0, so the cost limit cannot stop them (set llm.prices)",
            markup=False,
        )
