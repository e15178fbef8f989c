"""Running rdflib's SPARQL parser and algebra with room to recurse (docs/knowledge-graph.md,
"Why a query is wrong: ``query_diagnosis``").

rdflib parses with pyparsing, recursively: a query of 3,000 characters needs a few thousand
frames, more when pyparsing's packrat cache is on, which any library of the process may turn
on for all (matplotlib does). So every call runs on a thread of its own with a large stack,
under a recursion limit raised for the call, one call at a time; a query deeper than that
still fails with ``RecursionError``, which the callers turn into "no diagnosis".
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Final, TypeVar

__all__ = ["RECURSION_LIMIT", "deep_call"]

T = TypeVar("T")

RECURSION_LIMIT: Final = 20_000
"""The recursion limit during a call (at least; a higher one the process set is kept)."""
_STACK_BYTES: Final = 512 * 1024 * 1024
"""The call's thread stack: address space reserved, used only as deep as the call goes."""
_ONE_AT_A_TIME = threading.Lock()


def deep_call(function: Callable[[], T]) -> T:
    """``function()``, run with room to recurse; its exception is raised here."""
    outcome: list[T] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            outcome.append(function())
        except BaseException as exc:
            failure.append(exc)

    with _ONE_AT_A_TIME:
        previous_stack = threading.stack_size(_STACK_BYTES)
        previous_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(previous_limit, RECURSION_LIMIT))
        try:
            thread = threading.Thread(target=work, name="graphrag-eval-sparql-parser")
            thread.start()
            thread.join()
        finally:
            threading.stack_size(previous_stack)
            sys.setrecursionlimit(previous_limit)
    if failure:
        raise failure[0]
    return outcome[0]
