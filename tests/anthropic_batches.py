"""Anthropic's Message Batches API, as :mod:`anthropic_server` serves it on 127.0.0.1 (its
routes under ``/v1/messages/batches``), in the API's real shapes:

* ``POST /v1/messages/batches`` ``{"requests": [{"custom_id", "params"}]}`` creates a batch
  and answers its ``message_batch`` object (``processing_status: in_progress``);
* ``GET /v1/messages/batches/{id}`` the batch (``in_progress``, ``canceling``, ``ended``),
  its ``request_counts`` (processing, succeeded, errored, canceled, expired) and, once it
  has ended, its ``results_url``;
* ``POST /v1/messages/batches/{id}/cancel`` starts cancelling it;
* ``GET /v1/messages/batches/{id}/results`` the results as JSON Lines, one per request, in
  the reverse order of the requests (results come in any order: a client matches them by
  ``custom_id``): ``{"custom_id", "result": {"type": "succeeded", "message"} | {"type":
  "errored", "error": {"type": "error", "error": {"type", "message"}}} | {"type":
  "canceled"} | {"type": "expired"}}``.

Each request is judged as the synchronous route judges it (:func:`anthropic_server.message`).

Controls for tests, none of them timed: :meth:`BatchStore.hold` keeps every batch in
progress until :meth:`BatchStore.release` (an event, set by the test); ``error_ids`` makes
the given custom ids error the first time they come (``error_first``: the requests a
predicate chooses; ``error_always``: every time); ``expire`` makes batches end with their
requests expired; ``cancel`` (or the cancel route, or ``cancel_all`` for every new batch)
ends a batch with its requests canceled; ``results_base`` points ``results_url`` at another
host; ``junk_lines`` come before the results; ``fail_creates`` creates the next batches
but answers 500; ``submissions`` counts the submissions of
each custom id, ``created`` the batches, ``polls`` the polls (:meth:`BatchStore.wait_for_polls`).
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BatchStore", "Served"]

CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""The custom ids the API accepts."""
MAX_REQUESTS = 100_000
"""The most requests one batch takes."""
CREATED_AT = "2026-11-26T08:00:00.000000Z"
EXPIRES_AT = "2026-11-27T08:00:00.000000Z"
ENDED_AT = "2026-11-26T08:05:00.000000Z"


@dataclass(frozen=True)
class Served:
    """What a route answers: a status, a JSON payload or JSON Lines text."""

    status: int
    payload: Any = None
    text: str | None = None


@dataclass
class _Batch:
    id: str
    requests: list[dict[str, Any]]
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each request's result, decided when the batch ends."""
    ended: bool = False
    cancel_requested: bool = False
    expire: bool = False


def _error(status: int, kind: str, text: str) -> Served:
    return Served(status, {"type": "error", "error": {"type": kind, "message": text}})


