"""Retrieval metrics over context ids and texts (docs/metrics.md, "Deterministic metrics").

``recall_at_k`` and ``average_precision`` work on any hashable ids. Context lists come from a
retrieval step's output: a JSON list whose items are ``{"id": ..., "text": ...}`` objects or
plain strings.

Definitions (documented in docs/metrics.md):

* ``recall_at_k(relevant, retrieved, k) = |first k relevant ∩ first k retrieved| /
  min(k, |relevant|)``, 0 when nothing is relevant. An unordered collection (a set) of
  relevant ids has no "first k": all of it is used.
* ``average_precision(relevant, retrieved) = (Σ over ranks i of relevant retrieved items of
  hits_i / i) / |relevant|``. The seed tool divides by the number of hits instead
  and prints 0.8056 for its example; the standard definition used here gives 0.6042.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

from rapidfuzz import fuzz

__all__ = [
    "Context",
    "ContextScores",
    "average_precision",
    "context_key",
    "parse_contexts",
    "recall_at_k",
    "score_contexts",
    "text_similarity",
]


def _unique(items: Iterable[Hashable]) -> list[Hashable]:
    return list(dict.fromkeys(items))


def recall_at_k(relevant: Collection[Hashable], retrieved: Sequence[Hashable], k: int) -> float:
    """Share of the (first ``k``) relevant items found among the first ``k`` retrieved ones.

    >>> recall_at_k({1, 3, 5, 6}, [1, 4, 3, 5, 7], k=5)
    0.75
    """
    k = operator.index(k)  # an integer (TypeError otherwise), not 2.0
    if k <= 0:
        return 0.0
    relevant_items = _unique(relevant)
    if not relevant_items:
        return 0.0
    considered = set(relevant_items) if isinstance(relevant, Set) else set(relevant_items[:k])
    top_k = set(list(retrieved)[:k])  # a repeated item still takes one of the k places
    return len(considered & top_k) / min(k, len(relevant_items))


def average_precision(relevant: Collection[Hashable], retrieved: Sequence[Hashable]) -> float:
    """Mean over relevant items of the precision at the rank where each was retrieved
    (0 for relevant items never retrieved).

    >>> round(average_precision({1, 3, 5, 6}, [1, 4, 3, 5, 7]), 4)
    0.6042
    """
    relevant_set = set(relevant)
    if not relevant_set:
        return 0.0
    hits = 0
    total = 0.0
    seen: set[Hashable] = set()
    for rank, item in enumerate(retrieved, start=1):
        if item in relevant_set and item not in seen:  # a repeat is not a new hit
            seen.add(item)
            hits += 1
            total += hits / rank
    return total / len(relevant_set)


# --------------------------------------------------------------------------------------------
# Contexts


@dataclass(frozen=True, slots=True)
class Context:
    """One retrieved or reference context: an optional id and an optional text."""

    id: str | None
    text: str | None


def parse_contexts(value: Any) -> tuple[Context, ...]:
    """Contexts from a retrieval output: JSON text or an already-decoded list of
    ``{id?, text?}`` objects or strings. Raises ``ValueError`` when it is neither."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ValueError("not a JSON list of contexts") from None
    if not isinstance(value, list | tuple):
        raise ValueError("not a list of contexts")
    contexts = []
    for index, item in enumerate(value):
        if isinstance(item, str):
            contexts.append(Context(id=None, text=item))
        elif isinstance(item, Mapping):
            raw_id, text = item.get("id"), item.get("text")
            if raw_id is not None and not isinstance(raw_id, str | int):
                raise ValueError(f"context {index} has an id that is not a string")
            if text is not None and not isinstance(text, str):
                raise ValueError(f"context {index} has a text that is not a string")
            if raw_id is None and text is None:
                raise ValueError(f"context {index} has neither 'id' nor 'text'")
            contexts.append(Context(id=str(raw_id) if raw_id is not None else None, text=text))
        else:
            raise ValueError(f"context {index} is neither an object nor a string")
    return tuple(contexts)


def context_key(context: Context) -> str:
    """What identifies a context for recall@k: its id, or its text when it has no id."""
    return context.id if context.id is not None else f"text:{context.text}"


_SPACES = re.compile(r"\s+")


def _normalise(text: str) -> str:
    return _SPACES.sub(" ", text.casefold()).strip()


def text_similarity(a: str, b: str) -> float:
    """Normalised similarity of two texts in [0, 1] (rapidfuzz ratio after case and
    whitespace folding); 1.0 for two empty texts."""
    left, right = _normalise(a), _normalise(b)
    if not left and not right:
        return 1.0
    return float(fuzz.ratio(left, right)) / 100.0


@dataclass(frozen=True, slots=True)
class ContextScores:
    """``recall``: share of reference contexts found among the retrieved ones. ``precision``:
    average precision of the retrieved list, each reference context making at most one
    retrieved context relevant. ``f1``: their harmonic mean (0 when both are 0)."""

    recall: float
    precision: float

    @property
    def f1(self) -> float:
        total = self.recall + self.precision
        return 2 * self.recall * self.precision / total if total else 0.0


def _similarity(reference: Context, retrieved: Context, threshold: float) -> float:
    """1.0 for equal ids; else text similarity if it reaches the threshold; else 0."""
    if reference.id is not None and retrieved.id is not None:
        return 1.0 if reference.id == retrieved.id else 0.0
    if reference.text is None or retrieved.text is None:
        return 0.0
    similarity = text_similarity(reference.text, retrieved.text)
    return similarity if similarity >= threshold else 0.0


def score_contexts(
    reference: Sequence[Context], retrieved: Sequence[Context], threshold: float = 0.5
) -> ContextScores:
    """Compare retrieved contexts with reference contexts (by id when both have one, else by
    text similarity >= ``threshold``). Raises ``ValueError`` when there is no reference."""
    if not reference:
        raise ValueError("the reference step has no contexts")
    similarity = [[_similarity(ref, ret, threshold) for ref in reference] for ret in retrieved]
    found = sum(1 for r in range(len(reference)) if any(row[r] > 0 for row in similarity))
    claimed: set[int] = set()
    hits = 0
    total = 0.0
    for rank, row in enumerate(similarity, start=1):
        best = max(
            (r for r in range(len(reference)) if row[r] > 0 and r not in claimed),
            key=lambda r: row[r],
            default=None,
        )
        if best is not None:
            claimed.add(best)
            hits += 1
            total += hits / rank
    return ContextScores(recall=found / len(reference), precision=total / len(reference))
