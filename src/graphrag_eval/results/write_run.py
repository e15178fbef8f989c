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

import contextlib
import json
import sys
import time
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from graphrag_eval.config import EvaluationConfig
from graphrag_eval.errors import InputError
from graphrag_eval.files.documents import (
    JSON_TEXT_ERRORS,
    atomic_stream,
    dump_yaml,
    write_text_atomic,
)
from graphrag_eval.inputs import Notice, count_kinds
from graphrag_eval.results.aggregates import Aggregates
from graphrag_eval.results.aggregation import aggregate
from graphrag_eval.results.export import TABLE_FILE_NAMES
from graphrag_eval.results.fold import AggregateFold
from graphrag_eval.results.model import QuestionResult
from graphrag_eval.results.records_file import RecordsFile
from graphrag_eval.results.to_records import to_record
from graphrag_eval.version import __version__

if TYPE_CHECKING:
    from graphrag_eval.llm.engine import LLMEngine
    from graphrag_eval.results.run import EvaluationRun

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
    "Counts",
    "LLMSummary",
    "ResultsFormat",
    "ResultsStream",
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
_TABLES = tuple(TABLE_FILE_NAMES.values())  # results.csv, results.parquet (results/export.py)
RUN_FILE_NAMES = (*RESULT_FILE_NAMES, *_TABLES, AGGREGATES_YAML, RUN_YAML, CHECKPOINT_JSON)
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
    graph: Mapping[str, Any] | None = None
    """What SPARQL queries were executed against (``StoreIdentity.as_record()``), when a
    store was configured (docs/knowledge-graph.md, "The graph's identity")."""
    selection: Mapping[str, Any] | None = None  # its --question/--template filter (filter)

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
        counts: Counts | None = None,
        graph: Mapping[str, Any] | None = None,
    ) -> RunSummary:
        """The summary of ``run``; ``notices`` default to the run's own diagnostics (pass them
        when the reference's were collected apart), ``resumed`` is (kept, evaluated again),
        ``counts`` the questions counted as they came (a run that kept no result), ``graph``
        the identity of the store SPARQL queries were executed against."""
        if counts is None:
            counts = Counts()
            for result in run.items:
                counts.add(result)
        return cls(
            reference=str(reference),
            responses=str(responses),
            config=run.config,
            questions=counts.questions,
            success_samples=counts.success,
            error_samples=counts.error,
            missing_responses=counts.missing,
            config_file=str(config_file) if config_file else None,
            elapsed_s=elapsed_s,
            resumed=resumed if resumed is not None and any(resumed) else None,
            llm=LLMSummary.of(engine) if engine is not None else None,
            notices=list(run.diagnostics.notices if notices is None else notices),
            graph=graph,
        )

    def as_dict(self) -> dict[str, Any]:
        """The summary as written to ``run.yaml`` (and shown by the report's settings)."""
        summary: dict[str, Any] = {
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
        if self.graph is not None:
            summary["graph"] = dict(self.graph)
        if self.selection is not None:
            summary["filter"] = dict(self.selection)
        return summary


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
    return "".join(_JSONL_ENCODER.encode(result) + "\n" for result in results)


_JSONL_ENCODER = json.JSONEncoder(ensure_ascii=False)
"""What ``json.dumps(result, ensure_ascii=False)`` uses, made once."""


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


def _json_item(record: Mapping[str, Any]) -> str:
    """One result as ``results.json`` shows it: an item of a list indented by one."""
    return " " + json.dumps(record, ensure_ascii=False, indent=1).replace("\n", "\n ")


@dataclass(slots=True)
class Counts:
    """The questions of a run, as ``run.yaml`` counts them."""

    questions: int = 0
    success: int = 0
    error: int = 0
    missing: int = 0

    def add(self, result: QuestionResult) -> None:
        self.questions += 1
        self.success += result.status == "success"
        self.error += result.status == "error"
        self.missing += result.missing_response


class ResultsStream:
    """The results files of a run written as its results come, in reference order, without
    holding them: ``results.jsonl`` (each line as the checkpoint wrote it, read back by
    ``line_of``, else written here), ``results.yaml`` and ``results.json`` for ``formats``;
    the aggregates folded in (``fold``) and the questions counted. Each file is a temporary
    one that replaces its name when the ``with`` block ends, and is removed when it raises
    (an interrupted run leaves its checkpoint as it was): the same files, byte for byte, as
    :func:`write_results` writes from the whole list."""

    def __init__(
        self,
        out_dir: str | Path,
        formats: Iterable[ResultsFormat],
        fold: AggregateFold,
        line_of: Callable[[str], bytes | None] = lambda _: None,
    ) -> None:
        self.out_dir = Path(out_dir)
        self.formats = frozenset(formats)
        self.fold = fold
        self.counts = Counts()
        self.line_of = line_of
        self._stack = contextlib.ExitStack()
        self._streams: dict[str, IO[bytes]] = {}
        self._offsets = array("q")
        self._end = 0

    def __enter__(self) -> ResultsStream:
        names = [RESULTS_JSONL]
        names += [RESULTS_YAML] if "yaml" in self.formats else []
        names += [RESULTS_JSON] if "json" in self.formats else []
        for name in names:
            self._streams[name] = self._stack.enter_context(atomic_stream(self.out_dir / name))
        return self

    def __exit__(self, *exc_info: Any) -> None:
        try:
            if exc_info[0] is None and RESULTS_JSON in self._streams:
                self._write(RESULTS_JSON, "[]\n" if not self.counts.questions else "\n]\n")
        except BaseException:  # a full disk: every temporary file is removed all the same
            self._stack.__exit__(*sys.exc_info())
            raise
        self._stack.__exit__(*exc_info)

    def add(self, result: QuestionResult) -> None:
        """Write and fold in the next result (in reference order)."""
        question_id = result.question_id
        line = self.line_of(question_id) if isinstance(question_id, str) else None
        record = to_record(result) if line is None or len(self._streams) > 1 else None
        if line is None:
            line = results_jsonl_text([record or {}]).encode("utf-8", JSON_TEXT_ERRORS)
        self._streams[RESULTS_JSONL].write(line)
        self._offsets.append(self._end)
        self._end += len(line)
        if record is not None and RESULTS_YAML in self._streams:
            self._write(RESULTS_YAML, dump_yaml([record]))
        if record is not None and RESULTS_JSON in self._streams:
            self._write(
                RESULTS_JSON, (",\n" if self.counts.questions else "[\n") + _json_item(record)
            )
        self.fold.add(result)
        self.counts.add(result)

    def records(self) -> RecordsFile:
        """The records written, read back from ``results.jsonl`` one at a time (once the
        ``with`` block has ended)."""
        return RecordsFile(self.out_dir / RESULTS_JSONL, self._offsets, self._end)

    def _write(self, name: str, text: str) -> None:
        self._streams[name].write(text.encode("utf-8", JSON_TEXT_ERRORS))


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
    streamed: ResultsStream | None = None,
) -> WrittenRun:
    """Write a finished run into ``out_dir`` (created when missing): its results (see
    :func:`write_results`), ``aggregates.yaml`` and ``run.yaml``.

    ``started_s`` is the :func:`time.perf_counter` reading at the start of the run: given,
    the summary's elapsed time is measured up to the writing of ``run.yaml``. ``streamed``:
    the results were written as they came (a run that kept none), with their aggregates."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if streamed is not None:
        aggregates = streamed.fold.finish()
    else:
        write_results(out_dir, run.results, formats)
        # From the typed run: it is flattened for writing only, never read back.
        aggregates = aggregate(run.run_result, run.config)
    write_text_atomic(out_dir / AGGREGATES_YAML, dump_yaml(aggregates.to_dict()))
    if started_s is not None:
        summary = replace(summary, elapsed_s=time.perf_counter() - started_s)
    write_text_atomic(out_dir / RUN_YAML, dump_yaml(summary.as_dict()))
    return WrittenRun(aggregates, summary)
