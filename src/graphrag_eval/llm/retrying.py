"""Sending one request to an endpoint: under its lane's limits, after the budget check, and
retried when the failure is worth retrying.

* Retried: rate limits (429, honouring ``retry-after-ms``/``Retry-After``), 408, 409, server
  errors (5xx), a 200 that is not JSON (an HTML page), timeouts and connection errors, with
  exponential backoff and jitter.
* Not retried: everything else. A refused request (401, 403, 404) also stops every further
  call to that endpoint, and so do :data:`~.client.BREAKER_FAILURES` requests in a row that
  could not reach it, or :data:`~.client.BREAKER_UNUSABLE` in a row that got no usable reply
  (a 5xx, a redirect, a 200 that is not JSON) (its :class:`~.client.Breaker`).
* Each request reserves its estimated cost under the cost limit before it is sent
  (:meth:`~.budget.Budget.reserve`).
* A request never holds its slot past its time: the client's connect and read timeouts, and a
  deadline of both around the whole request (a server that trickles its reply); once the
  endpoint's latencies are known, a shorter deadline from them (:meth:`.lane.Lane.deadline_s`),
  after which the request is abandoned and retried (a hung request holds its slot for
  seconds; it does not count towards the breaker).
* Each reply tells the lane's adaptive concurrency limit how the endpoint is coping (a 429
  lowers it, a reply raises it; :mod:`.lane`).

Failures become :class:`~graphrag_eval.errors.CallFailed` with a redacted message. See
docs/llm.md (what the engine does with each call).
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from graphrag_eval.config.llm import LLMConfig
from graphrag_eval.errors import CallFailed, LLMError
from graphrag_eval.llm.budget import Budget
from graphrag_eval.llm.client import Endpoint
from graphrag_eval.llm.failures import (
    API_MARKERS,
    StatusError,
    Unreachable,
    UnusableReply,
    json_like,
    unusable_status,
)
from graphrag_eval.llm.redaction import Redactor

__all__ = ["DeadlineExceeded", "Sender", "retry_after_s", "retryable", "status_text"]


class DeadlineExceeded(Exception):
    """A request that was still going at its deadline (connect plus read timeout)."""


class Sender:
    """Sends requests with the run's retry policy, counting requests and retries."""

    def __init__(self, config: LLMConfig, budget: Budget, redactor: Redactor) -> None:
        self.config = config
        self.budget = budget
        self.stats = budget.stats
        self.redactor = redactor

    async def send(
        self,
        endpoint: Endpoint,
        tokens: int,
        request: Callable[[], Awaitable[Any]],
        cost_usd: float = 0.0,
    ) -> Any:
        """Send one request of about ``tokens`` tokens and ``cost_usd`` dollars (reserved
        under the cost limit while it is in flight), retrying transient failures."""
        # Most requests succeed at once: tenacity (and its cost) only for those that do not.
        abandoned = [0]  # attempts abandoned at their deadline: each doubles the next one's
        try:
            only = self.config.max_retries == 0
            return await self._attempt(endpoint, tokens, request, cost_usd, abandoned, last=only)
        except Exception as exc:
            if self.config.max_retries == 0 or not self._worth_retrying(endpoint, exc):
                raise
            first = exc
        self.stats.retries += 1
        await asyncio.sleep(self._wait_s(first, 1))
        async for attempt in self._retrying(endpoint):
            with attempt:
                last = attempt.retry_state.attempt_number >= self.config.max_retries
                return await self._attempt(endpoint, tokens, request, cost_usd, abandoned, last)
        raise AssertionError("unreachable: tenacity re-raises the last failure")

    @staticmethod
    def _worth_retrying(endpoint: Endpoint, exc: BaseException) -> bool:
        return retryable(exc) and endpoint.breaker.reason is None

    async def _attempt(
        self,
        endpoint: Endpoint,
        tokens: int,
        request: Callable[[], Awaitable[Any]],
        cost_usd: float,
        abandoned: list[int],
        last: bool,
    ) -> Any:
        """One attempt of a request (the ``last`` one, or not; ``abandoned``: how many of its
        attempts were abandoned at their deadline), in a slot of the endpoint's lane; what
        came of it goes to the lane (its concurrency limit and latencies) and to the
        endpoint's breaker."""
        async with endpoint.lane.slot(tokens) as ticket:
            # Calls queued for a slot see what happened while they waited.
            endpoint.ensure_usable()
            reserved = await self.budget.reserve(cost_usd)
            self.stats.requests += 1
            deadline = endpoint.lane.deadline_s(self._deadline_s, abandoned[0], last)
            started = asyncio.get_running_loop().time()
            try:
                async with asyncio.timeout(deadline) as timer:
                    with endpoint.lane.bounding(timer, started, last):
                        response = await request()
            except TimeoutError:
                when = timer.when()
                if when is not None and when < started + self._deadline_s - 0.001:
                    # Far slower than the endpoint's replies: abandoned and retried, with a
                    # longer deadline; not a sign that the endpoint cannot be reached.
                    endpoint.lane.abandoned += 1
                    abandoned[0] += 1
                    raise DeadlineExceeded() from None
                self._not_reached(endpoint, DeadlineExceeded())
                raise DeadlineExceeded() from None
            except StatusError as exc:
                self._answered(endpoint, exc)
                if exc.status_code == 429:
                    endpoint.lane.rate_limited(ticket)
                raise
            except Unreachable as exc:  # timeouts too
                self._not_reached(endpoint, exc)
                raise
            finally:
                # The caller counts the reply's real cost before anything else runs.
                self.budget.release(reserved)
            self._check_json(endpoint, response)
            endpoint.breaker.reached()
            endpoint.lane.succeeded(ticket, asyncio.get_running_loop().time() - started)
            return response

    def _answered(self, endpoint: Endpoint, exc: StatusError) -> None:
        """Tell the breaker of an HTTP error reply: a reply of the API (a 429, a 400), or
        none of use (a 5xx, a redirect)."""
        if unusable_status(exc.status_code):
            self._unusable(endpoint, exc)
        else:
            endpoint.breaker.reached()

    def _check_json(self, endpoint: Endpoint, response: Any) -> None:
        """An :class:`UnusableReply`, counted towards the breaker, for a successful reply
        that is not JSON (a captive portal's or a proxy's page) or is JSON without the key
        every reply of the API has (``{}``, a proxy's own JSON)."""
        content = response
        marker = API_MARKERS.get(endpoint.role)
        if json_like(content):
            if marker is None or marker in content:
                return
            why = f"no {marker.decode()}"
        else:
            why = "not JSON"
        what = (
            "the judge's reply is not a chat completion"
            if endpoint.role == "generation"
            else "the embedding endpoint's reply is not a list of embeddings"
        )
        unusable = UnusableReply(f"{what} ({why}): {bytes(content or b'')[:80]!r}")
        self._unusable(endpoint, unusable)
        raise unusable

    @property
    def _deadline_s(self) -> float:
        return self.config.connect_timeout_s + self.config.timeout_s

    def _not_reached(self, endpoint: Endpoint, exc: BaseException) -> None:
        """Count a request that could not reach the endpoint towards its breaker."""
        was_open = endpoint.breaker.reason is not None
        endpoint.breaker.not_reached(self.redactor.redact(self._describe(exc)))
        self._note_opened(endpoint, was_open)

    def _unusable(self, endpoint: Endpoint, exc: BaseException) -> None:
        """Count a request that got no usable reply towards the endpoint's breaker."""
        was_open = endpoint.breaker.reason is not None
        endpoint.breaker.unusable(self.redactor.redact(self._describe(exc)))
        self._note_opened(endpoint, was_open)

    def _note_opened(self, endpoint: Endpoint, was_open: bool) -> None:
        """Record in the run's statistics a breaker that has just opened."""
        if not was_open and endpoint.breaker.reason is not None:
            self.stats.unusable_endpoints.append(endpoint.breaker.reason)

    def _describe(self, exc: BaseException) -> str:
        """What went wrong with a request, in a few words."""
        if isinstance(exc, StatusError):
            return status_text(exc)
        if isinstance(exc, DeadlineExceeded) or (isinstance(exc, Unreachable) and exc.timed_out):
            return f"timed out after {self.config.timeout_s:g} s"
        if isinstance(exc, Unreachable):
            return f"connection failed: {exc.detail}"
        if isinstance(exc, UnusableReply):
            return exc.detail
        return repr(exc)

    def failure(self, endpoint: Endpoint, exc: BaseException) -> LLMError:
        """The error to raise for a request that failed with ``exc`` (after its retries); a
        refusal also opens the endpoint's breaker. A call that could not reach an endpoint
        whose breaker is open fails with the breaker's reason."""
        if isinstance(exc, LLMError):
            return exc
        if isinstance(exc, StatusError) and exc.status_code in (401, 403, 404):
            was_open = endpoint.breaker.reason is not None
            endpoint.breaker.refuse(
                self.redactor.redact(
                    f"the {endpoint.role} endpoint refused the request: {status_text(exc)}"
                )
            )
            self._note_opened(endpoint, was_open)
            return CallFailed(endpoint.breaker.reason or "")
        if endpoint.breaker.unreachable and _no_reply(exc):
            return CallFailed(endpoint.breaker.reason or "")
        attempts = self.config.max_retries + 1
        what = self.redactor.redact(self._describe(exc))
        if retryable(exc):
            what += f" ({attempts} attempt{'s' if attempts != 1 else ''})"
        return CallFailed(self.redactor.redact(f"{endpoint.role} call failed: {what}"))

    def _retrying(self, endpoint: Endpoint) -> AsyncRetrying:
        """The retries after a first failed attempt."""
        return AsyncRetrying(
            stop=stop_after_attempt(self.config.max_retries),
            wait=self._backoff,
            retry=retry_if_exception(lambda exc: self._worth_retrying(endpoint, exc)),
            before_sleep=self._before_retry,
            reraise=True,
        )

    def _backoff(self, state: RetryCallState) -> float:
        exception = state.outcome.exception() if state.outcome is not None else None
        return self._wait_s(exception, state.attempt_number + 1)  # after the first attempt

    def _wait_s(self, exception: BaseException | None, attempt: int) -> float:
        """How long to wait after the failed ``attempt`` (counted from 1)."""
        server_asked = retry_after_s(exception)
        if server_asked is not None:
            # A little jitter, so calls told the same delay do not return in one burst.
            spread = max(0.01, server_asked * 0.1)
            return min(server_asked + random.uniform(0, spread), self.config.backoff_max_s)
        ceiling = min(
            self.config.backoff_max_s,
            self.config.backoff_initial_s * 2 ** (attempt - 1),
        )
        return random.uniform(ceiling / 2, ceiling)  # "equal jitter"

    def _before_retry(self, state: RetryCallState) -> None:
        self.stats.retries += 1


