"""The kind of a failed judge or embedding call (:class:`~graphrag_eval.metrics.base.FailureKind`),
decided once, where the engine's error becomes a metric's failure (:func:`failure_of`).

The engine's errors say why no reply came by their class (the cost limit, a reply that cannot
be used) or, for a failed call, by their message (graphrag_eval.llm: ``retrying.py``,
``client.py``, ``chat.py``): :func:`kind_of_message` reads it, here only, and for a record
saved before kinds were written (docs/outputs.md, ``failure_kinds``).
``tests/cli/test_cli_resume_causes.py`` makes each message against the test judge server, so a
reworded message fails there.
"""

from __future__ import annotations

import re

from graphrag_eval.errors import (
    BudgetExhausted,
    LLMError,
    MalformedReply,
    TruncatedReply,
)
from graphrag_eval.metrics.base import Failed, FailureKind

__all__ = ["failure_of", "kind_of", "kind_of_message"]

# The messages that mean no reply came, matched in this order.
_PATTERNS: tuple[tuple[FailureKind, re.Pattern[str]], ...] = (
    (FailureKind.BUDGET, re.compile(r"the cost limit of \$\S+ was reached")),
    (FailureKind.UNREACHABLE, re.compile(r" unreachable \(.*: no more calls to it in this run")),
    (FailureKind.REFUSED, re.compile(r"\brefused the request: ")),
    (FailureKind.ENDPOINT, re.compile(r"no more calls to it in this run")),  # any other breaker
    (FailureKind.UNREACHABLE, re.compile(r"^\w+ call failed: (connection failed|timed out)")),
    (FailureKind.ENDPOINT, re.compile(r"^\w+ call failed: ")),
)


def kind_of_message(error: str) -> FailureKind | None:
    """The kind of an engine's error message when it says no reply came (an endpoint could
    not be reached, refused the request or kept failing) or the cost limit stopped the call;
    ``None`` for any other message."""
    for kind, pattern in _PATTERNS:
        if pattern.search(error):
            return kind
    return None


def kind_of(exc: LLMError) -> FailureKind:
    """The kind of a failed call: by its error's class, else by its message; a reply that
    came and cannot be used otherwise."""
    if isinstance(exc, BudgetExhausted):
        return FailureKind.BUDGET
    if isinstance(exc, MalformedReply | TruncatedReply):
        return FailureKind.REPLY
    return kind_of_message(str(exc)) or FailureKind.REPLY


def failure_of(exc: LLMError, source: str = "") -> Failed:
    """A metric's failure for the error of its call, with the kind of the error."""
    return Failed(str(exc), kind_of(exc), source)
