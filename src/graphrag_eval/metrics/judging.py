"""What the LLM-judged metrics share: finding the engine, the system prompt, messages, and
turning engine failures into outcomes."""

from __future__ import annotations

from collections.abc import Sequence

from graphrag_eval.llm.engine import LLMEngine
from graphrag_eval.llm.prompts import prompt
from graphrag_eval.metrics.base import ItemContext

__all__ = ["NO_EMBEDDING", "NO_JUDGE", "engine_of", "format_contexts", "messages"]

NO_JUDGE = "no LLM judge is configured (llm.generation)"
NO_EMBEDDING = "no embedding model is configured (llm.embedding)"


def engine_of(context: ItemContext) -> LLMEngine | None:
    """The run's engine, if it has one."""
    engine = context.services.get("llm")
    return engine if isinstance(engine, LLMEngine) else None


def messages(user: str) -> list[dict[str, str]]:
    """The chat messages of a judge call: the shared system prompt and ``user``."""
    return [
        {"role": "system", "content": prompt("system")},
        {"role": "user", "content": user},
    ]


def format_contexts(texts: Sequence[str]) -> str:
    """Contexts numbered in rank order, one per paragraph."""
    return "\n\n".join(f"[{rank}] {text.strip()}" for rank, text in enumerate(texts, start=1))