class BatchStore:
    """The batches of one server, and the tests' controls over them."""

    def __init__(self, judge: Any) -> None:
        self._judge = judge
        """``params -> message``: the synchronous route's judge."""
        self.lock = threading.Lock()
        self.batches: dict[str, _Batch] = {}
        self.submissions: Counter[str] = Counter()
        """How many times each custom id was submitted, over all batches."""
        self.error_ids: set[str] = set()
        """Custom ids whose first submission errors."""
        self.error_first: Callable[[str, dict[str, Any]], bool] | None = None
        """Errors the first submission of each request it is true of (custom id, params)."""
        self.error_always: set[str] = set()
        """Custom ids that error every time."""
        self.error_kind = "invalid_request_error"
        self.expire = False
        """New batches end with every request expired."""
        self.cancel_all = False
        """New batches are cancelled as soon as they are created (by someone in the console)."""
        self._errored: set[str] = set()
        self.results_base: str | None = None
        """Where ``results_url`` points (``None``: this server), e.g. another host."""
        self._released = threading.Event()
        self._released.set()
        self._polled = threading.Condition(self.lock)
        self.polls = 0
        """``GET`` of a batch, over all batches."""
        self.results_fetched = 0
        self.junk_lines: list[str] = []
        """Lines served before the results (a hostile or broken results file)."""
        self.fail_creates = 0
        """The next so many creations make the batch, then answer 500 (``api_error``)."""

    @property
    def created(self) -> int:
        with self.lock:
            return len(self.batches)

    def hold(self) -> None:
        """Keep every batch in progress until :meth:`release`."""
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    def wait_for_polls(self, polls: int, timeout_s: float) -> bool:
        """Wait until batches were polled ``polls`` times (``timeout_s``: a bound for a
        broken run, not a timing); whether they were."""
        with self._polled:
            return self._polled.wait_for(lambda: self.polls >= polls, timeout_s)

    def cancel(self, batch_id: str) -> None:
        """Cancel a batch as the cancel route does (a test's Ctrl-C in the console)."""
        with self.lock:
            self.batches[batch_id].cancel_requested = True

    def ids(self) -> list[str]:
        with self.lock:
            return list(self.batches)

    # -- routes ---------------------------------------------------------------------------

    def route(self, method: str, path: str, body: Any, base_url: str) -> Served | None:
        """Answer ``method path``; ``None`` when it is not a batch route."""
        parts = path.split("?", 1)[0].rstrip("/").split("/")[1:]
        if parts[:3] != ["v1", "messages", "batches"]:
            return None
        rest = parts[3:]
        if method == "POST" and not rest:
            return self._create(body, base_url)
        if not rest or rest[0] not in self.batches:
            return _error(404, "not_found_error", f"no message batch {'/'.join(rest)}")
        if method == "GET" and len(rest) == 1:
            with self._polled:
                self.polls += 1
                self._polled.notify_all()
            return Served(200, self._object(rest[0], base_url))
        if method == "POST" and rest[1:] == ["cancel"]:
            self.cancel(rest[0])
            return Served(200, self._object(rest[0], base_url, end=False))
        if method == "GET" and rest[1:] == ["results"]:
            return self._results(rest[0])
        return _error(404, "not_found_error", f"no route {method} {path}")

    def _create(self, body: Any, base_url: str) -> Served:
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not 1 <= len(requests) <= MAX_REQUESTS:
            return _error(400, "invalid_request_error", "requests: 1 to 100000 items")
        seen: set[str] = set()
        for n, item in enumerate(requests):
            custom_id = item.get("custom_id") if isinstance(item, dict) else None
            if not isinstance(custom_id, str) or not CUSTOM_ID.match(custom_id):
                return _error(400, "invalid_request_error", f"requests.{n}.custom_id: invalid")
            if custom_id in seen:
                return _error(400, "invalid_request_error", f"duplicate custom_id {custom_id}")
            if not isinstance(item.get("params"), dict) or "max_tokens" not in item["params"]:
                return _error(400, "invalid_request_error", f"requests.{n}.params.max_tokens")
            seen.add(custom_id)
        with self.lock:
            batch_id = f"msgbatch_test{len(self.batches) + 1:06d}"
            self.batches[batch_id] = _Batch(
                batch_id, requests, cancel_requested=self.cancel_all, expire=self.expire
            )
            self.submissions.update(seen)
            if self.fail_creates > 0:
                self.fail_creates -= 1
                return _error(500, "api_error", "Internal server error")
        return Served(200, self._object(batch_id, base_url))

    def _object(self, batch_id: str, base_url: str, end: bool = True) -> dict[str, Any]:
        """The batch's ``message_batch`` object; a released (or cancelled) batch ends when
        it is read (``end``)."""
        with self.lock:
            batch = self.batches[batch_id]
        if end and not batch.ended and (self._released.is_set() or batch.cancel_requested):
            self._end(batch)
        counts = Counter(result["type"] for result in batch.results.values())
        status = "ended" if batch.ended else "in_progress"
        if status == "in_progress" and batch.cancel_requested:
            status = "canceling"
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": status,
            "request_counts": {
                "processing": len(batch.requests) - len(batch.results),
                "succeeded": counts["succeeded"],
                "errored": counts["errored"],
                "canceled": counts["canceled"],
                "expired": counts["expired"],
            },
            "ended_at": ENDED_AT if batch.ended else None,
            "created_at": CREATED_AT,
            "expires_at": EXPIRES_AT,
            "archived_at": None,
            "cancel_initiated_at": CREATED_AT if batch.cancel_requested else None,
            "results_url": f"{self.results_base or base_url}/v1/messages/batches/{batch.id}/results"
            if batch.ended
            else None,
        }

    def _end(self, batch: _Batch) -> None:
        results = {}
        for item in batch.requests:
            custom_id = item["custom_id"]
            results[custom_id] = self._result(batch, custom_id, item["params"])
        with self.lock:
            batch.results, batch.ended = results, True

    def _result(self, batch: _Batch, custom_id: str, params: dict[str, Any]) -> dict[str, Any]:
        if batch.cancel_requested:
            return {"type": "canceled"}
        if batch.expire:
            return {"type": "expired"}
        with self.lock:
            chosen = self.error_first is not None and self.error_first(custom_id, params)
            first = custom_id in self.error_ids or (chosen and custom_id not in self._errored)
            self.error_ids.discard(custom_id)
            self._errored.add(custom_id)
        if first or custom_id in self.error_always:
            inner = {"type": self.error_kind, "message": f"request {custom_id} failed"}
            return {"type": "errored", "error": {"type": "error", "error": inner}}
        return {"type": "succeeded", "message": self._judge(params)}

    def _results(self, batch_id: str) -> Served:
        with self.lock:
            batch = self.batches[batch_id]
            if not batch.ended:
                return _error(404, "not_found_error", f"batch {batch_id} has not ended")
            self.results_fetched += 1
        lines = [
            json.dumps({"custom_id": item["custom_id"], "result": batch.results[item["custom_id"]]})
            for item in reversed(batch.requests)
        ]
        return Served(200, text="\n".join([*self.junk_lines, *lines]) + "\n")
