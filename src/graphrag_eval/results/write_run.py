"""The output directory of an evaluation run: the names of its files, defined once, and the
writing of its results, aggregates and run summary (``run.yaml``), each file replaced
atomically so that a reader never sees half of one (docs/outputs.md).

``graphrag-eval evaluate`` writes its directory with :func:`write_run`; a library user who
ran :func:`graphrag_eval.run_evaluation` gets the same files from it::

    run = await evaluate(reference, responses, config)
    summary = RunSummary.of(run, reference="reference.yaml", responses="responses.jsonl")
    write_run("out", run, summary)

Checkpoints (``results.jsonl`` appended item by item, ``checkpoint.json``) are written by
:mod:`graphrag_eval.results.checkpoint`; the HTML report by :mod:`graphrag_eval.report.html`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from graphrag_eval.config import EvaluationConfig
from graphrag_eval.errors import InputError
from graphrag_eval.files.documents import dump_yaml, write_text_atomic
from graphrag_eval.inputs import Notice, count_kinds
from graphrag_eval.results.aggregates import Aggregates
from graphrag_eval.results.aggregation import aggregate
from graphrag_eval.version import __version__

if TYPE_CHECKING:
    from graphrag_eval.evaluation.runner import EvaluationRun
    from graphrag_eval.llm.engine import LLMEngine

__all__ = [
    "AGGREGATES_YAML",
    "CHECKPOINT_JSON",
    "REPORT_HTML",
    "RESULTS_JSON",
    "RESULTS_JSONL",
    "RESULTS_YAML",
    "RESULT_FILE_NAMES",
    "RUN_FILE_NAMES",
    "RUN_YAML",
    "LLMSummary",
    "ResultsFormat",
    "RunSummary",
    "WrittenRun",
    "claim_out_dir",
    "earlier_run_files",
    "results_jsonl_text",
    "write_results",
    "write_run",
]

RESULTS_JSONL = "results.jsonl"
"""The per-question results, one JSON document a line; always written (it is the checkpoint)."""
RESULTS_JSON = "results.json"
RESULTS_YAML = "results.yaml"
AGGREGATES_YAML = "aggregates.yaml"
RUN_YAML = "run.yaml"
"""The run summary: settings, counts, judge calls and cost, every input problem."""
REPORT_HTML = "report.html"
CHECKPOINT_JSON = "checkpoint.json"
"""The fingerprint of a run's inputs and settings, which ``--resume`` checks."""
RESULT_FILE_NAMES = (RESULTS_JSONL, RESULTS_JSON, RESULTS_YAML, "results.yml")
"""The results files a saved run is read from, in order of preference."""
RUN_FILE_NAMES = (*RESULT_FILE_NAMES, AGGREGATES_YAML, RUN_YAML, CHECKPOINT_JSON)
"""The files that show a directory holds a run (an interrupted one too)."""

ResultsFormat = Literal["jsonl", "json", "yaml"]


@dataclass(frozen=True, slots=True)
class LLMSummary:
    """The ``llm`` section of ``run.yaml``: the models, the cache and what the calls cost."""

    judge_model: str | None
    embedding_model: str | None
    cache: str
    """The cache file, or ``off``."""
    max_cost_usd: float | None
    calls: Mapping[str, Any]
    """The engine's call statistics (calls, cache hits, retries, tokens, cost, by metric)."""

    @classmethod
    def of(cls, engine: LLMEngine) -> LLMSummary:
        """The summary of what ``engine`` did in a run."""
        return cls(
            judge_model=engine.generation.model if engine.generation else None,
            embedding_model=engine.embedding.model if engine.embedding else None,
            cache=str(engine.cache_path) if engine.cache_path else "off",
            max_cost_usd=engine.max_cost_usd,
            calls=engine.stats.as_dict(),
        )

    def as_dict(self) -> dict[str, Any]:
        """The section as written to ``run.yaml``."""
        return {
            "judge_model": self.judge_model,
            "embedding_model": self.embedding_model,
            "cache": self.cache,
            "max_cost_usd": self.max_cost_usd,
            **self.calls,
        }


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What ``run.yaml`` says of a run (docs/outputs.md)."""

    reference: str
    responses: str
    config: EvaluationConfig
    questions: int
    success_samples: int
    error_samples: int
    missing_responses: int
    config_file: str | None = None
    elapsed_s: float = 0.0
    resumed: tuple[int, int] | None = None
    """Items kept from the interrupted run and items evaluated again, when it was resumed."""
    llm: LLMSummary | None = None
    notices: Sequence[Notice] = field(default_factory=list)
    """Every input problem the run found."""

    @classmethod
    def of(
        cls,
        run: EvaluationRun,
        *,
        reference: str | Path,
        responses: str | Path,
        config_file: str | Path | None = None,
        elapsed_s: float = 0.0,
        notices: Sequence[Notice] | None = None,
        engine: LLMEngine | None = None,
        resumed: tuple[int, int] | None = None,
    ) -> RunSummary:
        """The summary of ``run``; ``notices`` default to the run's own diagnostics (pass them
        when the reference's were collected apart), ``resumed`` is (kept, evaluated again)."""
        results = run.items
        return cls(
            reference=str(reference),
            responses=str(responses),
            config=run.config,
            questions=len(results),
            success_samples=sum(1 for r in results if r.status == "success"),
            error_samples=sum(1 for r in results if r.status == "error"),
            missing_responses=sum(1 for r in results if r.missing_response),
            config_file=str(config_file) if config_file else None,
            elapsed_s=elapsed_s,
            resumed=resumed if resumed is not None and any(resumed) else None,
            llm=LLMSummary.of(engine) if engine is not None else None,
            notices=list(run.diagnostics.notices if notices is None else notices),
        )

    def as_dict(self) -> dict[str, Any]:
        """The summary as written to ``run.yaml`` (and shown by the report's settings)."""
        return {
            "graphrag_eval_version": __version__,
            "reference": self.reference,
            "responses": self.responses,
            "config_file": self.config_file,
            "config": self.config.public_dump(),
            "questions": self.questions,
            "success_samples": self.success_samples,
            "error_samples": self.error_samples,
            "missing_responses": self.missing_responses,
            "elapsed_sec": round(self.elapsed_s, 3),
            "resumed": (
                {"kept": self.resumed[0], "evaluated_again": self.resumed[1]}
                if self.resumed is not None
                else None
            ),
            "llm": self.llm.as_dict() if self.llm is not None else None,
            "input_problems": count_kinds(self.notices),
            "notices": [str(notice) for notice in self.notices],
        }


