"""How graphrag-eval uses Python's cyclic garbage collector (docs/benchmarks.md, "Garbage
collection").

A run allocates many small objects that outlive a few hundred allocations (parsed inputs,
parsed SPARQL results, per-item results), so with CPython's default threshold (a collection
of the youngest generation every 700 net allocations) the collector runs about a thousand
times in 10,000 questions and took about a quarter of a run's time. Raising that threshold
while a run is in progress removes most of those passes without changing the peak memory.
Reading the inputs, reading saved results back, aggregating them and rendering the report
build objects that hold no cycles, so the collector is paused while they do. The inputs a run
reads (:func:`input_reading`) and the objects alive when it starts (:func:`inputs_frozen`)
are left out of the collector's passes until the run ends, so that no pass walks them: with
the default settings, the passes over the reference alone took a third of its reading time.
All of these restore what they changed, and leave a process's own settings alone (a
threshold already raised, or the collector disabled).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = [
    "RUN_THRESHOLD",
    "collection_paused",
    "fewer_collections",
    "input_reading",
    "inputs_frozen",
]

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


@contextlib.contextmanager
def inputs_frozen() -> Iterator[None]:
    """The objects alive at the start are left out of every collection until the end
    (``gc.freeze``), then given back to the oldest generation (``gc.unfreeze``: its next pass
    frees any of them that became cyclic garbage meanwhile); so are the inputs read before
    (:func:`input_reading`). Without this, the full passes of a run would walk its inputs
    again and again."""
    if not gc.isenabled():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextlib.contextmanager
def input_reading() -> Iterator[None]:
    """No cyclic collection while an input is read (what it builds holds no cycles), and what
    exists at the end is then left out of every pass (``gc.freeze``) until a run ends
    (:func:`inputs_frozen`): re-enabled alone, the collector's next pass would walk every
    object the input built, all of them still in its youngest generation. In a process that
    reads inputs but runs nothing, they stay out of the passes: an object among them that
    becomes cyclic garbage is freed only by a later run's end (``gc.unfreeze``)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
