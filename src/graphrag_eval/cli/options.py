"""Options that several commands share: ``--debug``, ``-c/--config``, ``--no-cache``,
``--max-cost`` and the CI gates ``--fail-under``/``--fail-over`` (docs/report.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from graphrag_eval.bounded import EXPANDED_SIZE_ENV, max_expanded_size, parse_size
from graphrag_eval.config import EvaluationConfig
from graphrag_eval.gating import Threshold, parse_threshold
from graphrag_eval.metrics.base import Aggregation, configured_metrics, declared_outputs

__all__ = [
    "CONTEXT_SETTINGS",
    "Decorator",
    "config_option",
    "debug_option",
    "gate_options",
    "input_file_arguments",
    "max_cost_option",
    "max_expanded_size_option",
    "no_cache_option",
    "numeric_outputs",
    "output_file_option",
    "saved_run_arguments",
]

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

# --debug is read by main() from the arguments; accept it after the subcommand too.
debug_option: Decorator = click.option(
    "--debug", is_flag=True, expose_value=False, help="Show the traceback of an error."
)

no_cache_option: Decorator = click.option(
    "--no-cache", is_flag=True, help="Neither read nor write the judge call cache."
)

max_cost_option: Decorator = click.option(
    "--max-cost",
    "max_cost_usd",
    type=click.FloatRange(min=0, min_open=True),
    metavar="USD",
    help="Start no new judge call once this many dollars are spent in the run (overrides "
    "llm.max_cost_usd).",
)


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
    return click.option(
        "-c",
        "--config",
        "config_path",
        type=click.Path(dir_okay=False, path_type=Path),
        help=help_text,
    )


def output_file_option(help_text: str) -> Decorator:
    """``-o/--output``, a file to write, with the command's own help."""
    return click.option(
        "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help=help_text
    )


def input_file_arguments(*names: str) -> Decorator:
    """The named arguments, each an input file (``reference``, ``responses``)."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        for name in reversed(names):
            path = click.Path(dir_okay=False, path_type=Path)
            function = click.argument(name, type=path)(function)
        return function

    return decorate


def saved_run_arguments(function: Callable[..., Any]) -> Callable[..., Any]:
    """``RESULTS`` (a run's output directory or results file) and ``-c/--config``."""
    function = config_option(
        "YAML config file (its aggregation section applies instead of the run's)."
    )(function)
    return click.argument("results", type=click.Path(path_type=Path))(function)


def _thresholds(
    ctx: click.Context, param: click.Parameter, values: Sequence[str]
) -> list[Threshold]:
    try:
        return [parse_threshold(value, upper=param.name == "fail_over") for value in values]
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def gate_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """``--fail-under`` and ``--fail-over``, each a list of thresholds."""
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


def numeric_outputs(config: EvaluationConfig) -> set[str]:
    """The numeric keys the configured metrics (custom evaluations included) write: the
    metrics a gate may name."""
    return {
        name
        for name, (spec, _) in declared_outputs(configured_metrics(config)).items()
        if spec.aggregation is Aggregation.NUMERIC
    }
