"""Options that several commands share: ``--debug``, ``-c/--config``, ``--no-cache``,
``--max-cost`` and the CI gates ``--fail-under``/``--fail-over`` (docs/report.md), each with
the help of the command it is on; and the file arguments, whose directory given for a file is
a one-line error with a hint."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from graphrag_eval.comparison.gates import Threshold, parse_threshold
from graphrag_eval.config import EvaluationConfig
from graphrag_eval.files.bounded import EXPANDED_SIZE_ENV, max_expanded_size, parse_size
from graphrag_eval.inputs.traces import FORMATS
from graphrag_eval.metrics.base import Aggregation
from graphrag_eval.metrics.registry import configured_metrics, declared_outputs

__all__ = [
    "Decorator",
    "FilePath",
    "confidence_option",
    "config_option",
    "debug_option",
    "gate_options",
    "input_file_arguments",
    "max_cost_option",
    "max_expanded_size_option",
    "no_cache_option",
    "numeric_outputs",
    "output_file_option",
    "responses_format_option",
    "saved_run_arguments",
    "store_options",
    "summary_md_option",
    "with_store",
]

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


# --debug is read by main() from the arguments; accept it after the subcommand too.
debug_option: Decorator = click.option(
    "--debug", is_flag=True, expose_value=False, help="Show the traceback of an error."
)

no_cache_option: Decorator = click.option(
    "--no-cache", is_flag=True, help="Neither read nor write the judge call cache."
)

batch_option: Decorator = click.option(
    "--batch",
    is_flag=True,
    help="Send the judge's requests through the provider's batch API (half the price, "
    "results within 24 hours; same as llm.batch: true); --resume collects the batches of an "
    "interrupted run.",
)

max_cost_option: Decorator = click.option(
    "--max-cost",
    "max_cost_usd",
    type=click.FloatRange(min=0, min_open=True),
    metavar="USD",
    help="Start no new judge call once this many dollars are spent in the run (overrides "
    "llm.max_cost_usd).",
)


def confidence_option(default: float) -> Decorator:
    """``--confidence``, the level of a command's bootstrap intervals (compare, agreement)."""
    return click.option(
        "--confidence",
        type=click.FloatRange(min=0.5, max=1, max_open=True),
        default=default,
        help="Confidence level of the intervals.",
    )


summary_md_option: Decorator = click.option(
    "--summary-md",
    "summary_md",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Also write the summary as Markdown to FILE: the tables, the gates and their "
    "verdicts, the questions that got worse, the HTML file's path (what is appended to "
    "$GITHUB_STEP_SUMMARY when it is set; docs/integrations.md, CI).",
)


responses_format_option: Decorator = click.option(
    "--responses-format",
    type=click.Choice(["auto", *FORMATS]),
    default="auto",
    show_default=True,
    help="The format of RESPONSES: ours (native), OpenAI Chat Completions or Responses API "
    "transcripts, LangChain messages or OTLP JSON traces (docs/integrations.md); auto tells "
    "it from the content.",
)


class FilePath(click.Path):
    """A file (to read or to write), never a directory: a directory is refused with a hint,
    the file in it the user most likely meant (``examples/reference.yaml`` for ``examples``
    given as REFERENCE) or else that a file is wanted."""

    def __init__(self) -> None:
        super().__init__(dir_okay=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str | Path) and Path(value).is_dir():
            self.fail(_directory_hint(Path(value), param), param, ctx)
        return super().convert(value, param, ctx)


_FILE_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl", ".tsv", ".html")


def _directory_hint(directory: Path, param: click.Parameter | None) -> str:
    """The message for ``directory`` given where a file is wanted."""
    stem = (param.name or "") if param is not None else ""
    stem = {"config_path": "config", "output": ""}.get(stem, stem)
    try:
        candidates = sorted(
            entry
            for entry in directory.iterdir()
            if entry.suffix in _FILE_SUFFIXES and entry.is_file() and stem and stem in entry.stem
        )
    except OSError:
        candidates = []
    hint = f"did you mean {candidates[0]}?" if candidates else "give a file in it"
    return f"{str(directory)!r} is a directory, not a file ({hint})"


