"""Batch mode on the command line (``--batch``, ``llm.batch: true``): the option's effect on
the config, the batch ids checkpointed in the output directory for ``--resume``, the
provider's status on standard error while it works, and the summary's line (docs/llm.md,
batch mode)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from graphrag_eval.cli.console import stderr, stdout
from graphrag_eval.config import EvaluationConfig
from graphrag_eval.errors import ConfigError
from graphrag_eval.formatting import plural
from graphrag_eval.llm.batch.checkpoint import BATCHES_JSON, BatchCheckpoint
from graphrag_eval.llm.batch.client import batch_lane_of
from graphrag_eval.llm.batch.lane import BatchLane
from graphrag_eval.llm.batch.protocol import BatchStatus
from graphrag_eval.llm.batch.registry import batch_provider_name
from graphrag_eval.llm.engine import LLMEngine

__all__ = ["batch_summary", "print_batch_summary", "start_batches", "with_batch"]


def with_batch(
    config: EvaluationConfig, batch: bool, resumed: Path | None = None
) -> EvaluationConfig:
    """``config`` with ``llm.batch`` on when ``--batch`` is given, or when ``resumed`` (the
    output directory of ``--resume``) lists the batches of the interrupted run and the judge
    has a batch API (their requests were paid for: they are collected, not sent again); a
    :class:`~graphrag_eval.errors.ConfigError` naming the option when batch mode is asked
    for and the judge has no batch API (or there is no judge), before anything is sent."""
    if not batch and not config.llm.batch and resumed is not None:
        batch = _collects(config, resumed)
    if batch and not config.llm.batch:
        config = config.model_copy(update={"llm": config.llm.model_copy(update={"batch": True})})
    if config.llm.batch:
        batch_provider_name(config.llm)
    return config


def _collects(config: EvaluationConfig, out_dir: Path) -> bool:
    """Whether a resumed run in ``out_dir`` goes on in batch mode without ``--batch``: its
    interrupted run submitted batches (``batches.json`` lists some) and the judge has a
    batch API (else :func:`start_batches` warns that their requests are sent again)."""
    path = out_dir / BATCHES_JSON
    try:  # a regular file only: a FIFO put there would block the open
        with path.open("rb") if path.is_file() else contextlib.nullcontext(None) as stream:
            listed = stream is not None and b'"custom_ids"' in stream.read(64 * 1024)
    except OSError:
        return False
    if not listed:
        return False
    try:
        batch_provider_name(config.llm.model_copy(update={"batch": True}))
    except ConfigError:
        return False
    stderr().print(
        f"{path} lists the batches of the interrupted run: resuming in batch mode (--batch) "
        "to collect them instead of sending their requests again",
        markup=False,
    )
    return True


def start_batches(
    engine: LLMEngine | None, out_dir: Path, resume: bool, show: bool = True
) -> BatchLane | None:
    """Checkpoint the run's batches in ``out_dir`` (with ``resume``, wait on those the
    interrupted run submitted) and, with ``show``, show their status on standard error;
    ``None`` when the run is not in batch mode."""
    lane = batch_lane_of(engine.generation) if engine is not None else None
    if lane is None or engine is None or engine.generation is None:
        if resume and (out_dir / BATCHES_JSON).is_file():
            stderr().print(
                f"warning: {out_dir / BATCHES_JSON} lists the batches of the interrupted run; "
                "without --batch their requests are sent again one by one (add --batch to "
                "collect them)",
                markup=False,
            )
        return None
    if not resume:
        (out_dir / BATCHES_JSON).unlink(missing_ok=True)  # an earlier run's (--overwrite)
    identity = engine.generation.identity
    checkpoint = BatchCheckpoint.open(out_dir, lane.provider.name, identity, resume=resume)
    if checkpoint.other_judge is not None:
        stderr().print(
            f"warning: {checkpoint.path} lists the batches of another judge "
            f"({checkpoint.other_judge}), not this run's ({lane.provider.name}, {identity}): "
            "they are not collected, and their requests are submitted again",
            markup=False,
        )
    lane.resume(checkpoint)
    lane.on_status = _StatusLines() if show else None
    return lane


class _StatusLines:
    """One line on standard error each time a batch's status or counts change; the first
    of a batch in progress says what the run waits for and how to stop it."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[str, int, int]] = {}

    def __call__(self, status: BatchStatus) -> None:
        seen = (status.status, status.done, status.failed)
        if self._last.get(status.batch_id) == seen:
            return
        first = status.batch_id not in self._last
        self._last[status.batch_id] = seen
        hint = (
            "; waiting for the provider (up to 24 hours): Ctrl-C stops the run and --resume "
            "collects the batch later"
            if first and not status.terminal
            else ""
        )
        stderr().print(
            f"batch {status.batch_id}: {status.status}, {status.done}/{status.total} done"
            + (f", {status.failed} failed" if status.failed else "")
            + hint,
            markup=False,
        )


def batch_summary(lane: BatchLane | None) -> str | None:
    """The summary's line on the run's batches (``None`` outside batch mode)."""
    if lane is None:
        return None
    counts = lane.counts
    line = (
        f"batch mode ({lane.provider.name}): {plural(counts.submitted, 'request')} in "
        f"{plural(counts.batches, 'batch', 'batches')}"
    )
    if counts.resumed:
        line += f", {plural(counts.resumed, 'batch', 'batches')} of the interrupted run polled"
    if counts.errors:
        line += f"; {plural(counts.errors, 'error line')} retried in later batches"
    if counts.lost:
        line += (
            f"; {plural(counts.lost, 'request')} of batches lost (expired, cancelled, failed "
            "or not followed) not done"
        )
    if counts.uncertain:
        line += (
            f"; {plural(counts.uncertain, 'request')} in batches whose creation got no reply "
            "(they may exist at the provider)"
        )
    return line


def print_batch_summary(lane: BatchLane | None) -> None:
    """Print :func:`batch_summary` (nothing outside batch mode)."""
    line = batch_summary(lane)
    if line is not None:
        stdout().print(line)
