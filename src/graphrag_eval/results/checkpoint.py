"""Checkpoints of ``graphrag-eval evaluate``: what a run writes so that ``--resume`` can
continue it after a crash, ``kill -9`` or Ctrl-C and lose nothing.

Each finished item is appended to ``results.jsonl`` (and flushed) as soon as it is final;
``checkpoint.json`` holds the fingerprint of the run's inputs and scoring settings. A resumed
run checks the fingerprint, keeps every complete item already written (a line cut short by
the crash is dropped), and evaluates the rest: the items not written yet, and those whose
LLM-judged metrics failed because the judge or embedding endpoint gave no reply (it could not
be reached, refused the request or kept failing) or the cost limit stopped the call (see
:func:`endpoint_cause`), whose successful calls then come from the cache. A failure the same
call would repeat (a malformed reply, a blank answer, a prompt over the limit) or that had
nothing to do with the judge is kept as it is.

The problems an item's evaluation found (an actual step output that could not be read) are
recorded on the item itself (``output_error``), so a kept item's notices are read back from it
and the resumed run counts the same input problems as an uninterrupted one (docs/llm.md,
"Resume").

A library user gets the same checkpoints from :func:`open_run`, :func:`start_checkpoint`
and :func:`evaluate_checkpointed`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphrag_eval.config import EvaluationConfig
from graphrag_eval.errors import InputError
from graphrag_eval.files.documents import (
    BrokenLine,
    iter_jsonl,
    open_for_append,
    write_text_atomic,
)
from graphrag_eval.inputs import (
    RESPONSES_LABEL,
    Notice,
    ReferenceQuestion,
    unreadable_output_notice,
)
from graphrag_eval.metrics.base import Failed, Metric, Scored
from graphrag_eval.metrics.failure_kinds import kind_of_message
from graphrag_eval.metrics.registry import metrics_for
from graphrag_eval.results.from_records import read_record
from graphrag_eval.results.model import QuestionResult, ResultLayout
from graphrag_eval.results.results_log import ResultsLog
from graphrag_eval.results.write_run import CHECKPOINT_JSON, RESULTS_JSONL, results_jsonl_text
from graphrag_eval.version import __version__

if TYPE_CHECKING:
    pass

__all__ = [
    "CHECKPOINT_JSON",
    "REDO_CAUSES",
    "ResultsLog",
    "Resumed",
    "RunCheckpoint",
    "endpoint_cause",
    "fingerprint",
    "item_notices",
    "open_run",
    "resume",
    "start_checkpoint",
    "write_checkpoint",
]


def fingerprint(
    reference: Path,
    responses: Path,
    config: EvaluationConfig,
    graph: Mapping[str, Any] | None = None,
    selection: Mapping[str, Any] | None = None,
) -> str:
    """SHA-256 over the input files' bytes and the settings that can change a score, and the
    identity of the graph SPARQL steps are executed against (``graph``: its data files'
    hashes and content fingerprint, or its endpoint), when there is one, and the questions
    evaluated (``selection``: the ``--question``/``--template`` filter), when restricted."""
    digest = hashlib.sha256()
    for path in (reference, responses):
        with path.open("rb") as stream:
            for chunk in iter(lambda: stream.read(1 << 20), b""):
                digest.update(chunk)
        digest.update(b"\0")
    # The version too: built-in prompts and rules change between releases.
    scoring: dict[str, Any] = {"version": __version__, "config": config.scoring_fingerprint()}
    if graph is not None:
        scoring["graph"] = {key: value for key, value in graph.items() if key != "label"}
    if selection is not None:
        scoring["filter"] = dict(selection)
    settings = json.dumps(
        scoring,
        sort_keys=True,
        ensure_ascii=False,
    )
    digest.update(settings.encode("utf-8"))
    return digest.hexdigest()


def write_checkpoint(
    out_dir: Path, run_fingerprint: str, selection: Mapping[str, Any] | None = None
) -> None:
    """Record the fingerprint of the run in ``out_dir`` (``checkpoint.json``), and its
    ``--question``/``--template`` filter when it has one."""
    record: dict[str, Any] = {"graphrag_eval_version": __version__, "fingerprint": run_fingerprint}
    if selection is not None:
        record["filter"] = dict(selection)
    text = json.dumps(record, indent=2)
    write_text_atomic(out_dir / CHECKPOINT_JSON, text + "\n")


@dataclass(slots=True)
class Resumed:
    """What a resumed run starts from."""

    kept: dict[str, dict[str, Any]]
    """Complete results already written, by question id."""
    redo: int
    """Results written but evaluated again (an LLM-judged metric failed because its endpoint
    gave no reply or the cost limit stopped it: see :func:`endpoint_cause`)."""
    dropped_lines: int
    """Lines that could not be read (cut short by the crash)."""
    notices: list[Notice] = field(default_factory=list)
    """What the evaluation of the kept items found (see :func:`item_notices`)."""
    redo_causes: dict[str, int] = field(default_factory=dict)
    """The items evaluated again by cause (a key of :data:`REDO_CAUSES`), adding up to
    ``redo``."""


REDO_CAUSES: dict[str, str] = {
    "unreachable": "an endpoint could not be reached",
    "refused": "an endpoint refused the request",
    "failed": "an endpoint kept failing",
    "budget": "the cost limit stopped a call",
}
"""Why an item is evaluated again on ``--resume``, by cause: what the summary says of it."""


def endpoint_cause(error: str) -> str | None:
    """Why a judged metric's ``error`` came about, when its message says the judge or
    embedding endpoint gave no reply or the cost limit stopped the call (a key of
    :data:`REDO_CAUSES`); ``None`` for a failure that calling again would repeat (a malformed
    or truncated reply, a blank answer, a prompt over the limit) or that did not come from a
    call. Read only for a record saved before failures had kinds."""
    kind = kind_of_message(error)
    return kind.value if kind is not None and kind.redo else None


def _redo_cause(result: QuestionResult, judged: set[str]) -> str | None:
    """The cause of the first failure of a judged metric of ``result`` that calling again may
    mend: its kind (:class:`~graphrag_eval.metrics.base.FailureKind`, ``redo``), or in a
    record saved before kinds were, its message (:func:`endpoint_cause`); else ``None``."""
    for key, outcome in result.outcomes.items():
        if key.metric not in judged:
            continue
        if isinstance(outcome, Failed):
            kind, errors = outcome.kind, [outcome.error]
        elif isinstance(outcome, Scored) and outcome.failures:
            kind, errors = outcome.failure_kind, list(outcome.failures.values())
        else:
            continue
        if kind is not None:
            if kind.redo:
                return kind.value
            continue
        for error in errors:
            cause = endpoint_cause(error) if isinstance(error, str) else None
            if cause is not None:
                return cause
    return None


def resume(
    out_dir: Path,
    results_name: str,
    run_fingerprint: str,
    questions: Sequence[ReferenceQuestion],
    metrics: Iterable[Metric],
    source: str = RESPONSES_LABEL,
    selection: Mapping[str, Any] | None = None,
) -> Resumed:
    """Read what an interrupted run in ``out_dir`` wrote. Raises :class:`InputError` when it
    was a run of other inputs or settings, or of another ``--question``/``--template`` filter
    (``selection``).

    ``source`` names the responses file in the notices of the kept items."""
    results_path = out_dir / results_name
    _refuse_special(results_path)
    if not results_path.exists():
        return Resumed({}, 0, 0)
    _check_fingerprint(out_dir / CHECKPOINT_JSON, run_fingerprint, selection)
    metrics = tuple(metrics)
    judged = {metric.name for metric in metrics if metric.uses_llm}
    layout = ResultLayout.of(metrics)
    known = {question.id for question in questions}
    kept: dict[str, dict[str, Any]] = {}
    causes: dict[str, str] = {}
    dropped = 0
    for _, value in iter_jsonl(results_path):
        if isinstance(value, BrokenLine) or not isinstance(value, dict):
            dropped += 1
            continue
        question_id = value.get("question_id")
        if question_id not in known:
            continue
        cause = _redo_cause(read_record(value, layout), judged)
        if cause is not None:
            causes[question_id] = cause
            kept.pop(question_id, None)
            continue
        causes.pop(question_id, None)
        kept[question_id] = value
    redo_causes = {
        name: count
        for name in REDO_CAUSES
        if (count := sum(1 for cause in causes.values() if cause == name))
    }
    # In reference order, as the items' own notices are when evaluated again.
    order = {question.id: index for index, question in enumerate(questions)}
    notices = [
        notice
        for question_id in sorted(kept, key=order.__getitem__)
        for notice in item_notices(kept[question_id], source)
    ]
    return Resumed(kept, len(causes), dropped, notices, redo_causes)


def _check_fingerprint(
    checkpoint: Path, run_fingerprint: str, selection: Mapping[str, Any] | None = None
) -> None:
    """Raise :class:`InputError` unless ``checkpoint`` records a run of ``run_fingerprint``
    (the ``--question``/``--template`` filter ``selection`` named when it is the one that
    differs)."""
    _refuse_special(checkpoint)
    try:
        recorded = json.loads(checkpoint.read_text(encoding="utf-8")).get("fingerprint")
    except (OSError, ValueError, AttributeError):
        recorded = None
    if recorded is None:
        raise InputError(
            "no checkpoint of an earlier run here; start afresh with --overwrite instead of "
            "--resume",
            file=str(checkpoint),
        )
    if recorded != run_fingerprint and _recorded_filter(checkpoint) != selection:
        was = describe_filter(_recorded_filter(checkpoint))
        raise InputError(
            f"the earlier run in this directory was evaluated with {was}: resume it with the "
            "same options, or start afresh with --overwrite instead of --resume",
            file=str(checkpoint),
        )
    if recorded != run_fingerprint:
        raise InputError(
            "the earlier run in this directory used other inputs, scoring settings or graph; "
            "use another --out-dir, or start afresh with --overwrite instead of --resume",
            file=str(checkpoint),
        )


def _recorded_filter(checkpoint: Path) -> Any:
    try:
        return json.loads(checkpoint.read_text(encoding="utf-8")).get("filter")
    except (OSError, ValueError, AttributeError):
        return None


def describe_filter(selection: Any) -> str:
    """The options of a recorded filter (``run.yaml``'s ``filter``): ``--question q1
    --template t2``, or ``no --question or --template``."""
    if not isinstance(selection, Mapping):
        return "no --question or --template"
    options = []
    for option, key in (("question", "questions"), ("template", "templates")):
        values = selection.get(key)
        options += [f"--{option} {value}" for value in values] if isinstance(values, list) else []
    return " ".join(options) or "no --question or --template"


def _refuse_special(path: Path) -> None:
    """A link or anything but a regular file (a named pipe would block the read) where a run
    writes its checkpoint was planted there: never read (docs/security.md)."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise InputError(
            "not a regular file (planted here?); start afresh with --overwrite instead of --resume",
            file=str(path),
        )


