"""The options of ``graphrag-eval evaluate`` as click parses them, and the options of the
judge that only ``evaluate`` has (``--repeats``; docs/llm.md, "Repeats and judge noise")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import click

from graphrag_eval.cli.batch import with_batch
from graphrag_eval.cli.options import Decorator, with_store
from graphrag_eval.comparison.gates import Threshold
from graphrag_eval.config import EvaluationConfig
from graphrag_eval.config.llm import MAX_REPEATS
from graphrag_eval.metrics.loading import load_config
from graphrag_eval.results.selection import NO_FILTER, QuestionFilter
from graphrag_eval.results.write_run import ResultsFormat

__all__ = ["EvaluateOptions", "repeats_notice", "repeats_option", "with_repeats"]


@dataclass(frozen=True, slots=True)
class EvaluateOptions:
    """The arguments and options of ``evaluate``, as click parses them."""

    reference: Path
    responses: Path
    config_path: Path | None
    out_dir: Path
    results_format: str
    write_yaml: bool
    html_report: bool
    fail_under: Sequence[Threshold]
    fail_over: Sequence[Threshold]
    progress: bool | None
    quiet: bool
    resume: bool
    overwrite: bool
    no_cache: bool
    dry_run: bool
    max_cost_usd: float | None
    endpoint: str | None = None
    data_files: Sequence[Path] = ()
    selection: QuestionFilter = NO_FILTER
    summary_md: Path | None = None
    batch: bool = False
    repeats: int | None = None
    responses_format: str = "auto"

    def config(self) -> EvaluationConfig:
        """The configuration, with what the command line overrides: the store (``--endpoint``,
        ``--data``), ``--batch`` (a judge without a batch API: exit 2 here; a resumed run whose
        ``batches.json`` lists batches stays in batch mode), ``--repeats``."""
        config = with_store(load_config(self.config_path), self.endpoint, self.data_files)
        resumed = self.out_dir if self.resume else None  # its batches.json: batch mode kept
        return with_repeats(with_batch(config, self.batch, resumed), self.repeats)

    @property
    def gates(self) -> list[Threshold]:
        return [*self.fail_under, *self.fail_over]

    @property
    def formats(self) -> list[ResultsFormat]:
        """The results files to write besides ``results.jsonl``."""
        formats: list[ResultsFormat] = []
        if self.write_yaml or self.results_format == "yaml":
            formats.append("yaml")
        if self.results_format == "json":
            formats.append("json")
        return formats


repeats_option: Decorator = click.option(
    "--repeats",
    type=click.IntRange(1, MAX_REPEATS),
    metavar="N",
    help=f"Judge every LLM-judged metric N times (1 to {MAX_REPEATS}; overrides llm.repeats): "
    "the mean, the per-repeat values and their spread.",
)


def with_repeats(config: EvaluationConfig, repeats: int | None) -> EvaluationConfig:
    """``config`` with ``llm.repeats`` set to ``--repeats``, when given."""
    if repeats is None or repeats == config.llm.repeats:
        return config
    return config.model_copy(update={"llm": config.llm.model_copy(update={"repeats": repeats})})


def repeats_notice(config: EvaluationConfig) -> str | None:
    """What a run with repeats says first (docs/llm.md, "Repeats and judge noise"): at
    temperature 0, repeats measure only the provider's nondeterminism."""
    generation = config.llm.generation
    if config.llm.repeats < 2 or generation is None:
        return None
    line = f"note: every LLM-judged metric is judged {config.llm.repeats} times (llm.repeats)"
    if generation.temperature == 0:
        line += (
            "; the judge's temperature is 0, so the repeats measure only the provider's "
            "nondeterminism, not the judge's spread (set llm.generation.temperature)"
        )
    return line
