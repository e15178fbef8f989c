"""``graphrag-eval validate``: check a reference, responses and config without calling any
model (docs/inputs.md)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from graphrag_eval.cli.batch import with_batch
from graphrag_eval.cli.console import stdout
from graphrag_eval.cli.errors import EXIT_BAD_INPUT, exit_on_failures
from graphrag_eval.cli.options import (
    config_option,
    debug_option,
    input_file_arguments,
    max_expanded_size_option,
    responses_format_option,
    store_options,
    with_store,
)
from graphrag_eval.config import EvaluationConfig
from graphrag_eval.evaluation.planning import check_selection
from graphrag_eval.evaluation.runner import (
    evaluate,
    prepare_reference,
    run_sync,
)
from graphrag_eval.formatting import visible_text
from graphrag_eval.graph.drift import reference_query
from graphrag_eval.graph.execution import GraphStore
from graphrag_eval.graph.refresh import check_reference_queries, sparql_steps
from graphrag_eval.graph.stores import open_store
from graphrag_eval.inputs import (
    Diagnostics,
    Notice,
    ReferenceQuestion,
    ResponseSet,
    check_evaluable,
)
from graphrag_eval.inputs.responses import load_responses
from graphrag_eval.inputs.traces import Reading
from graphrag_eval.metrics.loading import load_config
from graphrag_eval.metrics.registry import metrics_for
from graphrag_eval.report.console import plural, print_notices
from graphrag_eval.results.run import EvaluationRun
from graphrag_eval.steps.config_rules import config_rules
from graphrag_eval.steps.rule_table import rules_in_use

__all__ = ["validate"]


@click.command("validate")
@debug_option
@input_file_arguments("reference", "responses")
@config_option("YAML config file to check too.")
@store_options
@max_expanded_size_option
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 2 when the responses have any problem, not only the reference.",
)
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="List every problem found (by default the first 10, then how many more).",
)
@responses_format_option
def validate(
    reference: Path,
    responses: Path,
    config_path: Path | None,
    endpoint: str | None,
    data_files: tuple[Path, ...],
    strict: bool,
    show_all: bool,
    responses_format: str,
) -> None:
    """Check the REFERENCE dataset, the RESPONSES and the config without calling any model.

    Exits 2 with a one-line message when the reference or config cannot be used, or when the
    run would evaluate nothing; every problem evaluate would report from the inputs alone is
    counted and the first ones listed, every one with --all (outputs that cannot be read as
    the reference expects, a bad k, ...); with --strict they also exit 2. No judge or
    embedding model is called. With a store (--endpoint, --data or the config's sparql:
    section) each reference query is executed once and the ones that fail or give no rows
    are reported too; a store that becomes unusable exits 3.

    \b
    Example:
      graphrag-eval validate reference.yaml responses.jsonl -c config.yaml
    """
    config = with_batch(with_store(load_config(config_path), endpoint, data_files), False)
    check_selection(config)
    diagnostics = Diagnostics()
    questions = prepare_reference(reference, diagnostics, config.steps.rules.keys())
    response_set = load_responses(responses, reading=Reading(responses_format, config.traces))
    check_evaluable(questions, response_set)
    # A data file that does not parse stops here, before any work, in one line.
    store = open_store(config.sparql) if config.sparql.configured else None
    # The same code as evaluate finds the same problems: the run's deterministic part.
    run = run_sync(lambda: evaluate(questions, response_set, _without_models(config)))
    diagnostics.extend(run.diagnostics.notices)
    diagnostics.extend(_metric_failures(run, response_set.source, diagnostics.notices))
    console = stdout()
    _print_counts(reference, questions, responses, response_set)
    if config_path is not None:
        console.print(f"{config_path}: ok")
    unusable = None
    if store is not None:
        notices, unusable = _check_store(reference, questions, store)
        diagnostics.extend(notices)
    _print_rules(questions, config)
    print_notices(
        console, diagnostics.notices, show_all=show_all, see_all="list them all with --all"
    )
    response_problems = [n for n in diagnostics.notices if n.kind != "unused_field"]
    if strict and response_problems:
        raise click.exceptions.Exit(EXIT_BAD_INPUT)
    if not diagnostics.notices:
        console.print("no problems found")
    if unusable is not None:
        exit_on_failures([], unusable)


def _check_store(
    reference: Path, questions: Sequence[ReferenceQuestion], store: GraphStore
) -> tuple[list[Notice], str | None]:
    """Each reference query executed once against ``store`` (closed after): a notice for each
    one that fails or gives no rows, and the line saying the store became unusable (or
    ``None``)."""

    async def check() -> list[Notice]:
        try:
            return await check_reference_queries(questions, store, str(reference))
        finally:
            await store.aclose()

    notices = run_sync(check)
    steps = sum(
        1
        for question in questions
        for *_, step in sparql_steps(question)
        if reference_query(step) is not None
    )
    stdout().print(
        f"{reference}: {plural(steps, 'reference query', 'reference queries')} executed "
        f"against {store.identity.label}: {plural(len(notices), 'problem')}",
        markup=False,
    )
    unusable = store.unusable
    if unusable is not None:
        unusable = (
            f"validate incomplete: the SPARQL store {store.identity.label} became unusable "
            f"({unusable}); the reference queries executed after that are reported as failing"
        )
    return notices, unusable


def _print_counts(
    reference: Path,
    questions: Sequence[ReferenceQuestion],
    responses: Path,
    response_set: ResponseSet,
) -> None:
    templates = len({question.template_id for question in questions})
    known = {question.id for question in questions}
    matched = sum(1 for qid in response_set.responses if qid in known)
    console = stdout()
    console.print(
        f"{reference}: {plural(len(questions), 'question')} in {plural(templates, 'template')}"
    )
    console.print(
        f"{responses}: {plural(len(response_set.responses), 'response')}, {matched:,} for "
        "reference questions"
    )


def _print_rules(questions: Sequence[ReferenceQuestion], config: EvaluationConfig) -> None:
    """Which rule scores each reference step name, and a warning for the names only the
    identical-output fallback scores (docs/steps.md)."""
    steps = [
        step for question in questions for group in question.reference_steps or () for step in group
    ]
    uses = rules_in_use(steps, config_rules(config.steps.rules))
    if not uses:
        return
    console = stdout()
    console.print("which rule scores each reference step:", markup=False)
    headers = ("step name", "rule", "reference steps")
    rows = [headers, *((use.name, use.rule, f"{use.count:,}") for use in uses)]
    widths = [max(len(visible_text(row[i])) for row in rows) for i in range(3)]
    for row in rows:
        cells = [visible_text(cell).ljust(width) for cell, width in zip(row, widths, strict=True)]
        console.print("  ".join(cells).rstrip(), markup=False, highlight=False)
    scored_otherwise = {use.name for use in uses if not use.fallback}
    for name in dict.fromkeys(use.name for use in uses if use.fallback):
        if name not in scored_otherwise:
            console.print(
                f"warning: {visible_text(name)} steps are scored only by identical outputs "
                "(no rule for this name): add one under steps.rules in the config",
                markup=False,
                highlight=False,
            )


def _without_models(config: EvaluationConfig) -> EvaluationConfig:
    """``config`` running only the metrics that need no model (steps, retrieval contexts,
    usage), with no model configured: a run that reads every input and calls nothing."""
    names = [
        metric.name
        for metric in metrics_for(config)
        if not (metric.needs or metric.uses_llm or metric.depends_on or metric.always)
    ]
    llm = config.llm.model_copy(update={"generation": None, "embedding": None})
    # No store either: validate executes the reference queries itself (_check_store), once.
    sparql = type(config.sparql)()
    return config.model_copy(
        update={"llm": llm, "sparql": sparql, "metrics": names, "custom_evaluations": []}
    )


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
        if isinstance(steps, list):
            places += [(f"actual_steps[{i}]", s) for i, s in enumerate(steps)]
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
