"""What a provider's batch API does for the engine (:class:`BatchProvider`), and the requests,
statuses and results that cross it. A batch provider is registered by name
(:mod:`.registry`); the batch lane (:mod:`.lane`) fills batches with the judge's requests,
submits them, polls them and hands each result to the call waiting for it, by custom id.

Requests go in, and results come out, in the engine's own shape: a request's ``body`` is
what the endpoint's synchronous client would have been given (an OpenAI chat-completions
request: ``model``, ``messages``, ``temperature``, ``max_tokens``, ``response_format``...), and
a result's ``body`` is what that client would have returned (an OpenAI chat completion, as
JSON bytes: ``choices[0].message.content``, ``choices[0].finish_reason``, ``usage``). A
provider whose API has other shapes converts both ways (:func:`chat_completion` builds the
reply), so that a batch reply goes through the same reading, usage and cost accounting, cache
and re-ask as a synchronous one (docs/llm.md, batch mode).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import msgspec

from graphrag_eval.errors import CallFailed

__all__ = [
    "BatchCounts",
    "BatchError",
    "BatchProvider",
    "BatchRequest",
    "BatchResult",
    "BatchState",
    "BatchStatus",
    "SubmitUncertain",
    "chat_completion",
]

BatchState = Literal["running", "ended", "expired", "cancelled", "failed"]
"""Where a batch is, whatever the provider calls it:

* ``running``: the provider is still working on it (validating, in progress, finalizing,
  cancelling);
* ``ended``: done; every request has a result (a reply or an error line);
* ``expired``: not done within its window (24 hours); the requests done have results, the
  others none;
* ``cancelled``: cancelled; the same;
* ``failed``: the batch as a whole was refused (its file did not validate); no results.

Every state but ``running`` is terminal."""


@dataclass(frozen=True, slots=True)
class BatchRequest:
    """One request of a batch."""

    custom_id: str
    """Its id in the batch (unique within it): ``ge-`` and 40 hexadecimal digits (43
    characters of ``[a-z0-9-]``, which every provider's id pattern takes), derived from the
    request itself, so that a resumed run finds the same ids (:func:`.ids.custom_id`)."""
    path: str
    """Where the synchronous client would have sent it: ``/chat/completions``."""
    body: dict[str, Any]
    """The request's fields as the synchronous client is given them (see the module's
    docstring)."""


@dataclass(frozen=True, slots=True)
class BatchStatus:
    """What the provider says of a batch."""

    batch_id: str
    status: str
    """The provider's own word for it (``in_progress``, ``finalizing``, ``ended``...): shown
    to the user as it is."""
    state: BatchState
    done: int
    """Requests answered so far."""
    failed: int
    """Requests that got an error so far."""
    total: int
    reason: str | None = None
    """Why a batch failed as a whole, as the provider says it (its file did not validate)."""

    @property
    def terminal(self) -> bool:
        """Whether the provider will do no more for it (its results can be read)."""
        return self.state != "running"


@dataclass(frozen=True, slots=True)
class BatchError:
    """Why one request of a batch got no reply."""

    message: str
    status_code: int | None = None
    """The HTTP status the request would have had (429, 500, 400...); ``None`` when the
    provider gives none (a request the batch did not reach: expired, cancelled). Retried as
    the engine retries a synchronous request: 408, 409, 429, 5xx and ``None``; a 4xx is the
    judge refusing the request."""
    code: str | None = None
    """The provider's error code (``batch_expired``, ``rate_limit_exceeded``...)."""


@dataclass(frozen=True, slots=True)
class BatchResult:
    """The result of one request of a batch: a reply or an error, never both."""

    custom_id: str
    body: bytes | None = None
    """The reply in the engine's shape (see the module's docstring)."""
    error: BatchError | None = None


class SubmitUncertain(CallFailed):
    """The creation of a batch got no usable reply (a lost connection, a timeout, a 5xx, a
    reply without the batch's id): the batch may exist, and be paid for. Neither the
    provider nor the engine sends it again (docs/llm.md, batch mode)."""


class BatchProvider(Protocol):
    """A provider's batch API. Its calls are made with the engine's conventions: the key from
    the config (never written anywhere, redacted from every message), 429s and 5xx retried
    with backoff; failures raise :mod:`graphrag_eval.llm.failures`' errors."""

    name: str
    """The registered name (``openai``, ``anthropic``), as messages show it."""
    max_requests: int
    """The most requests one batch may hold (OpenAI: 50,000)."""
    max_bytes: int
    """The largest batch, in bytes of request bodies as JSON (OpenAI: 200 MB per file; keep
    a margin for the provider's own framing)."""

    async def submit(self, requests: Sequence[BatchRequest]) -> str:
        """Create a batch of ``requests`` (at most :attr:`max_requests`); its id. Once it
        returns, the batch exists (and is paid for): the caller checkpoints the id before
        anything else. The creation is sent again only after a reply saying the batch was
        not created (a 4xx such as 429); :class:`SubmitUncertain` when it may have been."""
        ...

    async def status(self, batch_id: str) -> BatchStatus:
        """Where the batch is now."""
        ...

    def results(self, batch_id: str) -> AsyncIterator[BatchResult]:
        """The results of a terminal batch, in any order (a request without a result: none
        is yielded for it)."""
        ...

    async def cancel(self, batch_id: str) -> None:
        """Ask the provider to cancel the batch (its state becomes ``cancelled`` later)."""
        ...

    async def close(self) -> None:
        """Close its connections."""
        ...


@dataclass(slots=True)
class BatchCounts:
    """What the batch lane (:mod:`.lane`) did in the run (docs/llm.md, batch mode)."""

    batches: int = 0
    """Batches submitted."""
    submitted: int = 0
    """Requests submitted in them."""
    resumed: int = 0
    """Batches of an interrupted run polled again."""
    errors: int = 0
    """Error lines (requests the engine then retried in a later batch)."""
    lost: int = 0
    """Requests of batches that expired, were cancelled or failed."""
    uncertain: int = 0
    """Requests of batches whose creation got no usable reply (they may exist)."""


_ENCODER = msgspec.json.Encoder()


def chat_completion(
    text: str,
    *,
    model: str,
    finish_reason: str = "stop",
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
) -> bytes:
    """A reply in the engine's shape (an OpenAI chat completion as JSON bytes) for a provider
    whose replies have another: ``finish_reason`` ``length`` for a reply cut off by the token
    limit; the usage when the provider reports it (else the engine estimates it)."""
    reply: dict[str, Any] = {
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
        ],
    }
    if prompt_tokens is not None and completion_tokens is not None:
        reply["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    return _ENCODER.encode(reply)