def _no_reply(exc: BaseException) -> bool:
    """Whether a request failed without a usable reply (what the breaker counts)."""
    if isinstance(exc, StatusError):
        return unusable_status(exc.status_code)
    return isinstance(exc, Unreachable | DeadlineExceeded | UnusableReply)


def retryable(exc: BaseException) -> bool:
    """Whether a failed request is worth sending again."""
    if isinstance(exc, Unreachable | DeadlineExceeded | UnusableReply):
        return True
    if isinstance(exc, StatusError):
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return False


def retry_after_s(exc: BaseException | None) -> float | None:
    """The delay a 429/503 response asks for (``retry-after-ms`` or ``Retry-After``)."""
    headers = exc.headers if isinstance(exc, StatusError) else None
    if headers is None:
        return None
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    seconds = headers.get("retry-after")
    if seconds is None:
        return None
    try:
        return max(0.0, float(seconds))
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(seconds)
    except (TypeError, ValueError):
        return None  # neither seconds nor an HTTP date: back off as usual
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.UTC)
    return max(0.0, parsed.timestamp() - time.time())


def status_text(exc: Any) -> str:
    """An HTTP error's status and message on one line, at most 300 characters."""
    message = getattr(exc, "message", None) or str(exc)
    status = getattr(exc, "status_code", None)
    text = f"{status} {message}" if status is not None else str(message)
    return " ".join(text.split())[:300]
