"""What executing one query gives (:class:`Execution`), what identifies the graph it was
executed against (:class:`StoreIdentity`), and what every store offers (:class:`GraphStore`):
docs/knowledge-graph.md."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["Execution", "ExecutionError", "GraphStore", "StoreIdentity", "innermost"]


class ExecutionError(enum.Enum):
    """Why a query gave no results: the labels of ``execution.error_kind`` (and of the
    query diagnosis where they apply)."""

    SYNTAX_ERROR = "syntax_error"
    """The query does not parse."""
    UPDATE_REFUSED = "update_refused"
    """A SPARQL Update: never sent."""
    TIMEOUT = "timeout"
    """The query ran longer than ``sparql.timeout_s``."""
    TOO_LARGE = "too_large"
    """The reply was larger than ``sparql.max_result_bytes``."""
    UNREACHABLE = "unreachable"
    """The endpoint could not be reached."""
    REFUSED = "refused"
    """The endpoint refused the request (401, 403)."""
    ENDPOINT = "endpoint"
    """The endpoint failed (a server error, a reply that is not SPARQL results, its breaker
    open)."""
    QUERY = "query"
    """The store could not evaluate the query (an error it reports about the query)."""


@dataclass(frozen=True, slots=True)
class StoreIdentity:
    """What a run executed against, as ``run.yaml`` records it (``graph``)."""

    kind: str
    """``oxigraph`` (embedded, from files) or ``endpoint``."""
    label: str
    """A short name for messages and step provenance: the endpoint URL (never with
    credentials), or ``oxigraph:`` and the start of the content fingerprint."""
    details: Mapping[str, Any] = field(default_factory=dict)
    """Everything else that identifies it: the files with their hashes, the triple count, the
    content fingerprint; the endpoint's URL."""

    def as_record(self) -> dict[str, Any]:
        return {"kind": self.kind, "label": self.label, **self.details}


@dataclass(frozen=True, slots=True)
class Execution:
    """One query executed: its results (the SPARQL 1.1 Query Results JSON Format's ``head``
    and ``results``, or ``boolean``), or why there are none."""

    source: str
    """The store's :attr:`StoreIdentity.label`."""
    elapsed_s: float
    results: Mapping[str, Any] | None = None
    rows: int | None = None
    """The rows kept (``None`` for ``ASK``, or on an error)."""
    truncated: bool = False
    """More rows than ``sparql.row_limit`` came: the first ones were kept."""
    error: str | None = None
    error_kind: ExecutionError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.results is not None

    def as_record(self) -> dict[str, Any]:
        """Where a step's output came from, as results write it (``execution``:
        docs/outputs.md)."""
        record: dict[str, Any] = {"source": self.source, "elapsed_s": round(self.elapsed_s, 6)}
        if self.error is not None:
            record["error"] = self.error
            if self.error_kind is not None:
                record["error_kind"] = self.error_kind.value
            return record
        record["rows"] = self.rows
        record["truncated"] = self.truncated
        return record


class GraphStore(Protocol):
    """A store that executes read-only SPARQL queries (an embedded Oxigraph store or an
    endpoint). ``execute`` never raises for a query's own failure: it comes back as an
    :class:`Execution` with its error. A store that is unusable as a whole (the endpoint's
    breaker open) says so by :attr:`unusable`."""

    @property
    def identity(self) -> StoreIdentity: ...

    @property
    def unusable(self) -> str | None:
        """Why the store cannot be used any more (the run then exits 3), or ``None``."""
        ...

    async def execute(self, query: str) -> Execution: ...

    async def aclose(self) -> None: ...


def innermost(store: GraphStore) -> GraphStore:
    """The store itself, beneath the wrappers a run puts around it (one that shares its
    executions within the run names the store it wraps ``wrapped``)."""
    inner: GraphStore | None = getattr(store, "wrapped", None)
    while inner is not None:
        store = inner
        inner = getattr(store, "wrapped", None)
    return store
