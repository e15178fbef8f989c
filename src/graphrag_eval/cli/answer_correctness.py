"""``answer-correctness``: the seed's command that judges the answers in a TSV file with an
LLM (docs/metrics.md)."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import click

from graphrag_eval.cli.commands import CONTEXT_SETTINGS
from graphrag_eval.cli.console import stdout
from graphrag_eval.cli.errors import exit_on_failures
from graphrag_eval.cli.incomplete import unexplained_failures
from graphrag_eval.cli.options import (
    Decorator,
    config_option,
    debug_option,
    max_cost_option,
    max_expanded_size_option,
    no_cache_option,
)
from graphrag_eval.cli.signals import deferred_interrupts
from graphrag_eval.cli.tsv import RefusedRow, StreamedRows, read_answer_rows, write_judged_rows
from graphrag_eval.config import EvaluationConfig, GenerationConfig
from graphrag_eval.evaluation.services import build_engine
from graphrag_eval.files.documents import remove_stale_temporaries
from graphrag_eval.llm.engine import LLMEngine
from graphrag_eval.metrics.answer_correctness import judge_correctness
from graphrag_eval.metrics.base import Failed, FailureKind, Outcome
from graphrag_eval.metrics.loading import load_config
from graphrag_eval.report.console import plural, print_llm_summary
from graphrag_eval.version import __version__

__all__ = ["answer_correctness_command"]

logger = logging.getLogger("graphrag_eval")


def _tsv_option(*names: str, help_text: str) -> Decorator:
    """A required TSV file option."""
    return click.option(
        *names, required=True, type=click.Path(dir_okay=False, path_type=Path), help=help_text
    )


@click.command("answer-correctness", context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, prog_name="answer-correctness")
@debug_option
@_tsv_option(
    "-i",
    "--input",
    "input_path",
    help_text="TSV file with the columns Question, Reference answer and Actual answer.",
)
@_tsv_option(
    "-o",
    "--output",
    "output_path",
    help_text="TSV file to write: the input columns and the answer correctness keys.",
)
@config_option("YAML config (llm section, answer_correctness.prompt).")
@max_expanded_size_option
@no_cache_option
@max_cost_option
def answer_correctness_command(
    input_path: Path,
    output_path: Path,
    config_path: Path | None,
    no_cache: bool,
    max_cost_usd: float | None,
) -> None:
    """Judge the correctness of the answers in a TSV file with an LLM.

    Each row is judged once (llm.max_concurrency rows at a time); each finished row is
    written to the output at once, and at the end the output has the rows in input order
    with answer_recall, answer_precision, answer_f1, the claim counts, the judge's reason
    and cost, or answer_eval_error. After Ctrl-C (or SIGTERM) it has the rows that
    finished, in input order. Without a config (or without
    llm.generation in it) the judge is OpenAI's gpt-4o-mini, with the key from
    OPENAI_API_KEY. A text cell that a spreadsheet would run as a formula (it starts with
    =, +, -, or @) is written with a ' in front. Exit code 3 when the judge was unusable,
    the cost limit stopped calls, or no answer could be judged (one line on stderr says what
    is missing).

    \b
    Example:
      OPENAI_API_KEY=... answer-correctness -i answers.tsv -o judged.tsv
    """
    config = _with_default_judge(load_config(config_path))
    rows = read_answer_rows(input_path)
    engine = build_engine(config, use_cache=False if no_cache else None, max_cost_usd=max_cost_usd)
    assert engine is not None  # the config names a judge
    finished: dict[int, Outcome] = {}
    remove_stale_temporaries(output_path.parent, output_path.name)  # a killed run's
    streamed = StreamedRows(output_path, rows)
    try:
        asyncio.run(_judge_all(engine, config, rows, finished, streamed))
    except KeyboardInterrupt:
        with deferred_interrupts():
            streamed.close()
            write_judged_rows(output_path, rows, [finished.get(i) for i in range(len(rows))])
        click.echo(
            f"interrupted: {len(finished):,} of {plural(len(rows), 'answer')} judged; "
            f"they are in {output_path}",
            err=True,
        )
        raise
    streamed.close()
    outcomes = [finished[index] for index in range(len(rows))]
    write_judged_rows(output_path, rows, outcomes)
    _summarise(engine, outcomes, output_path)


def _summarise(engine: LLMEngine, outcomes: list[Outcome], output_path: Path) -> None:
    """Print what was judged and the judge's summary; exit 3 (one line) when something is
    missing: the judge was unusable, the cost limit stopped calls, or nothing was judged."""
    failed = sum(1 for outcome in outcomes if isinstance(outcome, Failed))
    console = stdout()
    console.print(
        f"{plural(len(outcomes), 'answer')} judged ({failed:,} failed); results in {output_path}",
        markup=False,
    )
    print_llm_summary(console, engine.stats, engine.max_cost_usd)
    reasons = engine.incomplete_reasons()
    if outcomes and failed == len(outcomes):  # no answer judged: what failed them all says why
        errors = Counter(o.error for o in outcomes if isinstance(o, Failed))
        failing = {"answer_correctness": errors.most_common(1)[0][0]}
        reasons += [f"every answer failed: {e}" for _, e in unexplained_failures(failing, reasons)]
    if reasons:
        exit_on_failures(
            (),
            f"judging incomplete: {plural(failed, 'answer')} of {len(outcomes):,} not judged "
            f"({'; '.join(reasons)}); when that is fixed, run the command again (with the "
            "cache on, answers judged already are not judged again)",
        )


def _with_default_judge(config: EvaluationConfig) -> EvaluationConfig:
    """``config``, with OpenAI's default judge when it names none."""
    if config.llm.generation is not None:
        return config
    llm = config.llm.model_copy(update={"generation": GenerationConfig()})
    return config.model_copy(update={"llm": llm})


async def _judge_all(
    engine: LLMEngine,
    config: EvaluationConfig,
    rows: Sequence[dict[str, str]],
    finished: dict[int, Outcome],
    streamed: StreamedRows,
) -> None:
    """Judge the rows, at most ``llm.max_concurrency`` at a time: a row starts when one
    finishes, so the calls of rows already started (a re-ask) never queue behind the first
    calls of new rows. Each finished row goes into ``finished`` (by row number) and is
    written at once; the engine is closed at the end."""
    waiting = iter(range(len(rows)))  # shared: each worker takes the next row

    async def worker() -> None:
        for index in waiting:
            outcome = await _guarded(engine, config, rows[index])
            finished[index] = outcome
            streamed.add(rows[index], outcome)

    try:
        width = min(config.llm.max_concurrency, len(rows))
        await asyncio.gather(*(worker() for _ in range(width)))
    finally:
        await engine.aclose()


async def _guarded(engine: LLMEngine, config: EvaluationConfig, row: dict[str, str]) -> Outcome:
    """One row's judgement; an unexpected error (a bug) costs that row only."""
    if isinstance(row, RefusedRow):  # it could not be read: its error, not judged
        return Failed(row.problem, FailureKind.INPUT)
    question = row.get("Question") or ""
    reference = row.get("Reference answer") or ""
    actual = row.get("Actual answer") or ""
    try:
        return await judge_correctness(engine, config, question, reference, actual)
    except Exception as exc:
        logger.exception("could not judge the answer to %r", question[:80])
        return Failed(engine.redact(f"internal error: {exc!r}"), FailureKind.INTERNAL)
