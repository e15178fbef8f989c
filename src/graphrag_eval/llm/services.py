"""What the engine and the metrics use of the run's models besides the judge: an embedding
model (:class:`Embedder`, with what its vectors cost, :class:`Embedded`) and BERTScore's
(:class:`PairScorer`). They are declared here and implemented in
:mod:`graphrag_eval.embeddings` (a local model, an endpoint), which builds on the engine's
call context; they are built where the run's services are assembled
(:mod:`graphrag_eval.evaluation.services`), so this package never imports that one. See
docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from graphrag_eval.llm.pricing import TokenUsage

if TYPE_CHECKING:
    from graphrag_eval.llm.client import Endpoint

__all__ = ["Embedded", "Embedder", "PairScorer"]


@dataclass(frozen=True, slots=True)
class Embedded:
    """Embedding vectors with what they cost (nominal, as
    :attr:`graphrag_eval.llm.judge.Judged.cost_usd`)."""

    vectors: list[list[float]]
    usage: TokenUsage
    cost_usd: float


class Embedder(Protocol):
    """An embedding model of a run."""

    model: str
    """The model's name as configured."""
    identity: str
    """What identifies the model in cache keys."""

    @property
    def endpoint(self) -> Endpoint | None:
        """The endpoint it calls (``None``: it runs in-process): its limits are the judge's
        when both serve the same model there, its breaker can make the run incomplete, and
        its client may know the model's price."""
        ...

    async def embed(self, texts: Sequence[str], *, metric: str) -> Embedded:
        """The vectors of ``texts`` (in order), batched and cached per text; an
        :class:`~graphrag_eval.errors.LLMError` when they cannot be had."""
        ...

    def plan(self, metric: str, tokens: int, texts: int) -> None:
        """In a dry run, count embedding ``texts`` of about ``tokens`` tokens."""
        ...

    async def aclose(self) -> None:
        """Release what the model holds (an HTTP client)."""
        ...


class PairScorer(Protocol):
    """BERTScore's model: scores of text pairs."""

    async def scores(
        self, pairs: Sequence[tuple[str, str]], *, metric: str
    ) -> list[tuple[float, float, float]]:
        """BERTScore (precision, recall, F1; 0-1) of each ``(candidate, reference)`` pair,
        batched and cached per pair."""
        ...
