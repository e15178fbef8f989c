"""The knowledge graph: executing SPARQL queries against a store, read-only (an embedded
Oxigraph store loaded from RDF files, or a SPARQL 1.1 Protocol endpoint), and what is built on
it (docs/knowledge-graph.md). The stores need the ``sparql`` extra; importing this package
does not."""

from graphrag_eval.graph.execution import Execution, GraphStore, StoreIdentity

__all__ = ["Execution", "GraphStore", "StoreIdentity"]
