"""How graphrag-eval uses Python's cyclic garbage collector (docs/benchmarks.md, "Garbage
collection").

A run allocates many small objects that outlive a few hundred allocations (parsed inputs,
parsed SPARQL results, per-item results), so with CPython's default threshold (a collection
of the youngest generation every 700 net allocations) the collector runs about a thousand
times in 10,000 questions and took about a quarter of a run's time. Raising that threshold
while a run is in progress removes most of those passes without changing the peak memory.
Reading saved results back, aggregating them and rendering the report build objects that
hold no cycles, so the collector is paused while they do. Both restore what they changed, and
leave a process's own settings alone (a threshold already raised, or the collector disabled).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["RUN_THRESHOLD", "collection_paused", "fewer_collections"]

RUN_THRESHOLD = 10_000
"""The youngest generation's threshold during a run (CPython's default is 700)."""


@contextlib.contextmanager
def fewer_collections(threshold: int = RUN_THRESHOLD) -> Iterator[None]:
    """Collect the youngest generation every ``threshold`` net allocations instead of 700."""
    before = gc.get_threshold()
    if not gc.isenabled() or before[0] == 0 or before[0] >= threshold:
        yield
        return
    gc.set_threshold(threshold, *before[1:])
    try:
        yield
    finally:
        if gc.get_threshold()[0] == threshold:  # unless someone else changed it meanwhile
            gc.set_threshold(*before)


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """No cyclic collection while objects without cycles are built (typed results read
    back): each collection their allocations would trigger rescans every object built so
    far."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
