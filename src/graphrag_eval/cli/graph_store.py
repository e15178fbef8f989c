"""The store ``evaluate`` executes SPARQL steps against, beside the judge engine: opened before
any work, closed at the end, and, when it became unusable during the run, the line of an
incomplete run, exit 3, as for a judge endpoint (docs/knowledge-graph.md)."""

from __future__ import annotations

from pathlib import Path

from graphrag_eval.config import EvaluationConfig
from graphrag_eval.errors import ConfigError
from graphrag_eval.evaluation.execution import SharedExecutions
from graphrag_eval.evaluation.services import open_run_store
from graphrag_eval.formatting import plural
from graphrag_eval.graph.execution import GraphStore
from graphrag_eval.llm.engine import LLMEngine

__all__ = ["RunServices", "close_all", "execution_summary", "open_services", "store_incomplete"]

RunServices = tuple[LLMEngine | None, GraphStore | None]
"""A run's judge engine and store, each ``None`` when it has none."""


def open_services(engine: LLMEngine | None, config: EvaluationConfig, out_dir: Path) -> RunServices:
    """``engine`` and the store ``config`` names, opened (a store that cannot be is a
    :class:`~graphrag_eval.errors.ConfigError` or an :class:`~graphrag_eval.errors.InputError`,
    before any work: the command's one line and exit 2). The store's directory may not share
    anything with the run's output directory (``out_dir``): one would replace the other."""
    directory = config.sparql.store_directory
    if directory is not None:
        store, out = Path(directory).resolve(), out_dir.resolve()
        if store == out or out in store.parents or store in out.parents:
            raise ConfigError(
                f"the store directory {directory} and the output directory {out_dir} overlap: "
                "give the store a directory of its own",
                field="sparql.store_directory",
            )
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


def execution_summary(store: GraphStore | None) -> str | None:
    """The line ``evaluate`` prints on the queries the run executed against its store (how
    many, how many more were served from the ones kept, how many failed and why), or
    ``None`` without a store."""
    if not isinstance(store, SharedExecutions):
        return None
    line = f"SPARQL: {plural(store.sent, 'query', 'queries')} executed against "
    line += store.identity.label
    if store.reused:
        line += f" ({store.reused:,} more served from those)"
    if store.failed:
        kinds = ", ".join(f"{kind} {count:,}" for kind, count in store.failed.most_common())
        line += f"; {plural(sum(store.failed.values()), 'execution')} failed: {kinds}"
    return line
