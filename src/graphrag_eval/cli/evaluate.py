"""``graphrag-eval evaluate``: score responses against a reference dataset and write the
output directory (docs/outputs.md); ``--dry-run`` prices the judge calls, ``--resume``
continues an interrupted run (docs/llm.md)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from graphrag_eval.cli.batch import print_batch_summary, start_batches
from graphrag_eval.cli.ci_summary import evaluate_ci_report
from graphrag_eval.cli.console import stderr
from graphrag_eval.cli.errors import command_line, exit_on_failures
from graphrag_eval.cli.evaluate_options import EvaluateOptions, repeats_notice, repeats_option
from graphrag_eval.cli.evaluate_summary import (
    RunOutcome,
    RunTally,
    dry_run,
    incomplete_line,
    print_run_outcome,
    warn_unpriced,
)
from graphrag_eval.cli.graph_store import (
    RunServices,
    close_all,
    execution_summary,
    open_services,
    store_incomplete,
)
from graphrag_eval.cli.guarded_import import guarded_import
from graphrag_eval.cli.options import (
    batch_option,
    config_option,
    debug_option,
    gate_options,
    input_file_arguments,
    max_cost_option,
    max_expanded_size_option,
    no_cache_option,
    numeric_outputs,
    responses_format_option,
    store_options,
    summary_md_option,
)
from graphrag_eval.cli.signals import deferred_interrupts, interrupt_exit_code
from graphrag_eval.cli.view_options import filter_options, results_format_option
from graphrag_eval.collector import reading_for_run
from graphrag_eval.comparison.gates import check_known, check_thresholds
from graphrag_eval.config import EvaluationConfig
from graphrag_eval.evaluation.checkpointed import evaluate_checkpointed
from graphrag_eval.evaluation.planning import build_run_engine
from graphrag_eval.evaluation.runner import (
    prepare_reference,
    run_sync,
)
from graphrag_eval.files.locking import lock_out_dir
from graphrag_eval.inputs import Diagnostics, ReferenceQuestion, ResponseSet
from graphrag_eval.inputs.compact import COMPACT_ABOVE_BYTES
from graphrag_eval.inputs.responses import load_responses
from graphrag_eval.inputs.traces import Reading
from graphrag_eval.results.checkpoint import (
    RunCheckpoint,
    open_run,
    start_checkpoint,
)
from graphrag_eval.results.export import write_run_table
from graphrag_eval.results.fold import AggregateFold
from graphrag_eval.results.from_records import TypedRecords, layout_for
from graphrag_eval.results.model import QuestionResult, RunResult
from graphrag_eval.results.read_run import SavedRun
from graphrag_eval.results.run import EvaluationRun
from graphrag_eval.results.write_run import (
    REPORT_HTML,
    RESULTS_JSONL,
    ResultsStream,
    RunSummary,
    WrittenRun,
    claim_out_dir,
    write_run,
)

__all__ = ["EvaluateOptions", "evaluate_command", "run_evaluate"]

_PROGRESS_MIN_ITEMS = 200  # below this a run is over before a bar is worth drawing


@click.command("evaluate")
@debug_option
@input_file_arguments("reference", "responses")
@config_option("YAML config file.")
@max_expanded_size_option
@click.option(
    "-o",
    "--out-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("graphrag-eval-results"),
    show_default=True,
    help="Directory for results.jsonl, aggregates.yaml, run.yaml and report.html (and "
    "checkpoint.json, which --resume reads).",
)
@results_format_option
@click.option("--yaml", "write_yaml", is_flag=True, hidden=True, help="Same as --format yaml.")
@click.option(
    "--report/--no-report",
    "html_report",
    default=True,
    show_default=True,
    help="Write the HTML report OUT_DIR/report.html.",
)
@gate_options
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show the progress on stderr: a bar with the time left on a terminal, else (a CI "
    "log) a plain line every 10 s (default: for runs with a judge or of 200+ questions).",
)
@click.option("-q", "--quiet", is_flag=True, help="Print no summary, only errors.")
@click.option(
    "--resume",
    is_flag=True,
    help="Continue the interrupted run in OUT_DIR: keep the items it wrote, evaluate the rest.",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace the results of an earlier run in OUT_DIR (without it, a directory that "
    "holds them is refused).",
)
@no_cache_option
@click.option(
    "--dry-run",
    is_flag=True,
    help="Count and price the judge calls the run would make (cache hits are free); call "
    "nothing, write nothing.",
)
@max_cost_option
@batch_option
@repeats_option
@store_options
@filter_options
@summary_md_option
@responses_format_option
def evaluate_command(**options: Any) -> None:
    """Evaluate RESPONSES against the REFERENCE dataset.

    REFERENCE is a YAML or JSON list of templates with questions; RESPONSES is JSON (a dict
    by question id or a list), JSONL (one response per line) or YAML. Per-question results
    are appended to OUT_DIR/results.jsonl as they finish (and put in reference order at the
    end); aggregates go to OUT_DIR/aggregates.yaml, the run summary, with every input
    problem, to OUT_DIR/run.yaml, and the HTML report to OUT_DIR/report.html.

    \b
    With an LLM configured (llm.generation in the config), answers are also judged; judge
    calls are cached, so a re-run costs nothing. An interrupted run (Ctrl-C, a crash,
    kill -9) continues with --resume and loses nothing.

    \b
    OUT_DIR must not hold another run's results: --resume continues an interrupted run
    there, --overwrite replaces it.

    \b
    Exit codes: 0 ok, 1 a --fail-under or --fail-over threshold not met, 2 bad input,
    config or option (an OUT_DIR holding an earlier run included), 3 evaluation incomplete
    (a judge endpoint or the SPARQL store was unusable, the cost limit stopped calls, or a
    metric failed on every question; the line printed says how to finish it),
    130 interrupted (Ctrl-C), 143 stopped (SIGTERM).

    \b
    Example:
      graphrag-eval evaluate reference.yaml responses.jsonl -c config.yaml -o out/
      graphrag-eval evaluate reference.yaml responses.jsonl -c config.yaml --dry-run
      graphrag-eval evaluate reference.yaml responses.jsonl -c config.yaml -o out/ --resume
      graphrag-eval evaluate reference.yaml responses.jsonl -o out/ --fail-under steps_score=0.8
      graphrag-eval evaluate reference.yaml responses.jsonl --data graph.ttl -o out/
    """
    run_evaluate(EvaluateOptions(**options))


def run_evaluate(options: EvaluateOptions) -> None:
    """Evaluate, write the output directory, print the summary, then check the gates.

    Ctrl-C or SIGTERM at any point is one line with the command that continues the run,
    and exit 130 or 143 (docs/security.md)."""
    try:
        with reading_for_run():  # the inputs read are left out of the collector's passes
            _evaluate(options)
    except KeyboardInterrupt:  # loading the inputs, a model, or writing the outputs
        stderr().print(
            f"interrupted; continue with: {command_line('--resume')}",
            markup=False,
        )
        raise click.exceptions.Exit(interrupt_exit_code()) from None


def _evaluate(options: EvaluateOptions) -> None:
    started = time.perf_counter()
    if options.resume and options.overwrite:
        raise click.UsageError(
            "--resume continues the run in OUT_DIR and --overwrite replaces it: give one"
        )
    config = options.config()
    check_known(options.gates, numeric_outputs(config))
    diagnostics = Diagnostics()
    questions, response_set = _read_inputs(options, config, diagnostics)
    engine = build_run_engine(
        config,
        use_cache=False if options.no_cache else None,
        dry_run=options.dry_run,
        max_cost_usd=options.max_cost_usd,
    )
    warn_unpriced(engine)
    if (notice := repeats_notice(config)) is not None and not options.quiet:
        stderr().print(notice, markup=False)
    if options.dry_run:
        dry_run(questions, response_set, config, engine)
        return
    services = open_services(engine, config, options.out_dir)  # no store: exit 2
    # One run at a time writes a directory: a second fails at once, naming the first.
    with lock_out_dir(options.out_dir):
        if not options.resume:  # --resume continues the run there; else none may be there
            claim_out_dir(options.out_dir, overwrite=options.overwrite)
        checkpoint = open_run(
            options.out_dir,
            options.reference,
            options.responses,
            config,
            questions,
            source=response_set.source,
            resume_run=options.resume,
            graph=services[1].identity.as_record() if services[1] is not None else None,
            selection=options.selection.as_record(),
        )
        show = not options.quiet and options.progress is not False
        batches = start_batches(engine, options.out_dir, options.resume, show)
        fold, inputs = AggregateFold(layout_for(config), config), (questions, response_set, config)
        streamed, tally = ResultsStream(options.out_dir, options.formats, fold), RunTally()
        run = _run_checkpointed(checkpoint, streamed, tally, inputs, services, options)
        diagnostics.extend(run.diagnostics.notices)
        diagnostics.extend(checkpoint.resumed.notices)  # what the kept items' evaluation found
        written = _write_outputs(options, run, streamed, diagnostics, services, checkpoint, started)
    failures = check_thresholds(written.aggregates.micro, options.gates)
    resumed = checkpoint.resumed if options.resume else None
    outcome = RunOutcome(
        options.out_dir, tally, layout_for(config), written, engine, resumed,
        options.html_report, execution_summary(services[1]),
    )  # fmt: skip
    if not options.quiet:
        print_run_outcome(outcome, options.gates, failures)
        print_batch_summary(batches)
    incomplete = incomplete_line(tally, config, engine, command_line("--resume"))
    incomplete = store_incomplete(services[1], incomplete)
    evaluate_ci_report(outcome, (options.gates, failures, incomplete), config, options.summary_md)
    exit_on_failures(failures, incomplete)


def _read_inputs(
    options: EvaluateOptions, config: EvaluationConfig, diagnostics: Diagnostics
) -> tuple[Sequence[ReferenceQuestion], ResponseSet]:
    """The reference questions to evaluate (those --question and --template select) and the
    responses, in the format --responses-format gives; before anything is written, an error
    when there is nothing to evaluate or an id names nothing in the reference."""
    rules, compact = config.steps.rules, COMPACT_ABOVE_BYTES
    questions = prepare_reference(
        options.reference, diagnostics, rules, compact_above=compact, sparql=config.sparql
    )
    response_set = load_responses(
        options.responses, reading=Reading(options.responses_format, config.traces)
    )
    questions = options.selection.restrict_inputs(questions, response_set, options.reference)
    return questions, response_set


def _run_checkpointed(
    checkpoint: RunCheckpoint,
    streamed: ResultsStream,
    tally: RunTally,
    inputs: tuple[Sequence[ReferenceQuestion], ResponseSet, EvaluationConfig],
    services: RunServices,
    options: EvaluateOptions,
) -> EvaluationRun:
    """The run, each item written as it finishes, with its progress on standard error; the
    results go to ``streamed`` (in reference order) and ``tally``, and the run keeps none."""
    questions, response_set, config = inputs
    engine, store = services
    # A bar on a terminal; in a log (CI) a plain line every few seconds instead.
    progress = options.progress
    show = len(questions) >= _PROGRESS_MIN_ITEMS or engine is not None
    left = len(questions) - len(checkpoint.resumed.kept)
    with guarded_import():  # rich: not before the inputs
        from graphrag_eval.report.progress import start_progress
    with contextlib.ExitStack() as stack:
        # Not cut in half: results.jsonl without its checkpoint.json is no run to resume.
        with deferred_interrupts():
            log = stack.enter_context(start_checkpoint(checkpoint))
        streamed.line_of = log.line
        stack.enter_context(streamed)  # removed if the run stops: the checkpoint stays
        bar = stack.enter_context(
            start_progress(
                stderr(), left, show if progress is None else progress, forced=bool(progress)
            )
        )

        def on_result(result: QuestionResult) -> None:
            streamed.add(result)
            tally.add(result)

        async def run_all() -> EvaluationRun:
            try:
                return await evaluate_checkpointed(
                    log,
                    questions,
                    response_set,
                    config,
                    engine=engine,
                    on_item=lambda _: bar.advance(),
                    on_result=on_result,
                    keep=False,
                    store=store,
                )
            finally:
                await close_all(services)

        try:
            return run_sync(run_all)
        except KeyboardInterrupt:
            bar.stop()
            stderr().print(
                f"interrupted; the finished items are in {log.path}; continue with: "
                f"{command_line('--resume')}",
                markup=False,
            )
            raise click.exceptions.Exit(interrupt_exit_code()) from None


def write_report(run: SavedRun, path: Path) -> Path:
    """:func:`graphrag_eval.report.html.write_report`, imported when a report is written:
    Jinja and pygal cost the start of every run, and --no-report never needs them."""
    with guarded_import():
        from graphrag_eval.report.html import write_report as write

    return write(run, path)


def _write_outputs(
    options: EvaluateOptions,
    run: EvaluationRun,
    streamed: ResultsStream,
    diagnostics: Diagnostics,
    services: RunServices,
    checkpoint: RunCheckpoint,
    started: float,
) -> WrittenRun:
    """The output directory: the results (written in reference order as they came),
    aggregates, run.yaml, the report."""
    resumed, (engine, store) = checkpoint.resumed, services
    summary = RunSummary.of(
        run,
        reference=options.reference,
        responses=options.responses,
        config_file=options.config_path,
        notices=diagnostics.notices,
        engine=engine,
        resumed=(len(resumed.kept), resumed.redo),
        counts=streamed.counts,
        graph=store.identity.as_record() if store is not None else None,
    )
    summary = replace(summary, selection=options.selection.as_record())
    written = write_run(
        options.out_dir, run, summary, options.formats, started_s=started, streamed=streamed
    )
    if options.html_report:
        layout = layout_for(run.config)
        saved = SavedRun(
            label=str(options.out_dir),
            results_path=options.out_dir / RESULTS_JSONL,
            results=RunResult(TypedRecords(streamed.records(), layout), layout),
            aggregates=written.aggregates,
            config=run.config,
            info=written.summary.as_dict(),
        )
        write_report(saved, options.out_dir / REPORT_HTML)
    write_run_table(options.out_dir, options.results_format, streamed.records)
    return written
