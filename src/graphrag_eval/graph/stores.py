"""Opening the store a config names (docs/knowledge-graph.md): the embedded Oxigraph store for
``sparql.data``, an endpoint for ``sparql.endpoint``, none otherwise."""

from __future__ import annotations

from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.graph.execution import GraphStore

__all__ = ["open_store"]


def open_store(config: SparqlConfig) -> GraphStore | None:
    """The store ``config`` names, ready to execute, or ``None`` when it names none.

    Raises :class:`~graphrag_eval.errors.ConfigError` (an extra is missing, a credential's
    variable is unset) or :class:`~graphrag_eval.errors.InputError` (a data file cannot be
    read).
    """
    if config.data:
        from graphrag_eval.graph.embedded import load_embedded

        return load_embedded(config)
    if config.endpoint is not None:
        from graphrag_eval.graph.endpoint import open_endpoint

        return open_endpoint(config)
    return None
