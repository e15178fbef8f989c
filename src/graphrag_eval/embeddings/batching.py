"""Batching of local-model work: the texts that concurrent items ask for while a forward
pass is running go together in the next one, so a run of 1,000 items makes a few dozen
passes, not 1,000.

Every pass runs off the event loop, in one worker thread shared by all local models (torch
spreads the arithmetic over the cores itself; two passes at once would only compete for
them). See docs/llm.md (local models).
"""

from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

__all__ = ["Batcher"]

X = TypeVar("X")
Y = TypeVar("Y")

_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _worker() -> ThreadPoolExecutor:
    """The one thread every local model runs in."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="graphrag-eval-local")
        return _executor


class Batcher(Generic[X, Y]):
    """Runs ``work`` (blocking, one result per input, in order) in the worker thread on the
    inputs of every request that arrived while the previous batch was running, up to
    ``max_batch`` inputs at a time (a larger request goes alone)."""

    def __init__(self, work: Callable[[list[X]], list[Y]], max_batch: int) -> None:
        self.work = work
        self.max_batch = max(1, max_batch)
        self._pending: collections.deque[tuple[list[X], asyncio.Future[list[Y]]]] = (
            collections.deque()
        )
        self._runner: asyncio.Task[None] | None = None
        self.batches = 0
        """Batches run so far."""

    async def run(self, inputs: Sequence[X]) -> list[Y]:
        """The results of ``inputs``, in order."""
        if not inputs:
            return []
        future: asyncio.Future[list[Y]] = asyncio.get_running_loop().create_future()
        self._pending.append((list(inputs), future))
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            batch = [self._pending.popleft()]
            size = len(batch[0][0])
            while self._pending and size + len(self._pending[0][0]) <= self.max_batch:
                batch.append(self._pending.popleft())
                size += len(batch[-1][0])
            flat = [item for inputs, _ in batch for item in inputs]
            self.batches += 1
            try:
                results = await loop.run_in_executor(_worker(), self.work, flat)
                if len(results) != len(flat):
                    raise RuntimeError(f"{len(results)} results for {len(flat)} inputs")
            except Exception as exc:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            start = 0
            for inputs, future in batch:
                if not future.done():
                    future.set_result(results[start : start + len(inputs)])
                start += len(inputs)
