"""How graphrag-eval uses Python's cyclic garbage collector (docs/benchmarks.md, "Garbage
collection").

A run allocates many small objects that outlive a few hundred allocations (parsed inputs,
parsed SPARQL results, per-item results), so with CPython's default threshold (a collection
of the youngest generation every 700 net allocations) the collector runs about a thousand
times in 10,000 questions and took about a quarter of a run's time. Raising that threshold
while a run is in progress removes most of those passes without changing the peak memory.
Reading the inputs, reading saved results back, aggregating them and rendering the report
build objects that hold no cycles, so the collector is paused while they do. The objects alive
when a run starts (:func:`inputs_frozen`), and the inputs a command reads for a run
(:func:`input_reading` within :func:`reading_for_run`) from the moment they are read, are left
out of the collector's passes until the run ends, so that no pass walks them: with the default
settings, the passes over the reference alone took a third of its reading time.
All of these restore what they changed, and leave a process's own settings alone (a
threshold already raised, the collector disabled, or objects it froze itself).
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
    "reading_for_run",
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


_reading_for_run = 0
"""How many :func:`reading_for_run` scopes are open (the inputs read within are frozen)."""
_frozen_here = False
"""Whether the permanent generation holds what this module froze (and nobody else's)."""


def _freeze() -> None:
    """``gc.freeze``, unless something else froze objects first (an application that
    preforks, say): those are left as they are, and nothing is frozen here."""
    global _frozen_here
    if _frozen_here or gc.get_freeze_count() == 0:
        gc.freeze()
        _frozen_here = True


def _unfreeze() -> None:
    """``gc.unfreeze`` of what :func:`_freeze` froze, and only that."""
    global _frozen_here
    if _frozen_here:
        gc.unfreeze()
        _frozen_here = False


@contextlib.contextmanager
def inputs_frozen() -> Iterator[None]:
    """The objects alive at the start are left out of every collection until the end
    (``gc.freeze``), then given back to the oldest generation (``gc.unfreeze``: its next pass
    frees any of them that became cyclic garbage meanwhile). Without this, the full passes of
    a run would walk its inputs again and again. Objects the process froze itself are left
    frozen, and nothing more is frozen then."""
    if not gc.isenabled():
        yield
        return
    _freeze()
    with reading_for_run():  # inputs the run reads itself are frozen as they are read
        try:
            yield
        finally:
            _unfreeze()


@contextlib.contextmanager
def reading_for_run() -> Iterator[None]:
    """A command that reads its inputs, then runs them: the inputs read within
    (:func:`input_reading`) are left out of every pass from the moment they are read until a
    run within ends, or else this scope. Outside such a scope (a library call that only reads
    inputs) nothing is frozen, so no object of a long-lived process is kept out of the passes
    after the call."""
    global _reading_for_run
    _reading_for_run += 1
    try:
        yield
    finally:
        _reading_for_run -= 1
        if _reading_for_run == 0:
            _unfreeze()


@contextlib.contextmanager
def input_reading() -> Iterator[None]:
    """No cyclic collection while an input is read (what it builds holds no cycles). Within
    :func:`reading_for_run`, what exists at the end is then left out of every pass
    (``gc.freeze``): re-enabled alone, the collector's next pass would walk every object the
    input built, all of them still in its youngest generation."""
    enabled = gc.isenabled()  # a collector the process disabled is left alone
    with collection_paused():
        try:
            yield
        finally:
            if enabled and _reading_for_run:
                _freeze()  # before the collector is on again
