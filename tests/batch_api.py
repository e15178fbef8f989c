"""OpenAI's Files and Batches API, in their real shapes, for :class:`judge_server.JudgeServer`
(its ``batch_api``): ``POST /v1/files`` (multipart, ``purpose=batch``, a JSONL file of
``{custom_id, method, url, body}`` lines), ``POST /v1/batches``, ``GET /v1/batches/{id}``,
``POST /v1/batches/{id}/cancel`` and ``GET /v1/files/{id}/content`` (output and error files
of ``{id, custom_id, response: {status_code, request_id, body}, error}`` lines, in reverse
order: results come in any order).

The server answers each line as its chat-completions route would (the same judge). Tests
steer it through :class:`BatchAPI`'s attributes and wait on its state, never on time:
``hold`` keeps every batch ``in_progress`` until :meth:`BatchAPI.release`; ``outcome`` ends
the next batches ``expired``, ``cancelled`` or ``failed`` instead of ``completed``;
``error_first`` gives an error line (500) to the first submission of each custom id it
accepts; ``drop_creates`` creates the next batches but drops the connection instead of
answering; ``html_polls`` answers the next polls with an HTML page. ``submitted`` counts
each custom id's submissions.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FAILED_ERROR", "BatchAPI"]

FAILED_ERROR = {
    "code": "model_not_supported",
    "message": "The model 'gpt-4o-mini' is not supported by the Batch API.",
    "param": None,
    "line": 1,
}
"""The error a ``failed`` batch gives (its ``errors.data``: why its file did not validate)."""

Answer = Callable[[dict[str, Any]], dict[str, Any]]
"""A chat request's body -> the chat completion the server's chat route gives it."""


@dataclass
class _Batch:
    id: str
    input_file_id: str
    endpoint: str
    lines: list[dict[str, Any]]
    outcome: str
    status: str = "validating"
    output_file_id: str | None = None
    error_file_id: str | None = None
    polls: int = 0


@dataclass
class BatchAPI:
    answer: Answer
    hold: bool = False
    outcome: str = "completed"
    error_first: Callable[[str, dict[str, Any]], bool] | None = None
    name_batch: Callable[[int], str] | None = None
    """The id of the n-th batch created (default ``batch_{n}``), e.g. a hostile one."""
    html_polls: int = 0
    """The next so many polls answer 200 with an HTML page (a proxy's), not the batch."""
    drop_creates: int = 0
    """The next so many batch creations create the batch, then drop the connection without
    a reply (status 0 from :meth:`handle`: the server closes it)."""
    submitted: Counter[str] = field(default_factory=Counter)
    batches: list[list[str]] = field(default_factory=list)
    """The custom ids of each batch created, in order."""
    headers: list[dict[str, str]] = field(default_factory=list)
    """The headers of every call of the batch API."""
    calls: list[str] = field(default_factory=list)
    """The method and path of every call of the batch API."""
    changed: threading.Condition = field(default_factory=threading.Condition)
    """Notified whenever a batch is created or polled."""
    polls: int = 0
    _files: dict[str, bytes] = field(default_factory=dict)
    _batches: dict[str, _Batch] = field(default_factory=dict)
    _errored: set[str] = field(default_factory=set)

    # -- for tests ------------------------------------------------------------------------

    def release(self) -> None:
        """Let the batches held ``in_progress`` complete."""
        with self.changed:
            self.hold = False
            self.changed.notify_all()

    def wait_for(self, ready: Callable[[BatchAPI], bool], timeout_s: float = 60.0) -> bool:
        """Wait until ``ready(self)`` (a batch created, polled...); whether it came."""
        with self.changed:
            return self.changed.wait_for(lambda: ready(self), timeout_s)

    # -- the routes -----------------------------------------------------------------------

    @staticmethod
    def serves(path: str) -> bool:
        return path.startswith(("/v1/files", "/v1/batches"))

    def handle(
        self, method: str, path: str, headers: dict[str, str], raw: bytes
    ) -> tuple[int, bytes]:
        """The status and body of a call of the API."""
        with self.changed:
            self.headers.append(headers)
            self.calls.append(f"{method} {path}")
            parts = path.strip("/").split("/")[1:]  # without the v1
            if method == "POST" and parts == ["files"]:
                return self._upload(headers, raw)
            if method == "POST" and parts == ["batches"]:
                return self._create(json.loads(raw or b"{}"))
            if parts[0] == "batches" and len(parts) >= 2 and parts[1] in self._batches:
                batch = self._batches[parts[1]]
                if method == "POST" and parts[2:] == ["cancel"]:
                    batch.outcome, batch.status = "cancelled", "cancelling"
                    return 200, _json(self._object(batch))
                if method == "GET" and len(parts) == 2 and self.html_polls > 0:
                    self.html_polls -= 1
                    return 200, b"<html><body>Gateway says hello</body></html>"
                if method == "GET" and len(parts) == 2:
                    return 200, _json(self._poll(batch))
            if (
                method == "GET"
                and len(parts) == 3
                and parts[0] == "files"
                and parts[2] == "content"
            ):
                content = self._files.get(parts[1])
                if content is not None:
                    return 200, content
        return 404, _json({"error": {"message": f"no such object: {path}"}})

    def _upload(self, headers: dict[str, str], raw: bytes) -> tuple[int, bytes]:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"content-type: " + headers.get("content-type", "").encode() + b"\r\n\r\n" + raw
        )
        fields = {
            part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
            for part in message.iter_parts()
        }
        if fields.get("purpose") != b"batch" or "file" not in fields:
            return 400, _json({"error": {"message": "purpose must be batch, with a file"}})
        file_id = f"file-{len(self._files) + 1}"
        self._files[file_id] = fields["file"]
        return 200, _json({"id": file_id, "object": "file", "purpose": "batch"})

    def _create(self, body: dict[str, Any]) -> tuple[int, bytes]:
        content = self._files.get(body.get("input_file_id", ""))
        if content is None or body.get("completion_window") != "24h":
            return 400, _json({"error": {"message": "bad input_file_id or completion_window"}})
        lines = [json.loads(line) for line in content.splitlines() if line.strip()]
        number = len(self._batches) + 1
        batch_id = self.name_batch(number) if self.name_batch else f"batch_{number}"
        batch = _Batch(
            batch_id, body["input_file_id"], body.get("endpoint", ""), lines, self.outcome
        )
        self._batches[batch_id] = batch
        ids = [line["custom_id"] for line in lines]
        self.submitted.update(ids)
        self.batches.append(ids)
        self.changed.notify_all()
        if self.drop_creates > 0:
            self.drop_creates -= 1
            return 0, b""
        return 200, _json(self._object(batch))

    def _poll(self, batch: _Batch) -> dict[str, Any]:
        batch.polls += 1
        self.polls += 1
        self.changed.notify_all()
        if batch.output_file_id is None and batch.error_file_id is None:
            if self.hold and batch.outcome != "cancelled":
                batch.status = "in_progress"
            else:
                self._finish(batch)
        return self._object(batch)

    def _finish(self, batch: _Batch) -> None:
        """Answer the batch's lines (all, or half when it expires or is cancelled)."""
        ended = {"completed": "completed", "expired": "expired", "cancelled": "cancelled"}
        if batch.outcome == "failed":
            batch.status = "failed"
            return
        batch.status = ended[batch.outcome]
        done = batch.lines if batch.outcome == "completed" else batch.lines[: len(batch.lines) // 2]
        outputs, errors = [], []
        for number, line in enumerate(batch.lines):
            custom_id = line["custom_id"]
            if line not in done:
                code = "batch_expired" if batch.outcome == "expired" else "batch_cancelled"
                error = {"code": code, "message": "This request was not run."}
                errors.append(
                    {"id": f"r{number}", "custom_id": custom_id, "response": None, "error": error}
                )
            elif self._fails(custom_id, line["body"]):
                body = {"error": {"message": "The server had an error", "type": "server_error"}}
                response = {"status_code": 500, "request_id": f"q{number}", "body": body}
                errors.append(
                    {
                        "id": f"r{number}",
                        "custom_id": custom_id,
                        "response": response,
                        "error": None,
                    }
                )
            else:
                response = {
                    "status_code": 200,
                    "request_id": f"q{number}",
                    "body": self.answer(line["body"]),
                }
                outputs.append(
                    {
                        "id": f"r{number}",
                        "custom_id": custom_id,
                        "response": response,
                        "error": None,
                    }
                )
        for kind, records in (("output", outputs), ("error", errors)):
            if records:
                file_id = f"file-{batch.id}-{kind}"
                self._files[file_id] = b"".join(
                    _json(record) + b"\n" for record in reversed(records)
                )
                setattr(batch, f"{kind}_file_id", file_id)

    def _fails(self, custom_id: str, body: dict[str, Any]) -> bool:
        if self.error_first is None or custom_id in self._errored:
            return False
        if self.error_first(custom_id, body):
            self._errored.add(custom_id)
            return True
        return False

    def _object(self, batch: _Batch) -> dict[str, Any]:
        total = len(batch.lines)
        failed = _count(self._files.get(batch.error_file_id or ""))
        completed = _count(self._files.get(batch.output_file_id or ""))
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": batch.endpoint,
            "input_file_id": batch.input_file_id,
            "completion_window": "24h",
            "status": batch.status,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "request_counts": {"total": total, "completed": completed, "failed": failed},
            "errors": {"object": "list", "data": [FAILED_ERROR]}
            if batch.status == "failed"
            else None,
        }


def _count(content: bytes | None) -> int:
    return len([line for line in (content or b"").splitlines() if line.strip()])


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()
