"""The services a metric reaches for one item (:attr:`ItemContext.services
<graphrag_eval.metrics.base.ItemContext.services>`), typed: the run's judge, its embedding
model, BERTScore's model, and a SPARQL store (:class:`SparqlStore`). Each is ``None`` when
the run has none; the plan runs a metric only with the services it ``needs``
(docs/metrics.md, "How metrics are planned"), so a metric may take them as given
(docs/extending.md). They are assembled by :mod:`graphrag_eval.evaluation.services`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from graphrag_eval.graph.execution import GraphStore

if TYPE_CHECKING:
    from graphrag_eval.llm.engine import LLMEngine
    from graphrag_eval.llm.services import Embedder, PairScorer

__all__ = ["Services", "SparqlStore", "need"]

S = TypeVar("S")


SparqlStore = GraphStore
"""The SPARQL store a metric may query: a :class:`~graphrag_eval.graph.GraphStore`, read-only
(``await store.execute(query)`` gives an :class:`~graphrag_eval.graph.Execution`)."""


def _unchanged(text: str) -> str:
    return text


@dataclass(frozen=True, slots=True)
class Services:
    """What a run offers its metrics; ``None`` where it has nothing."""

    judge: LLMEngine | None = None
    """The LLM judge (``llm.generation``): ``judge.judge(messages, parse, metric=...)``,
    with the engine's limits, retries, cache, cost accounting, cost cap and dry run."""
    embedder: Embedder | None = None
    """The embedding model (``llm.embedding``, or the local model):
    ``embedder.embed(texts, metric=...)``."""
    bert_scorer: PairScorer | None = None
    """BERTScore's local model: ``bert_scorer.scores(pairs, metric=...)``."""
    store: GraphStore | None = None
    """The SPARQL store the run queries."""
    redact: Callable[[str], str] = _unchanged
    """Scrubs every secret the run's clients hold from a text (docs/security.md)."""

    @property
    def provided(self) -> frozenset[str]:
        """The names of the services present, as metrics' ``needs`` names them."""
        present = {
            "judge": self.judge,
            "embeddings": self.embedder,
            "bert_model": self.bert_scorer,
            "store": self.store,
        }
        return frozenset(name for name, service in present.items() if service is not None)


def need(service: S | None, name: str) -> S:
    """``service``, which the plan guarantees to a metric that ``needs`` it (``name``): its
    absence is a bug, raised as such."""
    if service is None:
        raise RuntimeError(f"no {name}: the plan should have skipped this metric")
    return service
