"""Requests being made right now, by cache key: a second request for the same key (two
metrics sharing a prompt, or embedding the same texts) waits for the first and then takes
its reply from the cache rather than paying twice. Only with the cache (docs/llm.md, cache).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

__all__ = ["InFlight"]


class InFlight:
    """The keys being fetched, each with a future that is set when the fetch ends. Disabled
    (nothing waits, nothing is marked) when there is no cache to share replies through."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._fetching: dict[str, asyncio.Future[None]] = {}

    async def wait_for(self, keys: Iterable[str]) -> bool:
        """Wait until no fetch of ``keys`` is running; whether there was one."""
        if not self.enabled:
            return False
        leaders = {self._fetching[key] for key in keys if key in self._fetching}
        if leaders:
            await asyncio.wait(leaders)
        return bool(leaders)

    @contextmanager
    def fetching(self, keys: Iterable[str]) -> Iterator[None]:
        """Mark ``keys`` as being fetched (those not already marked by another call)."""
        if not self.enabled:
            yield
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        mine = [key for key in keys if key not in self._fetching]
        for key in mine:
            self._fetching[key] = done
        try:
            yield
        finally:
            for key in mine:
                del self._fetching[key]
            done.set_result(None)