def item_notices(result: Mapping[str, Any], source: str = RESPONSES_LABEL) -> list[Notice]:
    """The notices the evaluation of one item raised, read back from its result: one
    ``unreadable_output`` per actual step with an ``output_error``."""
    steps = result.get("actual_steps")
    if not isinstance(steps, list):
        return []
    return [
        unreadable_output_notice(source, result.get("question_id"), index, step["output_error"])
        for index, step in enumerate(steps)
        if isinstance(step, Mapping) and isinstance(step.get("output_error"), str)
    ]


@dataclass(frozen=True, slots=True)
class RunCheckpoint:
    """Where a checkpointed run writes, and what it starts from."""

    out_dir: Path
    fingerprint: str
    """Of the run's input files and scoring settings (see :func:`fingerprint`)."""
    resumed: Resumed
    selection: Mapping[str, Any] | None = None
    """The run's ``--question``/``--template`` filter, when it has one."""


def open_run(
    out_dir: str | Path,
    reference: Path,
    responses: Path,
    config: EvaluationConfig,
    questions: Sequence[ReferenceQuestion],
    *,
    source: str = RESPONSES_LABEL,
    resume_run: bool = False,
    graph: Mapping[str, Any] | None = None,
    selection: Mapping[str, Any] | None = None,
) -> RunCheckpoint:
    """Create ``out_dir`` for a run of the files ``reference`` and ``responses`` (read as
    ``questions``); with ``resume_run``, continue the interrupted run it holds (see
    :func:`resume`; ``source`` names the responses in the kept items' notices; ``graph``: the
    identity of the run's SPARQL store, part of the fingerprint; ``selection``: the
    ``--question``/``--template`` filter, part of it too)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    run_fingerprint = fingerprint(reference, responses, config, graph, selection)
    metrics = metrics_for(config)
    resumed = (
        resume(out_dir, RESULTS_JSONL, run_fingerprint, questions, metrics, source, selection)
        if resume_run
        else Resumed({}, 0, 0)
    )
    return RunCheckpoint(out_dir, run_fingerprint, resumed, selection)


@contextmanager
def start_checkpoint(checkpoint: RunCheckpoint) -> Iterator[ResultsLog]:
    """Start writing the checkpoint: ``results.jsonl`` holds only the items kept from an
    earlier run and is opened for appending, and ``checkpoint.json`` records the run's
    fingerprint."""
    path = checkpoint.out_dir / RESULTS_JSONL
    kept = checkpoint.resumed.kept
    write_text_atomic(path, results_jsonl_text(kept.values()))
    write_checkpoint(checkpoint.out_dir, checkpoint.fingerprint, checkpoint.selection)
    # Appended through the file just written: a link planted there since is refused.
    with open_for_append(path, readable=True) as stream:
        yield ResultsLog(path, stream, kept, os.fstat(stream.fileno()).st_size)
