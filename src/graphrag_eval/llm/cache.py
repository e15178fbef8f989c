"""The persistent on-disk cache of judge and embedding calls (SQLite, WAL mode).

A call is keyed by the SHA-256 of its canonical request: endpoint, model, messages (or the
text to embed), every request parameter and the reply schema; never the API key or anything
else that cannot change the reply. Only replies that were used are stored (a judge reply that
passed validation, an embedding), so a re-run serves every successful call from here and
retries exactly the calls that failed.

Replies are written at the event loop's next turn, those of one turn in one transaction (a
commit per reply was about a tenth of a judge request's CPU): a run killed with ``kill -9``
keeps every reply it received but those of its last turn, a few milliseconds. Outside an
event loop a write commits at once. Several processes may share one cache file (SQLite
locking, with a busy timeout).

The cache can never cost a result (docs/llm.md, cache): a cache that cannot be written (a
full disk, a read-only file, a lock held too long by another process) is used read-only from
then on; one that cannot be read (a corrupted file or page) is not used at all. Either way
the run warns once and goes on with every reply it receives.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import os
import sqlite3
import time
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphrag_eval.llm.pricing import TokenUsage

__all__ = ["CachedReply", "CallCache", "all_finite", "default_cache_path", "request_key"]

logger = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS embeddings (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    vector BLOB NOT NULL,
    input_tokens INTEGER NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS dimensions (
    model TEXT PRIMARY KEY,
    dimension INTEGER NOT NULL
);
"""


