"""The ``graphrag-eval`` command line.

User errors (a bad reference, responses or config file) print one line and exit 2;
``--debug`` shows the traceback instead. Exit codes: 0 ok, 1 a CI gate failed
(``--fail-under``, ``--fail-on-regression``), 2 bad input or config.
"""

from __future__ import annotations

import asyncio
import csv
import decimal
import io
import json
import logging
import math
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

import click
from rich.console import Console

from graphrag_eval import __version__
from graphrag_eval.aggregation import compute_aggregates, load_results
from graphrag_eval.checkpoint import Resumed, fingerprint, write_checkpoint
from graphrag_eval.checkpoint import resume as resume_run
from graphrag_eval.compare import (
    DEFAULT_CONFIDENCE,
    DEFAULT_ERROR_SAMPLES,
    DEFAULT_SEED,
    DEFAULT_TOP,
    ErrorSamples,
    compare_results,
)
from graphrag_eval.config import EvaluationConfig, GenerationConfig, load_config
from graphrag_eval.errors import GraphragEvalError, InputError
from graphrag_eval.evaluation import (
    EvaluationRun,
    build_run_engine,
    check_selection,
    evaluate,
    prepare_reference,
    prepare_responses,
)
from graphrag_eval.files import (
    JSON_TEXT_ERRORS,
    decode_utf8,
    dump_yaml,
    write_json_lines,
    write_text_atomic,
)
from graphrag_eval.gating import (
    Threshold,
    check_comparison_thresholds,
    check_known,
    check_regressions,
    check_thresholds,
    parse_threshold,
)
from graphrag_eval.inputs import (
    Diagnostics,
    Notice,
    ReferenceQuestion,
    ResponseSet,
    check_evaluable,
    count_kinds,
)
from graphrag_eval.llm.engine import LLMEngine, build_engine
from graphrag_eval.metrics.answer_correctness import judge_correctness
from graphrag_eval.metrics.base import (
    Aggregation,
    Failed,
    Outcome,
    Scored,
    configured_metrics,
    declared_outputs,
    metrics_for,
)
from graphrag_eval.report.console import (
    plural,
    print_comparison,
    print_dry_run,
    print_llm_summary,
    print_notices,
    print_summary,
)
from graphrag_eval.report.html import DEFAULT_WORST, write_comparison, write_report
from graphrag_eval.report.progress import start_progress
from graphrag_eval.runs import SavedRun, find_results, load_run, run_config

__all__ = ["answer_correctness_main", "cli", "main"]

logger = logging.getLogger("graphrag_eval")

EXIT_OK, EXIT_THRESHOLD, EXIT_BAD_INPUT = 0, 1, 2
_PROGRESS_MIN_ITEMS = 200  # below this a run is over before a bar is worth drawing

RESULTS_JSONL = "results.jsonl"
RESULTS_JSON = "results.json"
RESULTS_YAML = "results.yaml"
AGGREGATES_YAML = "aggregates.yaml"
RUN_YAML = "run.yaml"
REPORT_HTML = "report.html"


def _stderr() -> Console:
    # Messages are never wrapped: a CI log is grepped line by line.
    return Console(stderr=True, highlight=False, soft_wrap=True)


_LOG_WIDTH = 1_000
"""Columns of output that is not a terminal (a CI log, a file), whatever COLUMNS says: a
table takes the room it needs and never wraps a metric name or template id."""


def _stdout() -> Console:
    # Paths, ids and messages are user text: never read them as rich markup.
    console = Console(highlight=False, soft_wrap=True, markup=False)
    if not console.is_terminal:
        console.width = _LOG_WIDTH
    return console


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="graphrag-eval")
@click.option("--debug", is_flag=True, help="Show the traceback of an error instead of one line.")
def cli(debug: bool) -> None:
    """Score a question-answering system's responses against a reference dataset.

    Exit codes: 0 ok, 1 a --fail-under or regression gate failed, 2 bad input or config.

    \b
    Example:
      graphrag-eval evaluate examples/reference.yaml examples/responses.jsonl -o out/
      graphrag-eval report out/                 # out/report.html again, from the results
      graphrag-eval compare baseline/ out/ --html comparison.html --fail-on-regression
    """


