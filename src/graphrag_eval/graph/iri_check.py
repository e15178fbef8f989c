"""``unknown_iri``: the IRIs of an actual query that the graph does not contain, asked of the
store with one ``ASK`` per IRI (docs/knowledge-graph.md, "Why a query is wrong:
``query_diagnosis``"). Bounded: at most :data:`MAX_CHECKED_IRIS` IRIs per query, each asked
once per store and run (the answers are kept while the store is), and an IRI whose ``ASK``
fails (a timeout, an error) is never called unknown."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Sequence
from typing import Final

from graphrag_eval.graph.execution import GraphStore

__all__ = ["MAX_CHECKED_IRIS", "ask_contains", "unknown_iris"]

MAX_CHECKED_IRIS: Final = 10
"""IRIs of one actual query asked about at most (the first ones, in the query's order)."""
MAX_REMEMBERED: Final = 100_000
"""Answers kept per store at most (beyond, an IRI is asked again)."""

_answers: weakref.WeakKeyDictionary[object, dict[str, bool | None]] = weakref.WeakKeyDictionary()


def ask_contains(iri: str) -> str:
    """The ``ASK`` query: whether ``iri`` is a subject, predicate, object or graph name of
    the default graph or of a named graph."""
    term = f"<{iri}>"
    anywhere = f"{{ {term} ?p ?o }} UNION {{ ?s {term} ?o }} UNION {{ ?s ?p {term} }}"
    named = f"{{ GRAPH ?g {{ {anywhere} }} }} UNION {{ GRAPH {term} {{ ?s ?p ?o }} }}"
    return f"ASK {{ {anywhere} UNION {named} }}"


def _usable(iri: str) -> bool:
    """An IRI that can be written between ``<>`` as it is (never a way to alter the
    ``ASK``)."""
    return bool(iri) and not any(c in iri for c in '<>"{}|^`\\') and all(ord(c) > 0x20 for c in iri)


async def unknown_iris(store: GraphStore, iris: Sequence[str]) -> list[str]:
    """The IRIs of ``iris`` (the first :data:`MAX_CHECKED_IRIS` that can be asked about)
    the store says it does not contain."""
    checked = [iri for iri in dict.fromkeys(iris) if _usable(iri)][:MAX_CHECKED_IRIS]
    try:
        answers = _answers.setdefault(store, {})
    except TypeError:  # a store that cannot be referred to weakly: nothing kept
        answers = {}
    asked = [iri for iri in checked if iri not in answers]
    results = await asyncio.gather(*(_contains(store, iri) for iri in asked))
    if len(answers) + len(asked) <= MAX_REMEMBERED:
        answers.update(zip(asked, results, strict=True))
    known = dict(zip(asked, results, strict=True))
    return [iri for iri in checked if answers.get(iri, known.get(iri)) is False]


async def _contains(store: GraphStore, iri: str) -> bool | None:
    """Whether the store contains ``iri``; ``None`` when the ``ASK`` failed."""
    execution = await store.execute(ask_contains(iri))
    if not execution.ok or execution.results is None:
        return None
    answer = execution.results.get("boolean")
    return answer if isinstance(answer, bool) else None