def earlier_run_files(out_dir: str | Path) -> list[str]:
    """The files of a run (:data:`RUN_FILE_NAMES`) that ``out_dir`` already holds, by name:
    a new run there would replace them. Only regular files count: a link or a pipe of such a
    name is no run's (it was planted), and a run replaces it without following it."""
    out_dir = Path(out_dir)
    return [
        name
        for name in RUN_FILE_NAMES
        if (out_dir / name).is_file() and not (out_dir / name).is_symlink()
    ]


def claim_out_dir(out_dir: str | Path, *, overwrite: bool = False) -> None:
    """Make ``out_dir`` ready for a new run: :class:`InputError` when it holds the results of
    an earlier run (see :func:`earlier_run_files`), unless ``overwrite``, which removes them
    first (its report too), so that none is left beside the new run's (a ``results.json`` it
    does not write, a report it does not render). A link is removed itself, never followed."""
    out_dir = Path(out_dir)
    if not overwrite:
        found = earlier_run_files(out_dir)
        if found:
            raise InputError(
                f"holds the results of an earlier run ({', '.join(found)}); add --overwrite to "
                "replace them, --resume to continue that run, or give another --out-dir",
                file=str(out_dir),
            )
        return
    for name in (*RUN_FILE_NAMES, REPORT_HTML):
        path = out_dir / name
        if path.is_symlink() or path.is_file():
            path.unlink()


def results_jsonl_text(results: Iterable[Mapping[str, Any]]) -> str:
    """``results`` as the text of ``results.jsonl``."""
    return "".join(json.dumps(result, ensure_ascii=False) + "\n" for result in results)


def write_results(
    out_dir: str | Path, results: Sequence[Mapping[str, Any]], formats: Iterable[ResultsFormat] = ()
) -> None:
    """Write ``results.jsonl`` and, for ``json`` or ``yaml`` in ``formats``, ``results.json``
    or ``results.yaml`` too."""
    out_dir = Path(out_dir)
    write_text_atomic(out_dir / RESULTS_JSONL, results_jsonl_text(results))
    if "yaml" in formats:
        write_text_atomic(out_dir / RESULTS_YAML, dump_yaml(list(results)))
    if "json" in formats:
        text = json.dumps(list(results), ensure_ascii=False, indent=1) + "\n"
        write_text_atomic(out_dir / RESULTS_JSON, text)


@dataclass(frozen=True, slots=True)
class WrittenRun:
    """What :func:`write_run` wrote besides the results."""

    aggregates: Aggregates
    summary: RunSummary


def write_run(
    out_dir: str | Path,
    run: EvaluationRun,
    summary: RunSummary,
    formats: Iterable[ResultsFormat] = (),
    *,
    started_s: float | None = None,
) -> WrittenRun:
    """Write a finished run into ``out_dir`` (created when missing): its results (see
    :func:`write_results`), ``aggregates.yaml`` and ``run.yaml``.

    ``started_s`` is the :func:`time.perf_counter` reading at the start of the run: given,
    the summary's elapsed time is measured up to the writing of ``run.yaml``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_results(out_dir, run.results, formats)
    # From the typed run: it is flattened for writing only, never read back.
    aggregates = aggregate(run.run_result, run.config)
    write_text_atomic(out_dir / AGGREGATES_YAML, dump_yaml(aggregates.to_dict()))
    if started_s is not None:
        summary = replace(summary, elapsed_s=time.perf_counter() - started_s)
    write_text_atomic(out_dir / RUN_YAML, dump_yaml(summary.as_dict()))
    return WrittenRun(aggregates, summary)