# --debug is read by main() from the arguments; accept it after the subcommand too.
_debug_option = click.option(
    "--debug", is_flag=True, expose_value=False, help="Show the traceback of an error."
)


def _config_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(
        "-c",
        "--config",
        "config_path",
        type=click.Path(dir_okay=False, path_type=Path),
        help=help_text,
    )


_no_cache_option = click.option(
    "--no-cache", is_flag=True, help="Neither read nor write the judge call cache."
)


def _thresholds(
    ctx: click.Context, param: click.Parameter, values: Sequence[str]
) -> list[Threshold]:
    try:
        return [parse_threshold(value, upper=param.name == "fail_over") for value in values]
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def _gate_options(function: Callable[..., Any]) -> Callable[..., Any]:
    function = click.option(
        "--fail-over",
        "fail_over",
        multiple=True,
        metavar="METRIC=VALUE",
        callback=_thresholds,
        help="Exit 1 when the mean of METRIC is over VALUE (costs, tokens, seconds), or "
        "when no question has a value of it (repeatable).",
    )(function)
    return click.option(
        "--fail-under",
        "fail_under",
        multiple=True,
        metavar="METRIC=VALUE",
        callback=_thresholds,
        help="Exit 1 when the mean of METRIC over all questions is under VALUE, or when no "
        "question has a value of it (repeatable; for CI).",
    )(function)


_max_cost_option = click.option(
    "--max-cost",
    "max_cost_usd",
    type=click.FloatRange(min=0, min_open=True),
    metavar="USD",
    help="Start no new judge call once this many dollars are spent in the run (overrides "
    "llm.max_cost_usd).",
)