def _expanded_size(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        try:
            size = parse_size(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
        ctx.with_resource(max_expanded_size(size))  # for the command, undone after it


max_expanded_size_option: Decorator = click.option(
    "--max-expanded-size",
    metavar="SIZE",
    expose_value=False,
    callback=_expanded_size,
    help="Let YAML aliases add up to SIZE (such as 1G) to an input file once expanded "
    "(default: 10 times the file's size, at least 64M, at most 512M; also "
    f"${EXPANDED_SIZE_ENV}).",
)


def config_option(help_text: str) -> Decorator:
    """``-c/--config``, a YAML config file, with the command's own help."""
    return click.option("-c", "--config", "config_path", type=FilePath(), help=help_text)


def output_file_option(help_text: str) -> Decorator:
    """``-o/--output``, a file to write, with the command's own help."""
    return click.option("-o", "--output", type=FilePath(), help=help_text)


def input_file_arguments(*names: str) -> Decorator:
    """The named arguments, each an input file (``reference``, ``responses``)."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        for name in reversed(names):
            function = click.argument(name, type=FilePath())(function)
        return function

    return decorate


def store_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """``--endpoint URL`` and ``--data FILE`` (repeatable): the knowledge graph to execute
    SPARQL queries against, instead of the config's ``sparql.endpoint`` / ``sparql.data``
    (docs/knowledge-graph.md)."""
    function = click.option(
        "--data",
        "data_files",
        multiple=True,
        type=FilePath(),
        metavar="FILE",
        help="RDF file to load into an embedded Oxigraph store and execute SPARQL queries "
        "against (repeatable; overrides sparql.data and sparql.endpoint).",
    )(function)
    return click.option(
        "--endpoint",
        metavar="URL",
        help="SPARQL 1.1 query endpoint to execute SPARQL queries against (overrides "
        "sparql.endpoint and sparql.data; credentials via sparql.auth).",
    )(function)


def with_store(
    config: EvaluationConfig, endpoint: str | None, data_files: Sequence[Path | str]
) -> EvaluationConfig:
    """``config`` with the store ``--endpoint``/``--data`` name, when either is given.

    Raises :class:`click.BadParameter` when both are given or the URL is not one."""
    if endpoint is None and not data_files:
        return config
    if endpoint is not None and data_files:
        raise click.BadParameter("give either --endpoint or --data, not both")
    update: dict[str, Any] = {"endpoint": endpoint, "data": [str(path) for path in data_files]}
    if not data_files:
        update["store_directory"] = None
    try:
        sparql = type(config.sparql).model_validate({**config.sparql.model_dump(), **update})
    except ValueError as exc:
        hint = "--endpoint" if endpoint is not None else "--data"
        raise click.BadParameter(_first_error(exc), param_hint=hint) from None
    return config.model_copy(update={"sparql": sparql})


def _first_error(exc: ValueError) -> str:
    """The message of a validation error, without pydantic's decorations (its last line is
    a link to pydantic's documentation, not the reason)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        found = errors()
        if found:
            return str(found[0].get("msg", exc)).removeprefix("Value error, ")
    return str(exc).splitlines()[0].strip()


def saved_run_arguments(function: Callable[..., Any]) -> Callable[..., Any]:
    """``RESULTS`` (a run's output directory or results file) and ``-c/--config``."""
    function = config_option(
        "YAML config file (its aggregation section applies instead of the run's)."
    )(function)
    return click.argument("results", type=click.Path(path_type=Path))(function)


def _thresholds(
    ctx: click.Context, param: click.Parameter, values: Sequence[str]
) -> list[Threshold]:
    if any(value in ctx.help_option_names for value in values):  # --fail-under --help
        click.echo(ctx.get_help(), color=ctx.color)
        ctx.exit()
    thresholds = []
    for value in values:
        try:
            thresholds.append(parse_threshold(value, upper=param.name == "fail_over"))
        except ValueError as exc:
            # "--fail-under steps_score=50%: the threshold '50%' is not a number (did you ...)"
            metric = value.partition("=")[0].strip()
            reason = str(exc).removeprefix(f"{metric}: ") if metric else str(exc)
            option = f"--{(param.name or '').replace('_', '-')}"
            raise click.BadParameter(
                reason + _percentage_hint(value),
                ctx=ctx,
                param=param,
                param_hint=f"{option} {value}",
            ) from None
    return thresholds


def _percentage_hint(text: str) -> str:
    """`` (did you mean steps_score=0.5?)`` for ``steps_score=50%``: VALUE is on the metric's
    own scale (0-1 or 0-100), never a percentage."""
    metric, _, value = text.partition("=")
    if not value.strip().endswith("%"):
        return ""
    try:
        number = float(value.strip()[:-1])
    except ValueError:
        return ""
    declared = declared_outputs().get(metric.strip())
    maximum = declared[0].maximum if declared is not None else None
    if maximum == 100:
        return f" (did you mean {metric.strip()}={number:g}?)"
    if maximum == 1:
        return f" (did you mean {metric.strip()}={number / 100:g}?)"
    return f" (VALUE is on {metric.strip()}'s own scale: no %)"


_GATE_HELP: dict[str, dict[str, str]] = {
    "fail_under": {
        "evaluate": "Exit 1 when the mean of METRIC over all questions is under VALUE, or when "
        "no question has a value of it (repeatable; for CI).",
        "compare": "Exit 1 when run B's mean of METRIC (over the questions both runs scored) is "
        "under VALUE, or METRIC got significantly worse than in run A, or no question has a "
        "value of it in both runs (repeatable; for CI).",
    },
    "fail_over": {
        "evaluate": "Exit 1 when the mean of METRIC is over VALUE (costs, tokens, seconds), or "
        "when no question has a value of it (repeatable).",
        "compare": "Exit 1 when run B's mean of METRIC is over VALUE (costs, tokens, seconds), "
        "or METRIC rose significantly from run A, or no question has a value of it in both runs "
        "(repeatable).",
    },
}


class _GateOption(click.Option):
    """``--fail-under``/``--fail-over``, whose help says what the gate means on the command
    it is given to (evaluate's run mean, or compare's run B against run A)."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        helps = _GATE_HELP[self.name or ""]
        self.help = helps.get(ctx.info_name or "", helps["evaluate"])
        return super().get_help_record(ctx)


def gate_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """``--fail-under`` and ``--fail-over``, each a list of thresholds."""
    for name in ("fail_over", "fail_under"):
        function = click.option(
            f"--{name.replace('_', '-')}",
            name,
            cls=_GateOption,
            multiple=True,
            metavar="METRIC=VALUE",
            callback=_thresholds,
            help=_GATE_HELP[name]["evaluate"],
        )(function)
    return function


def numeric_outputs(config: EvaluationConfig) -> set[str]:
    """The numeric keys the configured metrics (custom evaluations included) write: the
    metrics a gate may name."""
    return {
        name
        for name, (spec, _) in declared_outputs(configured_metrics(config)).items()
        if spec.aggregation is Aggregation.NUMERIC
    }
