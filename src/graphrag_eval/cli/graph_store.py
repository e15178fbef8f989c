"""The store ``evaluate`` executes SPARQL steps against, beside the judge engine: opened before
any work, closed at the end, and, when it became unusable during the run, the line of an
incomplete run, exit 3, as for a judge endpoint (docs/knowledge-graph.md)."""

from __future__ import annotations

from graphrag_eval.config import EvaluationConfig
from graphrag_eval.evaluation.services import open_run_store
from graphrag_eval.graph.execution import GraphStore
from graphrag_eval.llm.engine import LLMEngine

__all__ = ["RunServices", "close_all", "open_services", "store_incomplete"]

RunServices = tuple[LLMEngine | None, GraphStore | None]
"""A run's judge engine and store, each ``None`` when it has none."""


def open_services(engine: LLMEngine | None, config: EvaluationConfig) -> RunServices:
    """``engine`` and the store ``config`` names, opened (a store that cannot be is a
    :class:`~graphrag_eval.errors.ConfigError` or an :class:`~graphrag_eval.errors.InputError`,
    before any work: the command's one line and exit 2)."""
    return engine, open_run_store(config)


async def close_all(services: RunServices) -> None:
    """Close the engine and the store of a run."""
    engine, store = services
    if engine is not None:
        await engine.aclose()
    if store is not None:
        await store.aclose()


def store_incomplete(store: GraphStore | None, incomplete: str | None) -> str | None:
    """``incomplete`` (the run's own line, or ``None``) with a line naming the store when it
    became unusable: its steps executed after that have errors, which ``--resume`` keeps, so
    the whole run is to be done again."""
    why = store.unusable if store is not None else None
    if store is None or why is None:
        return incomplete
    line = (
        f"evaluation incomplete: the SPARQL store {store.identity.label} became unusable "
        f"({why}); the SPARQL steps executed after that have its error; when that is fixed, "
        "run the command again with --overwrite"
    )
    return line if incomplete is None else f"{incomplete}\n{line}"
