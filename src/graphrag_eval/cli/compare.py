"""``graphrag-eval compare``: run B against run A, question by question, with the CI gates
on the comparison (docs/report.md)."""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from graphrag_eval.cli.ci_summary import compare_ci_report
from graphrag_eval.cli.console import LOG_WIDTH, as_text, emit, stdout
from graphrag_eval.cli.errors import exit_on_failures
from graphrag_eval.cli.options import (
    confidence_option,
    config_option,
    debug_option,
    gate_options,
    max_expanded_size_option,
    numeric_outputs,
    output_file_option,
    summary_md_option,
)
from graphrag_eval.cli.report import load_saved_run
from graphrag_eval.cli.view_options import filter_options
from graphrag_eval.comparison.console import print_comparison
from graphrag_eval.comparison.gates import (
    Threshold,
    check_comparison_thresholds,
    check_known,
    check_regressions,
)
from graphrag_eval.comparison.model import (
    DEFAULT_CONFIDENCE,
    DEFAULT_ERROR_SAMPLES,
    DEFAULT_SEED,
    DEFAULT_TOP,
    Comparison,
    ErrorSamples,
)
from graphrag_eval.comparison.page import write_comparison
from graphrag_eval.errors import GraphragEvalError
from graphrag_eval.files.documents import remove_stale_temporaries
from graphrag_eval.results.read_run import SavedRun
from graphrag_eval.results.selection import NO_FILTER, QuestionFilter

__all__ = ["CompareOptions", "compare"]


@dataclass(frozen=True, slots=True)
class CompareOptions:
    """The arguments and options of ``compare``, as click parses them."""

    run_a: Path | None
    run_b: Path | None
    config_path: Path | None
    output_format: str | None
    as_json: bool
    output: Path | None
    html_path: Path | None
    seed: int
    resamples: int | None
    confidence: float
    top: int
    fail_under: Sequence[Threshold]
    fail_over: Sequence[Threshold]
    fail_on_regression: bool
    error_samples: ErrorSamples
    selection: QuestionFilter = NO_FILTER
    summary_md: Path | None = None

    @property
    def gates(self) -> list[Threshold]:
        return [*self.fail_under, *self.fail_over]


@click.command("compare", context_settings={"show_default": True})
@debug_option
# Not required by click, whose message would be a usage block: one line instead (run_compare).
@click.argument("run_a", metavar="RUN_A", type=click.Path(path_type=Path), required=False)
@click.argument("run_b", metavar="RUN_B", type=click.Path(path_type=Path), required=False)
@config_option("YAML config file (its aggregation section applies to both runs).")
@max_expanded_size_option
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "yaml"]),
    default=None,
    help="What to print: a table (text, the default), or the whole comparison as JSON or "
    "YAML. With -o, the file's extension chooses unless this is given.",
)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@output_file_option(
    "Write the comparison to this file instead of standard output, in the format its "
    "extension names (.json, .yaml or .yml, .txt) unless --format or --json is given."
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
    help="Seed of the bootstrap resampling.",
)
@click.option(
    "--resamples",
    type=click.IntRange(min=100),
    default=None,  # auto, as in compare_results
    help="Bootstrap resamples per interval (default: 10,000; fewer, down to 2,000, for runs "
    "of more than 20,000 questions).",
)
@confidence_option(DEFAULT_CONFIDENCE)
@click.option(
    "--top",
    type=click.IntRange(min=0),
    default=DEFAULT_TOP,
    help="Questions listed per metric that got better and worse (0: all), in the text output too.",
)
@gate_options
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
    help="zero: a question that newly fails (an error response) counts as a fall to 0 on "
    "the scores it had, so a run that fails more cannot look better; exclude: it leaves "
    "the pairs (it is counted under scored only in A).",
)
@filter_options
@summary_md_option
def compare(**options: Any) -> None:
    """Compare run B with run A, question by question.

    RUN_A and RUN_B are output directories of evaluate (or their results files). Questions
    are paired by id; for each metric, overall and per template, the comparison gives the
    mean of each run over the questions scored in both, the difference B - A with a paired
    bootstrap confidence interval (seeded: the same runs give the same intervals), whether
    the metric got significantly better or worse, and the questions that changed most.
    Costs, tokens and seconds are listed apart from the scores, in their units, as lower or
    higher: they are not part of the verdict.

    With --fail-under METRIC=VALUE (or --fail-over), exits 1 when the mean of METRIC the
    comparison shows for run B is under (over) VALUE or METRIC got significantly worse; with
    --fail-on-regression, when any score got significantly worse. The defaults are those of
    compare_results() in Python. Exit codes: 0 ok, 1 a gate failed, 2 bad input.

    \b
    Example:
      graphrag-eval compare baseline/ candidate/
      graphrag-eval compare baseline/ candidate/ --html comparison.html -o diff.json
      graphrag-eval compare baseline/ candidate/ --fail-under answer_f1=0.7 --fail-on-regression
    """
    run_compare(CompareOptions(**options))


