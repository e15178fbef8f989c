"""The ``graphrag-eval`` command line.

User errors (a bad reference, responses or config file) print one line and exit 2;
``--debug`` shows the traceback instead. Exit codes: 0 ok, 2 bad input or config.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from graphrag_eval import __version__
from graphrag_eval.aggregation import compute_aggregates, load_results
from graphrag_eval.config import EvaluationConfig, load_config
from graphrag_eval.errors import GraphragEvalError
from graphrag_eval.evaluation import (
    check_coverage,
    evaluate,
    prepare_reference,
    prepare_responses,
)
from graphrag_eval.files import JSON_TEXT_ERRORS, dump_yaml, write_json_lines, write_text_atomic
from graphrag_eval.inputs import Diagnostics, Notice, count_kinds
from graphrag_eval.report.console import print_notices, print_summary

__all__ = ["answer_correctness_main", "cli", "main"]

EXIT_OK, EXIT_THRESHOLD, EXIT_BAD_INPUT = 0, 1, 2
_PROGRESS_MIN_ITEMS = 200  # below this a run is over before a bar is worth drawing

RESULTS_JSONL = "results.jsonl"
RESULTS_YAML = "results.yaml"
AGGREGATES_YAML = "aggregates.yaml"
RUN_YAML = "run.yaml"


def _stderr(force_terminal: bool | None = None) -> Console:
    return Console(stderr=True, highlight=False, force_terminal=force_terminal)


def _stdout() -> Console:
    # Paths, ids and messages are user text: never read them as rich markup.
    return Console(highlight=False, soft_wrap=True, markup=False)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="graphrag-eval")
@click.option("--debug", is_flag=True, help="Show the traceback of an error instead of one line.")
def cli(debug: bool) -> None:
    """Score a question-answering system's responses against a reference dataset.

    \b
    Example:
      graphrag-eval evaluate examples/reference.yaml examples/responses.jsonl -o out/
    """


# --debug is read by main() from the arguments; accept it after the subcommand too.
_debug_option = click.option(
    "--debug", is_flag=True, expose_value=False, help="Show the traceback of an error."
)


@cli.command("evaluate")
@_debug_option
@click.argument("reference", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("responses", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-c",
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="YAML config file.",
)
@click.option(
    "-o",
    "--out-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("graphrag-eval-results"),
    show_default=True,
    help="Directory for results.jsonl, aggregates.yaml and run.yaml.",
)
@click.option(
    "--yaml",
    "write_yaml",
    is_flag=True,
    help="Also write the per-question results as results.yaml.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show a progress bar (default: on a terminal, for runs of 200+ questions).",
)
@click.option("-q", "--quiet", is_flag=True, help="Print no summary, only errors.")
def evaluate_command(
    reference: Path,
    responses: Path,
    config_path: Path | None,
    out_dir: Path,
    write_yaml: bool,
    progress: bool | None,
    quiet: bool,
) -> None:
    """Evaluate RESPONSES against the REFERENCE dataset.

    REFERENCE is a YAML or JSON list of templates with questions; RESPONSES is JSON (a dict
    by question id or a list), JSONL (one response per line) or YAML. Per-question results
    are appended to OUT_DIR/results.jsonl as they finish (and put in reference order at the
    end); aggregates go to OUT_DIR/aggregates.yaml and the run summary, with every input
    problem, to OUT_DIR/run.yaml.

    \b
    Example:
      graphrag-eval evaluate reference.yaml responses.jsonl -c config.yaml -o out/ --yaml
    """
    started = time.perf_counter()
    config = load_config(config_path)
    diagnostics = Diagnostics()
    questions = prepare_reference(reference, diagnostics)
    response_set = prepare_responses(responses)

    out_dir.mkdir(parents=True, exist_ok=True)
    results_path = out_dir / RESULTS_JSONL
    stderr = _stderr(force_terminal=progress or None)  # --progress draws even when piped
    show_progress = (
        stderr.is_terminal and len(questions) >= _PROGRESS_MIN_ITEMS
        if progress is None
        else progress
    )
    with (
        results_path.open("w", encoding="utf-8", errors=JSON_TEXT_ERRORS) as checkpoint,
        Progress(
            TextColumn("evaluating"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=stderr,
            transient=True,
            disable=not show_progress,
        ) as bar,
    ):
        task = bar.add_task("evaluating", total=len(questions))

        def on_item(result: dict[str, Any]) -> None:
            write_json_lines(checkpoint, [result])
            checkpoint.flush()
            bar.advance(task)

        run = asyncio.run(evaluate(questions, response_set, config, on_item=on_item))
    diagnostics.extend(run.diagnostics.notices)

    write_text_atomic(
        results_path,
        "".join(json.dumps(result, ensure_ascii=False) + "\n" for result in run.results),
    )
    if write_yaml:
        write_text_atomic(out_dir / RESULTS_YAML, dump_yaml(run.results))
    aggregates = compute_aggregates(run.results, config)
    write_text_atomic(out_dir / AGGREGATES_YAML, dump_yaml(aggregates))
    elapsed = time.perf_counter() - started
    write_text_atomic(
        out_dir / RUN_YAML,
        dump_yaml(
            _run_summary(
                reference,
                responses,
                config_path,
                config,
                run.results,
                diagnostics.notices,
                elapsed,
            )
        ),
    )

    if not quiet:
        console = _stdout()
        print_summary(console, aggregates)
        print_notices(console, diagnostics.notices, str(out_dir / RUN_YAML))
        console.print(
            f"{len(run.results)} questions evaluated in {elapsed:.2f} s; results in {out_dir}/",
        )


def _run_summary(
    reference: Path,
    responses: Path,
    config_path: Path | None,
    config: EvaluationConfig,
    results: Sequence[dict[str, Any]],
    notices: Sequence[Notice],
    elapsed_s: float,
) -> dict[str, Any]:
    return {
        "graphrag_eval_version": __version__,
        "reference": str(reference),
        "responses": str(responses),
        "config_file": str(config_path) if config_path else None,
        "config": config.model_dump(mode="json"),
        "questions": len(results),
        "success_samples": sum(1 for r in results if r.get("status") == "success"),
        "error_samples": sum(1 for r in results if r.get("status") == "error"),
        "missing_responses": sum(1 for r in results if r.get("missing_response")),
        "elapsed_sec": round(elapsed_s, 3),
        "input_problems": count_kinds(notices),
        "notices": [str(notice) for notice in notices],
    }


@cli.command()
@_debug_option
@click.argument("results", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-c",
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="YAML config file (its aggregation section applies).",
)
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
    """Compute aggregates from saved per-question RESULTS (JSONL, JSON or YAML).

    \b
    Example:
      graphrag-eval aggregate out/results.jsonl -o out/aggregates.yaml
    """
    config = load_config(config_path)
    aggregates = compute_aggregates(load_results(results), config)
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
@click.argument("reference", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("responses", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-c",
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="YAML config file to check too.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 2 when the responses have any problem, not only the reference.",
)
def validate(reference: Path, responses: Path, config_path: Path | None, strict: bool) -> None:
    """Check the REFERENCE dataset, the RESPONSES and the config without evaluating.

    Exits 2 with a one-line message when the reference or config cannot be used; problems in
    the responses are listed (and, with --strict, also exit 2).

    \b
    Example:
      graphrag-eval validate reference.yaml responses.jsonl -c config.yaml
    """
    load_config(config_path)
    diagnostics = Diagnostics()
    questions = prepare_reference(reference, diagnostics)
    response_set = prepare_responses(responses)
    diagnostics.extend(response_set.notices)
    diagnostics.extend(check_coverage(questions, response_set))
    templates = len({question.template_id for question in questions})
    known = {question.id for question in questions}
    matched = sum(1 for qid in response_set.responses if qid in known)
    console = _stdout()
    console.print(f"{reference}: {len(questions)} questions in {templates} templates")
    console.print(
        f"{responses}: {len(response_set.responses)} responses, {matched} for reference questions"
    )
    if config_path is not None:
        console.print(f"{config_path}: ok")
    print_notices(console, diagnostics.notices)
    response_problems = [n for n in diagnostics.notices if n.kind != "unused_field"]
    if strict and response_problems:
        raise click.exceptions.Exit(EXIT_BAD_INPUT)
    if not diagnostics.notices:
        console.print("no problems found")


def _fail(message: str, debug: bool, stream: IO[str] | None = None) -> int:
    if debug:
        traceback.print_exc()
    print(f"graphrag-eval: error: {message}", file=stream or sys.stderr)
    return EXIT_BAD_INPUT


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``graphrag-eval`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    try:
        # Without standalone mode click returns the code of ``ctx.exit(code)`` (and of
        # --help/--version) instead of calling sys.exit; commands themselves return None.
        code = cli.main(args=args, prog_name="graphrag-eval", standalone_mode=False)
    except GraphragEvalError as exc:
        return _fail(str(exc), debug)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.Abort:
        print("graphrag-eval: aborted", file=sys.stderr)
        return 130
    except OSError as exc:  # unwritable output directory, full disk, ...
        return _fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "), debug)
    return code if isinstance(code, int) else EXIT_OK


def answer_correctness_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the seed's ``answer-correctness`` command.

    Answer correctness is judged by an LLM; the judge engine arrives with the ``llm`` extra.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if "-h" in args or "--help" in args:
        print(
            "usage: answer-correctness -i IN.tsv -o OUT.tsv [-c CONFIG]\n\n"
            "Judge the correctness of answers in a TSV file (columns Question, "
            "Reference answer, Actual answer) with an LLM."
        )
        return EXIT_OK
    print(
        "answer-correctness: error: this command needs the LLM judge of the 'llm' extra "
        "(pip install 'graphrag-eval[llm]'), which this version does not provide yet",
        file=sys.stderr,
    )
    return EXIT_BAD_INPUT


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
