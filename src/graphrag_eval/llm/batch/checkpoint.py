"""The batch ids of a run, checkpointed in its output directory (``batches.json``), so that
``--resume`` polls the batches already submitted instead of submitting (and paying for) their
requests again (docs/llm.md, batch mode).

The file holds, for each batch, its id, the custom ids of its requests and the state last
seen; nothing else (no key, no prompt). It is replaced atomically each time a batch is added
or ends, inside the output directory only; a file that is not one of these (hostile, or of
another version) is refused with one line naming it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphrag_eval.errors import InputError
from graphrag_eval.files.documents import read_bounded, write_text_atomic
from graphrag_eval.llm.batch.ids import ID_PATTERN

__all__ = ["BATCHES_JSON", "BatchCheckpoint", "CheckpointedBatch"]

BATCHES_JSON = "batches.json"
_FORMAT = "graphrag-eval batches 1"
_ID = ID_PATTERN
_MAX_BYTES = 512 * 1024 * 1024


@dataclass(slots=True)
class CheckpointedBatch:
    """One batch of the run."""

    batch_id: str
    custom_ids: list[str]
    state: str = "running"
    """The last :data:`~.protocol.BatchState` seen (``running`` until it ended)."""


@dataclass(slots=True)
class BatchCheckpoint:
    """The batches of a run, written to ``path`` as they are submitted and end."""

    path: Path
    provider: str
    endpoint: str
    """The judge's identity (its masked base URL): a resumed run with another judge does not
    poll these batches."""
    batches: list[CheckpointedBatch] = field(default_factory=list)
    other_judge: str | None = None
    """The judge (provider and endpoint) of the file's batches when not this run's: they are
    not polled, and the file is replaced with the first batch of this run."""

    @classmethod
    def open(cls, out_dir: Path, provider: str, endpoint: str, *, resume: bool) -> BatchCheckpoint:
        """The checkpoint of the run in ``out_dir``: the batches written there when
        ``resume`` (and the file is there, for the same provider and judge), else none (the
        file is written with the first batch)."""
        checkpoint = cls(out_dir / BATCHES_JSON, provider, endpoint)
        if resume and checkpoint.path.is_file():
            checkpoint.batches, checkpoint.other_judge = _read(checkpoint.path, provider, endpoint)
        return checkpoint

    def add(self, batch_id: str, custom_ids: list[str]) -> None:
        self.batches.append(CheckpointedBatch(batch_id, custom_ids))
        self._write()

    def ended(self, batch_id: str, state: str) -> None:
        for batch in self.batches:
            if batch.batch_id == batch_id and batch.state != state:
                batch.state = state
                self._write()

    def _write(self) -> None:
        data = {
            "format": _FORMAT,
            "provider": self.provider,
            "endpoint": self.endpoint,
            "batches": [
                {"id": batch.batch_id, "state": batch.state, "custom_ids": batch.custom_ids}
                for batch in self.batches
            ],
        }
        write_text_atomic(self.path, json.dumps(data, separators=(",", ":")) + "\n")


def _read(path: Path, provider: str, endpoint: str) -> tuple[list[CheckpointedBatch], str | None]:
    """The batches of ``path``; :class:`InputError` for a file that is not a checkpoint of
    batches; none, and the other judge, when it is one of another provider or judge."""
    try:
        data: Any = json.loads(read_bounded(path, _MAX_BYTES))
    except (OSError, ValueError, RecursionError) as exc:
        raise InputError(f"cannot read the batch checkpoint: {exc}", file=str(path)) from None
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        raise InputError("not a checkpoint of batches (format)", file=str(path))
    if data.get("provider") != provider or data.get("endpoint") != endpoint:
        other = f"{str(data.get('provider'))[:40]}, {str(data.get('endpoint'))[:200]}"
        return [], "".join(char if char.isprintable() else "?" for char in other)
    batches = data.get("batches")
    if not isinstance(batches, list):
        raise InputError("not a checkpoint of batches", file=str(path), field="batches")
    found: list[CheckpointedBatch] = []
    for number, batch in enumerate(batches, start=1):
        where = f"batch {number}"
        if not isinstance(batch, dict):
            raise InputError("not an object", file=str(path), item=where)
        batch_id, state, custom_ids = batch.get("id"), batch.get("state"), batch.get("custom_ids")
        if not (isinstance(batch_id, str) and _ID.fullmatch(batch_id)):
            raise InputError("not a batch id", file=str(path), item=where, field="id")
        if not isinstance(state, str) or not _ID.fullmatch(state):
            raise InputError("not a state", file=str(path), item=where, field="state")
        if not isinstance(custom_ids, list) or not all(
            isinstance(one, str) and _ID.fullmatch(one) for one in custom_ids
        ):
            raise InputError("not a list of ids", file=str(path), item=where, field="custom_ids")
        found.append(CheckpointedBatch(batch_id, custom_ids, state))
    return found, None