def run_compare(options: CompareOptions) -> None:
    """Compare the two runs, show or write the comparison, then check the gates."""
    if options.run_a is None or options.run_b is None:
        missing = "RUN_A and RUN_B" if options.run_a is None else "RUN_B"
        raise GraphragEvalError(
            f"missing {missing}: compare takes two runs, as in graphrag-eval compare "
            "baseline/ candidate/ (output directories of graphrag-eval evaluate)"
        )
    output_format = _output_format(options)
    first = load_saved_run(options.run_a, options.config_path)
    second = load_saved_run(options.run_b, options.config_path)
    first, second = (
        options.selection.restrict_run(first, others=[second]),
        options.selection.restrict_run(second, others=[first]),
    )
    numeric = set(first.aggregates.macro) | set(second.aggregates.macro)
    check_known(options.gates, numeric | numeric_outputs(second.config))
    comparison = _comparison(options, first, second)
    if options.html_path is not None:
        remove_stale_temporaries(options.html_path.parent, options.html_path.name)
        write_comparison(comparison, options.html_path, first, second)
    if output_format == "text":
        _write_text(comparison, options.output)
        if options.html_path is not None:
            stdout().print(f"comparison page in {options.html_path}")
    else:
        emit(as_text(comparison.as_dict(), output_format), options.output)
    failures = _gate_failures(options, comparison)
    compare_ci_report(
        comparison,
        (options.gates, options.fail_on_regression, failures),
        [first.config, second.config],
        options.html_path,
        options.summary_md,
        # The comparison as JSON or YAML on standard output stays parseable.
        sys.stderr if output_format != "text" and options.output is None else None,
    )
    exit_on_failures(failures)


_FORMAT_OF_SUFFIX = {".json": "json", ".yaml": "yaml", ".yml": "yaml", ".txt": "text"}


def _output_format(options: CompareOptions) -> str:
    """``--json``, else ``--format``, else the format ``-o``'s extension names, else text."""
    if options.as_json:
        return "json"
    if options.output_format is not None:
        return options.output_format
    if options.output is None:
        return "text"
    found = _FORMAT_OF_SUFFIX.get(options.output.suffix.lower())
    if found is None and options.output.suffix.lower() in (".html", ".htm"):
        raise GraphragEvalError(
            f"-o {options.output}: the HTML page is written with --html {options.output}; "
            "-o writes the comparison as .json, .yaml, .yml or .txt"
        )
    if found is None:
        raise GraphragEvalError(
            f"-o {options.output}: cannot tell the format from its extension: name the file "
            ".json, .yaml, .yml or .txt, or give --format json|yaml|text"
        )
    return found


def _write_text(comparison: Comparison, output: Path | None) -> None:
    """The comparison's tables on standard output, or in the file ``output`` (no styles)."""
    if output is None:
        print_comparison(stdout(), comparison)
        return
    buffer = io.StringIO()
    console = Console(
        file=buffer, width=LOG_WIDTH, color_system=None, force_terminal=False, highlight=False
    )
    print_comparison(console, comparison)
    emit(buffer.getvalue(), output)


def _comparison(options: CompareOptions, first: SavedRun, second: SavedRun) -> Comparison:
    # Imported here: it brings numpy, which no other command needs (their start is faster).
    from graphrag_eval.comparison.compare import compare_results

    return compare_results(
        first.results,
        second.results,
        config_a=first.config,
        config_b=second.config,
        run_a=str(options.run_a),
        run_b=str(options.run_b),
        seed=options.seed,
        resamples=options.resamples,
        confidence=options.confidence,
        top=options.top,
        error_samples=options.error_samples,
        graph_a=_graph(first),
        graph_b=_graph(second),
    )


def _graph(run: SavedRun) -> dict[str, Any] | None:
    """The graph a saved run executed SPARQL queries against (``run.yaml``'s ``graph``)."""
    graph = run.info.get("graph")
    return graph if isinstance(graph, dict) else None


def _gate_failures(options: CompareOptions, comparison: Comparison) -> list[str]:
    """The failed gates: the thresholds, on the means the comparison shows for run B (the
    same pairs and errors), and the regressions of the watched metrics."""
    failures = check_comparison_thresholds(comparison, options.gates)
    watched = [threshold.metric for threshold in options.gates]
    if options.fail_on_regression:
        watched += [name for name, spec in comparison.keys.items() if not spec.lower_is_better]
    failures += check_regressions(comparison, dict.fromkeys(watched))
    return failures
