"""What ``graphrag-eval evaluate`` prints when a run is written: the metrics, the input
problems, the judge's calls and cost, where the files are, and the gates that passed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from graphrag_eval.checkpoint import REDO_CAUSES, Resumed
from graphrag_eval.cli.console import stdout
from graphrag_eval.evaluation import EvaluationRun
from graphrag_eval.gating import Threshold
from graphrag_eval.llm.engine import LLMEngine
from graphrag_eval.report.console import (
    plural,
    print_llm_summary,
    print_notices,
    print_summary,
)
from graphrag_eval.rundir import REPORT_HTML, RUN_YAML, WrittenRun

__all__ = ["RunOutcome", "failed_values", "incomplete_line", "print_run_outcome", "resumed_line"]


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """A written run, as the summary shows it."""

    out_dir: Path
    run: EvaluationRun
    written: WrittenRun
    engine: LLMEngine | None
    resumed: Resumed | None
    """What the run started from, when it was resumed."""
    html_report: bool


def print_run_outcome(
    outcome: RunOutcome, gates: Sequence[Threshold], failures: Sequence[str]
) -> None:
    """Print the summary of a written run; the failed gates are left to the caller."""
    console = stdout()
    summary = outcome.written.summary
    print_summary(console, outcome.written.aggregates)
    print_notices(console, summary.notices, str(outcome.out_dir / RUN_YAML))
    engine, results = outcome.engine, outcome.run.results
    if engine is not None:
        print_llm_summary(console, engine.stats, engine.max_cost_usd)
    elif any(result.get("actual_answer") is not None for result in results):
        console.print(
            "LLM-judged answer metrics not run: the config names no judge "
            "(llm.generation); see docs/llm.md"
        )
    failed = failed_values(outcome.run)
    if failed:
        console.print(
            f"{plural(failed, 'metric value')} failed (each failed metric has its _error key "
            "in the results)",
            markup=False,
        )
    if outcome.resumed is not None:
        console.print(resumed_line(outcome.resumed, len(results)), markup=False)
    report_path = outcome.out_dir / REPORT_HTML
    console.print(
        f"{plural(len(results), 'question')} evaluated in {summary.elapsed_s:.2f} s; results "
        f"in {outcome.out_dir}/" + (f", report in {report_path}" if outcome.html_report else ""),
    )
    for threshold in gates:
        if not any(failure.startswith(f"{threshold.metric}:") for failure in failures):
            side = "at most" if threshold.upper else "at least"
            console.print(f"ok: {threshold.metric} mean is {side} {threshold.value:g}")


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
    return sum(len(item.failed_metrics()) for item in run.items)


def incomplete_line(run: EvaluationRun, engine: LLMEngine | None, resume: str) -> str | None:
    """The one line that says a run could not make every call it planned (a judge endpoint
    was unusable, or the cost limit stopped calls), what is missing and that ``resume`` (the
    command with ``--resume``) finishes it; ``None`` for a complete run."""
    reasons = engine.incomplete_reasons() if engine is not None else []
    if not reasons:
        return None
    failed = failed_values(run)
    questions = sum(1 for item in run.items if item.failed_metrics())
    return (
        f"evaluation incomplete: {plural(failed, 'metric value')} on "
        f"{plural(questions, 'question')} not computed ({'; '.join(reasons)}); when that is "
        f"fixed, finish the run with: {resume}"
    )
