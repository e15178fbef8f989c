"""One run at a time per output directory: an exclusive lock on the directory, held for the
whole run (docs/security.md, "One run per output directory").

The lock is ``fcntl.flock`` on the file :data:`LOCK_FILE` inside the directory, which records
the holder's process id. The operating system releases the lock when its holder ends, however
it ends (``kill -9`` too), so a stale lock never blocks a later run. The file itself stays:
removing it on release would let a third run lock a new file while a second one holds the
old. Where ``fcntl`` is missing (Windows) runs are not locked.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from graphrag_eval.errors import GraphragEvalError
from graphrag_eval.files.documents import remove_stale_temporaries

if sys.platform != "win32":
    import fcntl

__all__ = ["LOCK_FILE", "OutputDirBusy", "lock_out_dir"]

LOCK_FILE = ".graphrag-eval.lock"
"""The lock file of an output directory (hidden; it holds the process id of the run)."""

_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)


class OutputDirBusy(GraphragEvalError):
    """Another run holds the output directory."""


def _holder(fd: int) -> str:
    """The process id recorded in the lock file, as text ("unknown" when unreadable)."""
    with contextlib.suppress(OSError, ValueError):
        text = os.pread(fd, 32, 0).decode("ascii").strip()
        return str(int(text))
    return "unknown"


@contextlib.contextmanager
def lock_out_dir(out_dir: Path) -> Iterator[None]:
    """Hold the exclusive lock on ``out_dir`` (created when missing) while the block runs.

    Raises :class:`OutputDirBusy`, naming the directory and the holder's process id, when
    another run holds it; it never waits. Once it holds the lock, the temporary files a
    run killed while writing left in ``out_dir`` are removed (no run writes there now)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if sys.platform == "win32":  # pragma: no cover - no fcntl
        yield
        return
    # O_NOFOLLOW: a link planted under the lock file's name is refused, never written.
    fd = os.open(out_dir / LOCK_FILE, _LOCK_FLAGS, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputDirBusy(
                f"{out_dir}: another graphrag-eval run (PID {_holder(fd)}) is writing to this "
                "output directory; wait for it to end or use another --out-dir"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        remove_stale_temporaries(out_dir)
        yield
    finally:
        os.close(fd)  # releases the lock
