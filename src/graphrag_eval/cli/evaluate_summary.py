"""What ``graphrag-eval evaluate`` prints when a run is written: the metrics, the input
problems, the judge's calls and cost, where the files are, and the gates that passed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from graphrag_eval.checkpoint import Resumed
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

__all__ = ["RunOutcome", "print_run_outcome"]


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
    resumed = outcome.resumed
    if resumed is not None:
        console.print(
            f"resumed: kept {plural(len(resumed.kept), 'finished item')}, evaluated "
            f"{len(results) - len(resumed.kept):,} ({resumed.redo:,} again after a "
            "judge failure)"
        )
    report_path = outcome.out_dir / REPORT_HTML
    console.print(
        f"{plural(len(results), 'question')} evaluated in {summary.elapsed_s:.2f} s; results "
        f"in {outcome.out_dir}/" + (f", report in {report_path}" if outcome.html_report else ""),
    )
    for threshold in gates:
        if not any(failure.startswith(f"{threshold.metric}:") for failure in failures):
            side = "at most" if threshold.upper else "at least"
            console.print(f"ok: {threshold.metric} mean is {side} {threshold.value:g}")
