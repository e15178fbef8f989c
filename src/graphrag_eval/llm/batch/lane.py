"""The batch lane: the judge's requests of a run gathered into batches of the provider's
batch API (:class:`BatchLane`), each call waiting for its result, matched by custom id
(docs/llm.md, batch mode).

* A call adds its request to the batch being filled and waits. The batch is submitted when
  every item in flight (:meth:`BatchLane.item`) waits on the lane, when no request came for
  :data:`COLLECT_S` (an item waiting on something else, such as the same request in flight in
  another item), or when it is full (the provider's limits).
* Each batch is polled every ``llm.batch_poll_s`` (its status and counts go to
  :attr:`BatchLane.on_status`), and its results handed to the calls waiting for them, in any
  order. A multi-step metric's next request (verdicts after statements) goes in a later batch.
* Batch ids are checkpointed (:mod:`.checkpoint`) as soon as the provider gives them: a
  resumed run waits on the same batches for the same custom ids, and never submits a request
  twice.
* An error line is the call's error (an HTTP status error), which the engine's retries send
  again, in a later batch. A batch that expired, was cancelled or failed as a whole fails the
  calls it did not answer and stops the judge (its breaker), as an unusable endpoint: the run
  is incomplete, and ``--resume`` submits those requests again.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from graphrag_eval.errors import CallFailed
from graphrag_eval.llm.batch.checkpoint import BatchCheckpoint
from graphrag_eval.llm.batch.ids import custom_id, not_reached, usable_id
from graphrag_eval.llm.batch.protocol import (
    BatchCounts,
    BatchError,
    BatchProvider,
    BatchRequest,
    BatchResult,
    BatchStatus,
    SubmitUncertain,
)
from graphrag_eval.llm.client import Breaker
from graphrag_eval.llm.failures import StatusError
from graphrag_eval.llm.redaction import Redactor
from graphrag_eval.llm.repeat import current_repeat

__all__ = ["COLLECT_S", "BatchCounts", "BatchLane", "custom_id"]

logger = logging.getLogger("graphrag_eval")

COLLECT_S = 2.0
"""Seconds without a new request after which the requests gathered are submitted even though
some item in flight is not waiting on the lane."""

_ENCODER = msgspec.json.Encoder()
_LOST = ("expired", "cancelled", "failed")


@dataclass(slots=True)
class _Item:
    """An item in flight and how many of its calls wait on the lane."""

    waiting: int = 0


_ITEM: contextvars.ContextVar[_Item | None] = contextvars.ContextVar("batch_item", default=None)


@dataclass(slots=True)
class _Batch:
    batch_id: str
    custom_ids: list[str]
    lost_before: bool = False
    """Ended without answering every request in an earlier run: those are submitted again."""
    task: asyncio.Task[None] | None = None


@dataclass(slots=True)
class _Waiting:
    request: BatchRequest
    futures: list[asyncio.Future[BatchResult]] = field(default_factory=list)


class BatchLane:
    """Gathers, submits and polls the batches of one judge endpoint."""

    def __init__(
        self, provider: BatchProvider, poll_s: float, breaker: Breaker, redactor: Redactor
    ) -> None:
        self.provider = provider
        self.poll_s = poll_s
        self.breaker = breaker
        self.redactor = redactor
        self.counts = BatchCounts()
        self.checkpoint: BatchCheckpoint | None = None
        self.on_status: Callable[[BatchStatus], None] | None = None
        """Told each status polled (the CLI shows it on standard error)."""
        self._pending: dict[str, _Waiting] = {}
        """Requests not submitted yet, by custom id."""
        self._pending_bytes = 0
        self._submitted: dict[str, _Waiting] = {}
        """Requests waiting on a batch submitted, by custom id."""
        self._batch_of: dict[str, _Batch] = {}
        """The batch each custom id was last submitted in (this run or an interrupted one)."""
        self._unclaimed: dict[str, BatchResult] = {}
        """Results of a resumed batch no call asked for yet."""
        self._items = 0
        self._items_waiting = 0
        self._item_of: dict[asyncio.Future[BatchResult], _Item] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._check_scheduled = False

    def resume(self, checkpoint: BatchCheckpoint) -> None:
        """Checkpoint the batches in ``checkpoint`` from now on, and wait on those it already
        holds (an interrupted run's) for their custom ids."""
        self.checkpoint = checkpoint
        for saved in checkpoint.batches:
            batch = _Batch(saved.batch_id, saved.custom_ids, lost_before=saved.state in _LOST)
            for one in saved.custom_ids:
                self._batch_of[one] = batch

    # -- the items in flight ----------------------------------------------------------------

    @contextlib.contextmanager
    def item(self) -> Iterator[None]:
        """While an item is scored: its calls count towards "every item waits"."""
        state = _Item()
        token = _ITEM.set(state)
        self._items += 1
        try:
            yield
        finally:
            _ITEM.reset(token)
            self._items -= 1
            self._schedule_check()

    # -- a call -----------------------------------------------------------------------------

    async def post(self, path: str, body: dict[str, Any]) -> bytes:
        """Send one request in a batch; the reply body (the engine's shape), or the
        :class:`StatusError` of its error line, or :class:`CallFailed` for a batch lost."""
        self.breaker.check()
        request = BatchRequest(custom_id(path, body, current_repeat()), path, body)
        future: asyncio.Future[BatchResult] = asyncio.get_running_loop().create_future()
        self._enqueue(request, future)
        item = _ITEM.get()
        if item is not None and not future.done():
            self._item_of[future] = item
            item.waiting += 1
            if item.waiting == 1:
                self._items_waiting += 1
                self._schedule_check()
        try:
            result = await future
        finally:
            self._release(future)  # cancelled: no longer waiting
        if result.body is not None:
            return result.body
        error = result.error
        message = error.message if error is not None else "no result"
        status = error.status_code if error is not None and error.status_code else 500
        raise StatusError(status, self.redactor.redact(message), {"message": message}, {})

    def _release(self, future: asyncio.Future[BatchResult]) -> None:
        """The call of ``future`` waits no more: its item may be busy again. Done as its
        result is set, not when its task resumes, so that an item whose result is in does
        not count as waiting while it has not run yet."""
        item = self._item_of.pop(future, None)
        if item is not None:
            item.waiting -= 1
            if item.waiting == 0:
                self._items_waiting -= 1

    def _settle(
        self,
        future: asyncio.Future[BatchResult],
        result: BatchResult | None = None,
        error: BaseException | None = None,
    ) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        elif result is not None:
            future.set_result(result)
        self._release(future)

    def _enqueue(self, request: BatchRequest, future: asyncio.Future[BatchResult]) -> None:
        key = request.custom_id
        unclaimed = self._unclaimed.pop(key, None)
        if unclaimed is not None:
            future.set_result(unclaimed)
            return
        for waiting in (self._pending.get(key), self._submitted.get(key)):
            if waiting is not None:  # the same request in flight: one result for both
                waiting.futures.append(future)
                return
        batch = self._batch_of.get(key)
        if batch is not None:  # submitted by an interrupted run: wait on that batch
            self._submitted[key] = _Waiting(request, [future])
            if batch.task is None:
                self.counts.resumed += 1
                batch.task = self._start(self._follow(batch))
            return
        self._pending[key] = _Waiting(request, [future])
        self._pending_bytes += len(_ENCODER.encode(request.body)) + 200
        full = len(self._pending) >= self.provider.max_requests
        if full or self._pending_bytes >= self.provider.max_bytes:
            self._submit()
            return
        self._schedule_check()
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(COLLECT_S, self._submit)

    # -- batches ----------------------------------------------------------------------------

    def _schedule_check(self) -> None:
        """Check, once the tasks ready now have run, whether every item waits."""
        if not self._check_scheduled:
            self._check_scheduled = True
            asyncio.get_running_loop().call_soon(self._check)

    def _check(self) -> None:
        self._check_scheduled = False
        if self._pending and self._items_waiting >= self._items:
            self._submit()

    def _submit(self) -> None:
        """Submit the requests gathered as one batch."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        requests, self._pending, self._pending_bytes = self._pending, {}, 0
        self._submitted.update(requests)
        self._start(self._run(requests))

    def _start(self, work: Any) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _run(self, requests: dict[str, _Waiting]) -> None:
        """Submit ``requests``, checkpoint the batch, follow it."""
        ids = list(requests)
        try:
            self.breaker.check()
            batch_id = await self.provider.submit(
                [waiting.request for waiting in requests.values()]
            )
            if not usable_id(batch_id):  # it exists, but is not put in a path or checkpointed
                raise SubmitUncertain(
                    f"the batch API named the batch created {batch_id[:60]!r}"
                    f"{'...' if len(batch_id) > 60 else ''}, not a batch id graphrag-eval can use"
                )
        except SubmitUncertain as exc:  # it may exist: its calls are not retried
            reason = self.redactor.redact(
                f"{exc}; no more calls to the judge in this run: see the provider's batches "
                f"before --resume, which submits its {len(ids)} requests again"
            )
            self.counts.uncertain += len(ids)
            self.breaker.refuse(reason)
            self._fail_unsent(ids, CallFailed(reason))
            return
        except Exception as exc:  # nothing was submitted: the calls fail (and are retried)
            self._fail_unsent(ids, exc)
            return
        batch = _Batch(batch_id, ids)
        for key in ids:
            self._batch_of[key] = batch
        if self.checkpoint is not None:
            self.checkpoint.add(batch_id, ids)
        self.counts.batches += 1
        self.counts.submitted += len(ids)
        batch.task = asyncio.current_task()
        await self._follow(batch)

    def _fail_unsent(self, ids: list[str], error: BaseException) -> None:
        for key in ids:
            waiting = self._submitted.pop(key, None)
            for future in waiting.futures if waiting is not None else ():
                self._settle(future, error=error)

    async def _follow(self, batch: _Batch) -> None:
        """Poll ``batch`` until it ends, then hand out its results."""
        try:
            status = await self._poll(batch.batch_id)
            answered: set[str] = set()
            lost = status.state in _LOST
            # Read them all, then hand them out at once: every item whose result is in runs
            # before the lane looks whether every item waits (their next requests go in one
            # batch).
            results = [
                result
                async for result in self.provider.results(batch.batch_id)
                if not (lost and result.body is None and not_reached(result))
            ]
        except Exception as exc:  # the batch cannot be followed: its calls fail, unsent again
            reason = (
                f"the judge's batch {batch.batch_id} could not be followed ({exc}): "
                "no more calls to it in this run"
            )
            if isinstance(exc, StatusError) and exc.status_code == 404 and self.checkpoint:
                reason += (  # the provider does not know it: --resume alone is no way out
                    f"; if it was not made with this key and account, delete "
                    f"{self.checkpoint.path} to submit its requests again"
                )
            self._lose(batch, set(), self.redactor.redact(reason))
            return
        for result in results:
            if self._batch_of.get(result.custom_id) is batch:
                answered.add(result.custom_id)
                self._deliver(result)
        if self.checkpoint is not None:
            self.checkpoint.ended(batch.batch_id, status.state)
        if status.state == "ended":  # a request its files left out: an error, retried
            for key in batch.custom_ids:
                if key not in answered and self._batch_of.get(key) is batch:
                    missing = BatchError("the batch's files hold no result for this request")
                    self._deliver(BatchResult(key, error=missing))
            return
        if batch.lost_before:
            self._resubmit(batch, answered)
            return
        why = f" ({status.reason})" if status.reason else ""
        reason = (
            f"the judge's batch {batch.batch_id} is {status.status}{why} "
            f"({status.done} of {status.total} requests done): no more calls to it in this run"
        )
        self._lose(batch, answered, reason)

    async def _poll(self, batch_id: str) -> BatchStatus:
        while True:
            status = await self.provider.status(batch_id)
            if self.on_status is not None:
                self.on_status(status)
            if status.terminal:
                return status
            await asyncio.sleep(self.poll_s)

    def _deliver(self, result: BatchResult) -> None:
        key = result.custom_id
        self._batch_of.pop(key, None)
        if result.error is not None:
            self.counts.errors += 1
        waiting = self._submitted.pop(key, None)
        if waiting is None:
            self._unclaimed[key] = result  # a resumed batch's, asked for later (or never)
            return
        for future in waiting.futures:
            self._settle(future, result)

    def _lose(self, batch: _Batch, answered: set[str], reason: str) -> None:
        """Fail the calls ``batch`` did not answer, and stop the judge."""
        lost = [key for key in batch.custom_ids if key not in answered]
        if not lost:
            return
        self.counts.lost += len(lost)
        self.breaker.refuse(reason)
        for key in lost:
            if self._batch_of.get(key) is batch:
                del self._batch_of[key]
            waiting = self._submitted.pop(key, None)
            for future in waiting.futures if waiting is not None else ():
                self._settle(future, error=CallFailed(reason))

    def _resubmit(self, batch: _Batch, answered: set[str]) -> None:
        """The requests an interrupted run's lost batch did not answer go in a new batch."""
        for key in batch.custom_ids:
            if key in answered or self._batch_of.get(key) is not batch:
                continue
            del self._batch_of[key]
            waiting = self._submitted.pop(key, None)
            if waiting is not None:
                self._pending[key] = waiting
                self._pending_bytes += len(_ENCODER.encode(waiting.request.body)) + 200
        if self._pending:
            self._schedule_check()
            self._timer = asyncio.get_running_loop().call_later(COLLECT_S, self._submit)

    # -- the end ----------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop following the batches (they go on at the provider: ``--resume`` collects
        them) and close the provider's connections."""
        if self._timer is not None:
            self._timer.cancel()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        await self.provider.close()
