"""Which repeat of a judged metric a judge call belongs to (``llm.repeats``, docs/llm.md,
"Repeats and judge noise"): a context variable the scoring of an item sets around each
repeat, which :mod:`graphrag_eval.llm.judge` adds to the cache key of every call but the
first repeat's. Repeat 0 keeps the key a run without repeats has (a cache made before
repeats serves it); repeat ``i > 0`` is a request of its own, cached apart and never shared
with another repeat in flight, so a re-run is free and the repeats are not one reply."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["current_repeat", "repeat_scope"]

_REPEAT: ContextVar[int] = ContextVar("graphrag_eval_judge_repeat", default=0)


def current_repeat() -> int:
    """The repeat the calls made now belong to (0 outside any :func:`repeat_scope`)."""
    return _REPEAT.get()


@contextmanager
def repeat_scope(index: int) -> Iterator[None]:
    """Make the judge calls of this block (and of the tasks it starts) repeat ``index``."""
    token = _REPEAT.set(index)
    try:
        yield
    finally:
        _REPEAT.reset(token)