def default_cache_path() -> Path:
    """``$GRAPHRAG_EVAL_CACHE``, else ``graphrag-eval/llm-cache.sqlite3`` in the user cache
    directory."""
    explicit = os.environ.get("GRAPHRAG_EVAL_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(base) / "graphrag-eval" / "llm-cache.sqlite3"


def request_key(request: Mapping[str, Any]) -> str:
    """The cache key of a request: SHA-256 of its canonical JSON."""
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


_PUT_REPLY = "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?)"
_PUT_EMBEDDING = "INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?, ?)"


@dataclass(frozen=True, slots=True)
class CachedReply:
    text: str
    usage: TokenUsage


class CallCache:
    """Replies and embeddings by request key. Used from one event loop thread; SQLite does
    the locking between processes. No method raises for a cache fault: the first one is
    logged as a warning and the cache goes read-only (a write failed) or off (a read
    failed)."""

    def __init__(
        self,
        path: Path,
        *,
        busy_timeout_s: float = 30.0,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        """Raises ``sqlite3.Error`` or ``OSError`` when the file can be neither opened for
        writing nor read. ``redact``: scrubs secrets from a stored reply as it is read (one
        stored before the engine knew that form of a secret), and the stored row with it."""
        self.path = path
        self._redact = redact
        self.readable = True
        self.writable = True
        db: sqlite3.Connection | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            if db is not None:
                db.close()
            if not path.is_file():
                raise
            # Not writable (a read-only file or directory, a lock held too long): read it.
            db = _read_only(path, busy_timeout_s)
            self._fault(exc, reading=False)
        self._db = db
        self._replies: dict[str, tuple[Any, ...]] = {}
        """Rows put and not written yet (they are read from here meanwhile)."""
        self._embeddings: dict[str, tuple[Any, ...]] = {}
        self._flush_due = False

    def _fault(self, exc: BaseException, *, reading: bool) -> None:
        """Warn once, then go read-only (``reading=False``) or stop using the cache."""
        if self.readable and self.writable:
            logger.warning(
                "the call cache %s cannot be %s: %s (the run goes on %s; no result is lost)",
                self.path,
                "read" if reading else "written",
                exc,
                "without it" if reading else "serving its replies without storing new ones",
            )
        self.writable = False
        if reading:
            self.readable = False

    def get_reply(self, key: str) -> CachedReply | None:
        if not self.readable:
            return None
        pending = self._replies.get(key)
        if pending is not None:
            return CachedReply(pending[2], TokenUsage(pending[3], pending[4]))
        try:
            row = self._db.execute(
                "SELECT text, input_tokens, output_tokens FROM replies WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                return None
            reply = CachedReply(str(row[0]), TokenUsage(int(row[1]), int(row[2])))
        except (sqlite3.Error, OSError, TypeError, ValueError) as exc:
            self._fault(exc, reading=True)
            return None
        clean = self._redact(reply.text) if self._redact is not None else reply.text
        if clean == reply.text:
            return reply
        if self.writable:  # a secret stored by an older version: not kept any longer
            try:
                self._db.execute("UPDATE replies SET text = ? WHERE key = ?", (clean, key))
            except (sqlite3.Error, OSError) as exc:
                self._fault(exc, reading=False)
        return CachedReply(clean, reply.usage)

    def put_reply(self, key: str, model: str, text: str, usage: TokenUsage) -> None:
        if not self.writable:
            return
        row = (key, model, text, usage.input_tokens, usage.output_tokens, time.time())
        self._replies[key] = row
        self._write_soon()

    def get_embeddings(self, keys: Sequence[str]) -> dict[str, tuple[list[float], int]]:
        """The cached ``(vector, input tokens)`` of each key that is cached (a stored vector
        that is not one, e.g. a damaged blob, counts as not cached)."""
        found: dict[str, tuple[list[float], int]] = {}
        if not self.readable:
            return found
        for key in keys:
            pending = self._embeddings.get(key)
            vector = _vector(pending[2]) if pending is not None else None
            if pending is not None and vector is not None:
                found[key] = (vector, int(pending[3]))
        missing = [key for key in keys if key not in found] if found else list(keys)
        try:
            for start in range(0, len(missing), 500):  # SQLite's bound-parameter limit
                chunk = missing[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT key, vector, input_tokens FROM embeddings WHERE key IN ({marks})",
                    chunk,
                )
                for key, blob, tokens in rows:
                    vector = _vector(blob)
                    if vector is not None:
                        found[key] = (vector, int(tokens))
        except (sqlite3.Error, OSError, TypeError, ValueError) as exc:
            self._fault(exc, reading=True)
            return {}
        return found

    def put_embeddings(
        self, model: str, entries: Sequence[tuple[str, Sequence[float], int]]
    ) -> None:
        if not self.writable:
            return
        now = time.time()
        for key, vector, tokens in entries:
            self._embeddings[key] = (key, model, array("d", vector).tobytes(), tokens, now)
        self._write_soon()

    def _write_soon(self) -> None:
        """Write what was put at the event loop's next turn (at once outside a loop)."""
        if self._flush_due:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        self._flush_due = True
        loop.call_soon(self.flush)

    def flush(self) -> None:
        """Write the replies and embeddings put since the last write, in one transaction
        (a lone row in one statement, its own transaction)."""
        self._flush_due = False
        replies, embeddings = list(self._replies.values()), list(self._embeddings.values())
        self._replies.clear()
        self._embeddings.clear()
        if not self.writable or not (replies or embeddings):
            return
        try:
            if len(replies) + len(embeddings) == 1:
                self._db.execute(
                    _PUT_REPLY if replies else _PUT_EMBEDDING, [*replies, *embeddings][0]
                )
                return
            self._db.execute("BEGIN")
            try:
                self._db.executemany(_PUT_REPLY, replies)
                self._db.executemany(_PUT_EMBEDDING, embeddings)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except (sqlite3.Error, OSError, UnicodeError) as exc:
            self._fault(exc, reading=False)

    def get_dimension(self, model: str) -> int | None:
        """The dimension last seen in a reply of the embedding ``model`` (endpoint, name and
        parameters), or ``None``."""
        if not self.readable:
            return None
        try:
            row = self._db.execute(
                "SELECT dimension FROM dimensions WHERE model = ?", (model,)
            ).fetchone()
            return int(row[0]) if row is not None else None
        except sqlite3.OperationalError:
            return None  # a cache written before the table existed, opened read-only
        except (sqlite3.Error, OSError, TypeError, ValueError) as exc:
            self._fault(exc, reading=True)
            return None

    def put_dimension(self, model: str, dimension: int) -> None:
        if not self.writable:
            return
        try:
            self._db.execute("INSERT OR REPLACE INTO dimensions VALUES (?, ?)", (model, dimension))
        except (sqlite3.Error, OSError) as exc:
            self._fault(exc, reading=False)

    def close(self) -> None:
        self.flush()
        with contextlib.suppress(sqlite3.Error):  # nothing left to keep
            self._db.close()


def _read_only(path: Path, busy_timeout_s: float) -> sqlite3.Connection:
    """The cache at ``path`` opened for reading only. A cache in WAL mode is read with its
    ``-wal`` and ``-shm`` files, which SQLite creates when they are missing: where it cannot
    (a read-only directory) the main file is read as it stands (``immutable``, no locking),
    since nothing can write to it there either. Raises ``sqlite3.Error`` when it cannot be
    read at all."""
    base = path.resolve().as_uri()
    failure: sqlite3.Error | None = None
    for options in ("mode=ro", "mode=ro&immutable=1"):
        db = sqlite3.connect(f"{base}?{options}", uri=True, timeout=busy_timeout_s)
        try:
            db.execute("SELECT 1 FROM replies LIMIT 1").fetchall()
        except sqlite3.Error as exc:
            db.close()
            failure = exc
            continue
        return db
    assert failure is not None
    raise failure


def _vector(blob: object) -> list[float] | None:
    """A stored vector, or ``None`` when ``blob`` is not one (empty, cut short, not finite)."""
    if not isinstance(blob, bytes) or not blob or len(blob) % 8:
        return None
    vector = array("d")
    vector.frombytes(blob)
    values = vector.tolist()
    return values if all_finite(values) else None


def all_finite(values: list[float]) -> bool:
    """Whether every value is finite: their sum is, unless it overflowed (then each is
    checked), since a NaN or an infinity makes the sum NaN or infinite. The C loop of
    ``sum`` instead of a check per value: this runs for every vector read."""
    return math.isfinite(sum(values)) or all(math.isfinite(x) for x in values)
