"""The persistent on-disk cache of judge and embedding calls (SQLite, WAL mode).

A call is keyed by the SHA-256 of its canonical request: endpoint, model, messages (or the
text to embed), every request parameter and the reply schema; never the API key or anything
else that cannot change the reply. Only replies that were used are stored (a judge reply that
passed validation, an embedding), so a re-run serves every successful call from here and
retries exactly the calls that failed.

Each write commits at once, so a run killed with ``kill -9`` keeps every reply it received.
Several processes may share one cache file (SQLite locking, with a busy timeout).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphrag_eval.llm.pricing import TokenUsage

__all__ = ["CachedReply", "CallCache", "default_cache_path", "request_key"]

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


@dataclass(frozen=True, slots=True)
class CachedReply:
    text: str
    usage: TokenUsage


class CallCache:
    """Replies and embeddings by request key. Used from one event loop thread; SQLite does
    the locking between processes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=30.0, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def get_reply(self, key: str) -> CachedReply | None:
        row = self._db.execute(
            "SELECT text, input_tokens, output_tokens FROM replies WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        return CachedReply(row[0], TokenUsage(row[1], row[2]))

    def put_reply(self, key: str, model: str, text: str, usage: TokenUsage) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?)",
            (key, model, text, usage.input_tokens, usage.output_tokens, time.time()),
        )

    def get_embeddings(self, keys: Sequence[str]) -> dict[str, tuple[list[float], int]]:
        """The cached ``(vector, input tokens)`` of each key that is cached."""
        found: dict[str, tuple[list[float], int]] = {}
        for start in range(0, len(keys), 500):  # SQLite's bound-parameter limit
            chunk = list(keys[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key, vector, input_tokens FROM embeddings WHERE key IN ({marks})",
                chunk,
            )
            for key, blob, tokens in rows:
                vector = array("d")
                vector.frombytes(blob)
                found[key] = (vector.tolist(), tokens)
        return found

    def put_embeddings(
        self, model: str, entries: Sequence[tuple[str, Sequence[float], int]]
    ) -> None:
        now = time.time()
        rows = [
            (key, model, array("d", vector).tobytes(), tokens, now)
            for key, vector, tokens in entries
        ]
        self._db.execute("BEGIN")  # one transaction (one commit) for the batch
        try:
            self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?, ?)", rows)
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()