@cli.command("evaluate")
@_debug_option
@click.argument("reference", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("responses", type=click.Path(dir_okay=False, path_type=Path))
@_config_option("YAML config file.")
@click.option(
    "-o",
    "--out-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("graphrag-eval-results"),
    show_default=True,
    help="Directory for results.jsonl, aggregates.yaml and run.yaml.",
)
@click.option(
    "--format",
    "results_format",
    type=click.Choice(["jsonl", "json", "yaml"]),
    default="jsonl",
    show_default=True,
    help="Format of the per-question results: results.jsonl is always written (it is the "
    "checkpoint); json or yaml also writes results.json or results.yaml.",
)
@click.option("--yaml", "write_yaml", is_flag=True, hidden=True, help="Same as --format yaml.")
@click.option(
    "--report/--no-report",
    "html_report",
    default=True,
    show_default=True,
    help="Write the HTML report OUT_DIR/report.html.",
)
@_gate_options
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
@_no_cache_option
@click.option(
    "--dry-run",
    is_flag=True,
    help="Count and price the judge calls the run would make (cache hits are free); call "
    "nothing, write nothing.",
)
@_max_cost_option
def evaluate_command(
    reference: Path,
    responses: Path,
    config_path: Path | None,
    out_dir: Path,
    results_format: str,
    write_yaml: bool,
    html_report: bool,
    fail_under: Sequence[Threshold],
    fail_over: Sequence[Threshold],
    progress: bool | None,
    quiet: bool,
    resume: bool,
    no_cache: bool,
    dry_run: bool,
    max_cost_usd: float | None,
) -> None:
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
    Exit codes: 0 ok, 1 a --fail-under threshold not met, 2 bad input or config.

    \b
    Example:
      graphrag-eval evaluate reference.yaml responses.jsonl -c config.yaml -o out/
      graphrag-eval evaluate reference.yaml responses.jsonl -c config.yaml --dry-run
      graphrag-eval evaluate reference.yaml responses.jsonl -c config.yaml -o out/ --resume
      graphrag-eval evaluate reference.yaml responses.jsonl -o out/ --fail-under steps_score=0.8
    """
    started = time.perf_counter()
    config = load_config(config_path)
    gates = [*fail_under, *fail_over]
    check_known(gates, _numeric_outputs(config))
    diagnostics = Diagnostics()
    questions = prepare_reference(reference, diagnostics)
    response_set = prepare_responses(responses)
    check_evaluable(questions, response_set)  # before anything is written
    engine = build_run_engine(
        config,
        use_cache=False if no_cache else None,
        dry_run=dry_run,
        max_cost_usd=max_cost_usd,
    )
    if engine is not None and engine.max_cost_usd is not None and engine.stats.unpriced_models:
        _stderr().print(
            f"warning: no price known for {', '.join(sorted(engine.stats.unpriced_models))}: "
            "its calls count as $0, so the cost limit cannot stop them (set llm.prices)",
            markup=False,
        )
    if dry_run:
        _dry_run(questions, response_set, config, engine)
        return

    out_dir.mkdir(parents=True, exist_ok=True)
    results_path = out_dir / RESULTS_JSONL
    run_fingerprint = fingerprint(reference, responses, config)
    resumed = (
        resume_run(
            out_dir,
            RESULTS_JSONL,
            run_fingerprint,
            questions,
            metrics_for(config),
            source=response_set.source,
        )
        if resume
        else Resumed({}, 0, 0)
    )
    # Keep only the complete items of the earlier run, then append to them.
    write_text_atomic(
        results_path,
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in resumed.kept.values()),
    )
    write_checkpoint(out_dir, run_fingerprint)
    # A bar on a terminal; in a log (CI) a plain line every few seconds instead.
    show_progress = (
        len(questions) >= _PROGRESS_MIN_ITEMS or engine is not None
        if progress is None
        else progress
    )
    with (
        results_path.open("a", encoding="utf-8", errors=JSON_TEXT_ERRORS) as checkpoint,
        start_progress(
            _stderr(),
            len(questions) - len(resumed.kept),
            show_progress,
            forced=bool(progress),
        ) as bar,
    ):

        def on_item(result: dict[str, Any]) -> None:
            write_json_lines(checkpoint, [result])
            checkpoint.flush()
            bar.advance()

        async def run_all() -> EvaluationRun:
            try:
                return await evaluate(
                    questions,
                    response_set,
                    config,
                    on_item=on_item,
                    engine=engine,
                    done=resumed.kept,
                )
            finally:
                if engine is not None:
                    await engine.aclose()

        try:
            run = asyncio.run(run_all())
        except KeyboardInterrupt:
            checkpoint.flush()
            bar.stop()
            _stderr().print(
                f"interrupted; the finished items are in {results_path}: continue with --resume",
                markup=False,
            )
            raise click.exceptions.Exit(130) from None
    diagnostics.extend(run.diagnostics.notices)
    diagnostics.extend(resumed.notices)  # what the kept items' evaluation found

    write_text_atomic(
        results_path,
        "".join(json.dumps(result, ensure_ascii=False) + "\n" for result in run.results),
    )
    if write_yaml or results_format == "yaml":
        write_text_atomic(out_dir / RESULTS_YAML, dump_yaml(run.results))
    if results_format == "json":
        write_text_atomic(
            out_dir / RESULTS_JSON, json.dumps(run.results, ensure_ascii=False, indent=1) + "\n"
        )
    aggregates = compute_aggregates(run.results, config)
    write_text_atomic(out_dir / AGGREGATES_YAML, dump_yaml(aggregates))
    elapsed = time.perf_counter() - started
    summary = _run_summary(
        reference,
        responses,
        config_path,
        config,
        run.results,
        diagnostics.notices,
        elapsed,
        engine,
        resumed,
    )
    write_text_atomic(out_dir / RUN_YAML, dump_yaml(summary))

    report_path = out_dir / REPORT_HTML
    if html_report:
        write_report(
            SavedRun(
                label=str(out_dir),
                results_path=results_path,
                results=run.results,
                aggregates=aggregates,
                config=config,
                info=summary,
            ),
            report_path,
        )
    failures = check_thresholds(aggregates["micro"], gates)

    if not quiet:
        console = _stdout()
        print_summary(console, aggregates)
        print_notices(console, diagnostics.notices, str(out_dir / RUN_YAML))
        if engine is not None:
            print_llm_summary(console, engine.stats, engine.max_cost_usd)
        elif any(result.get("actual_answer") is not None for result in run.results):
            console.print(
                "LLM-judged answer metrics not run: the config names no judge "
                "(llm.generation); see docs/llm.md"
            )
        if resume:
            console.print(
                f"resumed: kept {plural(len(resumed.kept), 'finished item')}, evaluated "
                f"{len(run.results) - len(resumed.kept):,} ({resumed.redo:,} again after a "
                "judge failure)"
            )
        console.print(
            f"{plural(len(run.results), 'question')} evaluated in {elapsed:.2f} s; results in "
            f"{out_dir}/" + (f", report in {report_path}" if html_report else ""),
        )
        for threshold in gates:
            if not any(failure.startswith(f"{threshold.metric}:") for failure in failures):
                side = "at most" if threshold.upper else "at least"
                console.print(f"ok: {threshold.metric} mean is {side} {threshold.value:g}")
    _gate(failures)


def _numeric_outputs(config: EvaluationConfig) -> set[str]:
    """The numeric keys the configured metrics (custom evaluations included) write."""
    return {
        name
        for name, (spec, _) in declared_outputs(configured_metrics(config)).items()
        if spec.aggregation is Aggregation.NUMERIC
    }


def _gate(failures: Sequence[str]) -> None:
    """Exit 1 with one line per failed gate (never wrapped: CI logs are grepped)."""
    if not failures:
        return
    for failure in failures:
        click.echo(f"FAIL {failure}", err=True)
    raise click.exceptions.Exit(EXIT_THRESHOLD)


def _dry_run(
    questions: Sequence[ReferenceQuestion],
    response_set: ResponseSet,
    config: EvaluationConfig,
    engine: LLMEngine | None,
) -> None:
    console = _stdout()
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
    print_dry_run(console, engine.stats.plan_dict(), len(questions))


def _run_summary(
    reference: Path,
    responses: Path,
    config_path: Path | None,
    config: EvaluationConfig,
    results: Sequence[dict[str, Any]],
    notices: Sequence[Notice],
    elapsed_s: float,
    engine: LLMEngine | None = None,
    resumed: Resumed | None = None,
) -> dict[str, Any]:
    llm: dict[str, Any] | None = None
    if engine is not None:
        llm = {
            "judge_model": engine.generation.model if engine.generation else None,
            "embedding_model": engine.embedding.model if engine.embedding else None,
            "cache": str(engine.cache_path) if engine.cache_path else "off",
            "max_cost_usd": engine.max_cost_usd,
            **engine.stats.as_dict(),
        }
    return {
        "graphrag_eval_version": __version__,
        "reference": str(reference),
        "responses": str(responses),
        "config_file": str(config_path) if config_path else None,
        "config": config.public_dump(),
        "questions": len(results),
        "success_samples": sum(1 for r in results if r.get("status") == "success"),
        "error_samples": sum(1 for r in results if r.get("status") == "error"),
        "missing_responses": sum(1 for r in results if r.get("missing_response")),
        "elapsed_sec": round(elapsed_s, 3),
        "resumed": (
            {"kept": len(resumed.kept), "evaluated_again": resumed.redo}
            if resumed is not None and (resumed.kept or resumed.redo)
            else None
        ),
        "llm": llm,
        "input_problems": count_kinds(notices),
        "notices": [str(notice) for notice in notices],
    }


@cli.command()
@_debug_option
@click.argument("results", type=click.Path(path_type=Path))
@_config_option("YAML config file (its aggregation section applies instead of the run's).")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the aggregates here instead of standard output.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["yaml", "json"]),
    default="yaml",
    show_default=True,
    help="Output format.",
)
def aggregate(
    results: Path, config_path: Path | None, output: Path | None, output_format: str
) -> None:
    """Compute aggregates from saved per-question RESULTS: a run's output directory or its
    results file (JSONL, JSON or YAML).

    The aggregation settings are the run's (from the run.yaml beside the results), or the
    config's with -c.

    \b
    Example:
      graphrag-eval aggregate out/
      graphrag-eval aggregate out/results.jsonl -c config.yaml -o aggregates.yaml
    """
    results_path = find_results(results)
    config = run_config(results_path, config_path)
    aggregates = compute_aggregates(load_results(results_path), config)
    text = (
        json.dumps(aggregates, indent=2, ensure_ascii=False) + "\n"
        if output_format == "json"
        else dump_yaml(aggregates)
    )
    if output is None:
        click.echo(text, nl=False)
    else:
        write_text_atomic(output, text)


@cli.command()
@_debug_option
@click.argument("results", type=click.Path(path_type=Path))
@_config_option("YAML config file (its aggregation section applies instead of the run's).")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="HTML file to write (default: report.html beside the results).",
)
@click.option(
    "--worst",
    type=click.IntRange(min=0),
    default=DEFAULT_WORST,
    show_default=True,
    help="How many of the lowest-scoring questions to show in full.",
)
def report(results: Path, config_path: Path | None, output: Path | None, worst: int) -> None:
    """Write the HTML report of saved RESULTS: a run's output directory or its results file.

    The report is one self-contained file that opens offline: the run's settings and
    coverage, every metric overall and per template, score charts, step statistics, the
    judge's cost and tokens, and the worst questions with their answers, steps and the
    judge's reasons.

    \b
    Example:
      graphrag-eval report out/
      graphrag-eval report out/results.jsonl -o report.html --worst 50
    """
    run = _load_run(results, config_path)
    target = output or run.results_path.parent / REPORT_HTML
    write_report(run, target, worst)
    _stdout().print(f"report of {plural(len(run.results), 'question')} in {target}")


@cli.command()
@_debug_option
@click.argument("run_a", metavar="RUN_A", type=click.Path(path_type=Path))
@click.argument("run_b", metavar="RUN_B", type=click.Path(path_type=Path))
@_config_option("YAML config file (its aggregation section applies to both runs).")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "yaml"]),
    default="text",
    show_default=True,
    help="What to print: a table, or the whole comparison as JSON or YAML.",
)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the JSON or YAML comparison to this file instead of standard output.",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the comparison as an HTML page.",
)
@click.option(
    "--seed",
    type=int,
    default=DEFAULT_SEED,
    show_default=True,
    help="Seed of the bootstrap resampling.",
)
@click.option(
    "--resamples",
    type=click.IntRange(min=100),
    default=None,  # auto, as in compare_results
    help="Bootstrap resamples per interval (default: 10,000; fewer, down to 2,000, for runs "
    "of more than 20,000 questions).",
)
@click.option(
    "--confidence",
    type=click.FloatRange(min=0.5, max=1, max_open=True),
    default=DEFAULT_CONFIDENCE,
    show_default=True,
    help="Confidence level of the intervals.",
)
@click.option(
    "--top",
    type=click.IntRange(min=0),
    default=DEFAULT_TOP,
    show_default=True,
    help="Questions listed per metric that got better and worse (0: all), in the text output too.",
)
@_gate_options
@click.option(
    "--fail-on-regression",
    is_flag=True,
    help="Exit 1 when any score (every metric but costs, tokens and seconds) got "
    "significantly worse.",
)
@click.option(
    "--error-samples",
    type=click.Choice(["zero", "exclude"]),
    default=DEFAULT_ERROR_SAMPLES,
    show_default=True,
    help="zero: a question that newly fails (an error response) counts as a fall to 0 on "
    "the scores it had, so a run that fails more cannot look better; exclude: it leaves "
    "the pairs (it is counted under scored only in A).",
)
def compare(
    run_a: Path,
    run_b: Path,
    config_path: Path | None,
    output_format: str,
    as_json: bool,
    output: Path | None,
    html_path: Path | None,
    seed: int,
    resamples: int | None,
    confidence: float,
    top: int,
    fail_under: Sequence[Threshold],
    fail_over: Sequence[Threshold],
    fail_on_regression: bool,
    error_samples: ErrorSamples,
) -> None:
    """Compare run B with run A, question by question.

    RUN_A and RUN_B are output directories of evaluate (or their results files). Questions
    are paired by id; for each metric, overall and per template, the comparison gives the
    mean of each run over the questions scored in both, the difference B - A with a paired
    bootstrap confidence interval (seeded: the same runs give the same intervals), whether
    the metric got significantly better or worse, and the questions that changed most.

    With --fail-under METRIC=VALUE (or --fail-over), exits 1 when the mean of METRIC the
    comparison shows for run B is under (over) VALUE or METRIC got significantly worse; with
    --fail-on-regression, when any score got significantly worse. The defaults are those of
    compare_results() in Python. Exit codes: 0 ok, 1 a gate failed, 2 bad input.

    \b
    Example:
      graphrag-eval compare baseline/ candidate/
      graphrag-eval compare baseline/ candidate/ --html comparison.html --json -o diff.json
      graphrag-eval compare baseline/ candidate/ --fail-under answer_f1=0.7 --fail-on-regression
    """
    output_format = "json" if as_json else output_format
    if output_format == "text" and output is not None:
        raise click.UsageError("-o/--output takes the JSON or YAML comparison: add --json")
    first = _load_run(run_a, config_path)
    second = _load_run(run_b, config_path)
    gates = [*fail_under, *fail_over]
    numeric = set(first.aggregates["macro"]) | set(second.aggregates["macro"])
    check_known(gates, numeric | _numeric_outputs(second.config))
    comparison = compare_results(
        first.results,
        second.results,
        config_a=first.config,
        config_b=second.config,
        run_a=str(run_a),
        run_b=str(run_b),
        seed=seed,
        resamples=resamples,
        confidence=confidence,
        top=top,
        error_samples=error_samples,
    )
    if html_path is not None:
        write_comparison(comparison, html_path, first, second)
    if output_format == "text":
        print_comparison(_stdout(), comparison)
        if html_path is not None:
            _stdout().print(f"comparison page in {html_path}")
    else:
        data = comparison.as_dict()
        text = (
            json.dumps(data, indent=2, ensure_ascii=False) + "\n"
            if output_format == "json"
            else dump_yaml(data)
        )
        if output is None:
            click.echo(text, nl=False)
        else:
            write_text_atomic(output, text)
    # The gates read the means the comparison shows for run B (the same pairs and errors).
    failures = check_comparison_thresholds(comparison, gates)
    watched = [threshold.metric for threshold in gates]
    if fail_on_regression:
        watched += [name for name, spec in comparison.keys.items() if not spec.lower_is_better]
    failures += check_regressions(comparison, dict.fromkeys(watched))
    _gate(failures)


def _load_run(path: Path, config_path: Path | None) -> SavedRun:
    run = load_run(path, load_config(config_path) if config_path is not None else None)
    for problem in run.problems[:5]:
        _stderr().print(f"warning: skipped {problem}", markup=False, highlight=False)
    if len(run.problems) > 5:
        _stderr().print(
            f"warning: skipped {plural(len(run.problems) - 5, 'more record')}", markup=False
        )
    return run


@cli.command()
@_debug_option
@click.argument("reference", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("responses", type=click.Path(dir_okay=False, path_type=Path))
@_config_option("YAML config file to check too.")
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 2 when the responses have any problem, not only the reference.",
)
def validate(reference: Path, responses: Path, config_path: Path | None, strict: bool) -> None:
    """Check the REFERENCE dataset, the RESPONSES and the config without calling any model.

    Exits 2 with a one-line message when the reference or config cannot be used, or when the
    run would evaluate nothing; every problem evaluate would report from the inputs alone is
    listed (outputs that cannot be read as the reference expects, a bad k, ...), and with
    --strict also exits 2. No judge or embedding model is called.

    \b
    Example:
      graphrag-eval validate reference.yaml responses.jsonl -c config.yaml
    """
    config = load_config(config_path)
    check_selection(config)
    diagnostics = Diagnostics()
    questions = prepare_reference(reference, diagnostics)
    response_set = prepare_responses(responses)
    check_evaluable(questions, response_set)
    # The same code as evaluate finds the same problems: the run's deterministic part.
    run = asyncio.run(evaluate(questions, response_set, _without_models(config)))
    diagnostics.extend(run.diagnostics.notices)
    diagnostics.extend(_metric_failures(run, response_set.source, diagnostics.notices))
    templates = len({question.template_id for question in questions})
    known = {question.id for question in questions}
    matched = sum(1 for qid in response_set.responses if qid in known)
    console = _stdout()
    console.print(
        f"{reference}: {plural(len(questions), 'question')} in {plural(templates, 'template')}"
    )
    console.print(
        f"{responses}: {plural(len(response_set.responses), 'response')}, {matched:,} for "
        "reference questions"
    )
    if config_path is not None:
        console.print(f"{config_path}: ok")
    print_notices(console, diagnostics.notices)
    response_problems = [n for n in diagnostics.notices if n.kind != "unused_field"]
    if strict and response_problems:
        raise click.exceptions.Exit(EXIT_BAD_INPUT)
    if not diagnostics.notices:
        console.print("no problems found")


def _without_models(config: EvaluationConfig) -> EvaluationConfig:
    """``config`` running only the metrics that need no model (steps, retrieval contexts,
    usage), with no model configured: a run that reads every input and calls nothing."""
    names = [
        metric.name
        for metric in metrics_for(config)
        if not (metric.needs or metric.uses_llm or metric.depends_on or metric.always)
    ]
    llm = config.llm.model_copy(update={"generation": None, "embedding": None})
    return config.model_copy(update={"llm": llm, "metrics": names, "custom_evaluations": []})


def _metric_failures(run: EvaluationRun, source: str, reported: Sequence[Notice]) -> list[Notice]:
    """The failures of a :func:`_without_models` run's metrics (a reference retrieval step
    with no contexts, say) as ``failed_metric`` notices; a step or item that already has a
    notice (an unreadable output) is not reported twice."""
    seen = {(notice.item, notice.field) for notice in reported}
    metrics = metrics_for(run.config)
    notices = []
    for result in run.results:
        item = f"question '{result.get('question_id')}'"
        steps = result.get("actual_steps")
        places: list[tuple[str | None, Any]] = [(None, result)]
        places += [(f"actual_steps[{i}]", s) for i, s in enumerate(steps or [])]
        for field, place in places:
            if not isinstance(place, dict) or (item, field) in seen:
                continue
            for metric in metrics:
                error = next((place[k] for k in metric.error_keys if k in place), None)
                if error is not None:
                    notices.append(
                        Notice(
                            "failed_metric",
                            f"{metric.name} cannot be computed: {error}",
                            file=source,
                            item=item,
                            field=field,
                        )
                    )
    return notices


def _fail(
    message: str, debug: bool, stream: IO[str] | None = None, prog_name: str = "graphrag-eval"
) -> int:
    if debug:
        traceback.print_exc()
    print(f"{prog_name}: error: {message}", file=stream or sys.stderr)
    return EXIT_BAD_INPUT


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``graphrag-eval`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    return _run_command(cli, args, "graphrag-eval")


def _run_command(command: click.Command, args: list[str], prog_name: str) -> int:
    debug = "--debug" in args
    try:
        # Without standalone mode click returns the code of ``ctx.exit(code)`` (and of
        # --help/--version) instead of calling sys.exit; commands themselves return None.
        code = command.main(args=args, prog_name=prog_name, standalone_mode=False)
    except GraphragEvalError as exc:
        return _fail(str(exc), debug, prog_name=prog_name)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.Abort:
        print(f"{prog_name}: aborted", file=sys.stderr)
        return 130
    except OSError as exc:  # unwritable output directory, full disk, ...
        message = f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": ")
        return _fail(message, debug, prog_name=prog_name)
    return code if isinstance(code, int) else EXIT_OK


TSV_COLUMNS = ("Question", "Reference answer", "Actual answer")
TSV_OUTPUTS = (
    "answer_reference_claims_count",
    "answer_actual_claims_count",
    "answer_matching_claims_count",
    "answer_correctness_reason",
    "answer_recall",
    "answer_precision",
    "answer_f1",
    "answer_correctness_cost",
    "answer_eval_error",
)


@click.command(
    "answer-correctness",
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="answer-correctness")
@_debug_option
@click.option(
    "-i",
    "--input",
    "input_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="TSV file with the columns Question, Reference answer and Actual answer.",
)
@click.option(
    "-o",
    "--output",
    "output_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="TSV file to write: the input columns and the answer correctness keys.",
)
@_config_option("YAML config (llm section, answer_correctness.prompt).")
@_no_cache_option
@_max_cost_option
def answer_correctness_command(
    input_path: Path,
    output_path: Path,
    config_path: Path | None,
    no_cache: bool,
    max_cost_usd: float | None,
) -> None:
    """Judge the correctness of the answers in a TSV file with an LLM.

    Each row is judged once (rows run concurrently, under the config's limits); the output
    has the rows in input order with answer_recall, answer_precision, answer_f1, the claim
    counts, the judge's reason and cost, or answer_eval_error. Without a config (or without
    llm.generation in it) the judge is OpenAI's gpt-4o-mini, with the key from
    OPENAI_API_KEY.

    \b
    Example:
      OPENAI_API_KEY=... answer-correctness -i answers.tsv -o judged.tsv
    """
    config = load_config(config_path)
    if config.llm.generation is None:
        llm = config.llm.model_copy(update={"generation": GenerationConfig()})
        config = config.model_copy(update={"llm": llm})
    rows = _read_answer_rows(input_path)
    engine = build_engine(config, use_cache=False if no_cache else None, max_cost_usd=max_cost_usd)
    assert engine is not None  # the config names a judge

    async def judge_all() -> list[Outcome]:
        try:
            return list(
                await asyncio.gather(
                    *(
                        _guarded(
                            engine,
                            config,
                            row.get("Question") or "",
                            row.get("Reference answer") or "",
                            row.get("Actual answer") or "",
                        )
                        for row in rows
                    )
                )
            )
        finally:
            await engine.aclose()

    outcomes = asyncio.run(judge_all())
    fieldnames = [*(rows[0].keys() if rows else TSV_COLUMNS)]
    fieldnames += [name for name in TSV_OUTPUTS if name not in fieldnames]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames, delimiter="\t", lineterminator="\n")
    writer.writeheader()
    for row, outcome in zip(rows, outcomes, strict=True):
        values: dict[str, Any] = dict(row)
        if isinstance(outcome, Scored):
            values.update({key: _plain(value) for key, value in outcome.values.items()})
        elif isinstance(outcome, Failed):
            values["answer_eval_error"] = outcome.error
        writer.writerow(values)
    write_text_atomic(output_path, buffer.getvalue())
    failed = sum(1 for outcome in outcomes if isinstance(outcome, Failed))
    console = _stdout()
    console.print(
        f"{plural(len(rows), 'answer')} judged ({failed:,} failed); results in {output_path}",
        markup=False,
    )
    print_llm_summary(console, engine.stats, engine.max_cost_usd)


def _plain(value: Any) -> Any:
    """A float as a plain decimal for the TSV: ``0.00005``, not ``5e-05``, with 12
    significant digits, so that float noise (``0.000044099999999999995``) is not written;
    other values as they are."""
    if isinstance(value, float) and math.isfinite(value):
        text = format(decimal.Decimal(f"{value:.12g}"), "f")
        return text if "." in text or "e" in text else f"{text}.0"
    return value


async def _guarded(
    engine: LLMEngine, config: EvaluationConfig, question: str, reference: str, actual: str
) -> Outcome:
    """One row's judgement; an unexpected error (a bug) costs that row only."""
    try:
        return await judge_correctness(engine, config, question, reference, actual)
    except Exception as exc:
        logger.exception("could not judge the answer to %r", question[:80])
        return Failed(engine.redact(f"internal error: {exc!r}"))


def _read_answer_rows(path: Path) -> list[dict[str, str]]:
    label = str(path)
    try:
        text = decode_utf8(path.read_bytes())
    except FileNotFoundError:
        raise InputError("file not found", file=label) from None
    except ValueError as exc:  # not UTF-8: the line and column of the first bad byte
        raise InputError(str(exc), file=label) from None
    reader = csv.DictReader(io.StringIO(text), delimiter="\t")
    header = reader.fieldnames or []
    missing = [column for column in TSV_COLUMNS if column not in header]
    if missing:
        raise InputError(
            f"missing column(s) {', '.join(missing)} (the header has: "
            f"{', '.join(header) or 'nothing'})",
            file=label,
            item="line 1",
        )
    rows = []
    for number, row in enumerate(reader, start=2):
        if None in row:
            raise InputError(
                "more values than columns (a tab inside a value?)",
                file=label,
                item=f"line {number}",
            )
        rows.append({key: value or "" for key, value in row.items()})
    return rows


def answer_correctness_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the seed's ``answer-correctness`` command."""
    args = list(sys.argv[1:] if argv is None else argv)
    return _run_command(answer_correctness_command, args, "answer-correctness")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
