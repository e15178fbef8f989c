"""Reading an endpoint's reply (docs/knowledge-graph.md, "An endpoint"): at most
``sparql.max_result_bytes`` of it, and what it holds as the SPARQL 1.1 Query Results JSON
Format with at most ``sparql.row_limit`` rows. SPARQL JSON results are read as they are;
SPARQL XML, CSV and TSV results, and the RDF a ``CONSTRUCT`` or ``DESCRIBE`` gives (as
``s``, ``p``, ``o`` rows), are read with Oxigraph's parsers. Anything else (an HTML page) is
:class:`NotResults`."""

from __future__ import annotations

import json
from typing import Any, Final, Protocol

from graphrag_eval.graph.embedded import sparql_json
from graphrag_eval.graph.xml_guard import xml_entities_problem

__all__ = [
    "ACCEPT",
    "NotResults",
    "read_at_most",
    "read_start",
    "reply_results",
    "reply_start",
]

ACCEPT: Final = (
    "application/sparql-results+json, application/n-triples;q=0.9, text/turtle;q=0.8, "
    "application/sparql-results+xml;q=0.7, application/rdf+xml;q=0.6, "
    "application/n-quads;q=0.5, application/ld+json;q=0.4"
)
"""What a query asks for: SPARQL JSON results, or N-Triples for a graph; the other formats an
endpoint may insist on after them."""

JSON_TYPES: Final = frozenset({"application/sparql-results+json", "application/json"})
_CHUNK = 1 << 16

Results = tuple[dict[str, Any], int | None, bool]
"""The results, the rows kept (``None`` for ``ASK``) and whether rows were left out."""


class NotResults(Exception):
    """A reply that does not hold SPARQL results (an HTML page, a proxy's error page, text);
    ``page``: it is not in any results or RDF format at all (rather than a malformed one)."""

    def __init__(self, detail: str, page: bool) -> None:
        super().__init__(detail)
        self.detail = detail
        self.page = page


class _Stream(Protocol):
    async def read(self, n: int = -1) -> bytes: ...


async def read_at_most(stream: _Stream, limit: int) -> bytes | None:
    """The whole body of ``stream``, or ``None`` as soon as it is longer than ``limit`` bytes
    (the rest is never read)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await stream.read(min(_CHUNK, limit - size + 1))
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)


async def read_start(stream: _Stream, limit: int) -> bytes:
    """The first ``limit`` bytes of ``stream`` (all of it when shorter)."""
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = await stream.read(limit - size)
        if not chunk:
            break
        size += len(chunk)
        chunks.append(chunk)
    return b"".join(chunks)


def reply_start(content: bytes, length: int = 80) -> str:
    """The first ``length`` characters of a reply, on one line."""
    text = content[: length * 4].decode("utf-8", "replace")
    return " ".join(text.split())[:length]


def reply_results(content: bytes, content_type: str, row_limit: int) -> Results:
    """The SPARQL results of a reply of ``content_type`` (its media type, lower case), with at
    most ``row_limit`` rows; raises :class:`NotResults`."""
    if content_type in JSON_TYPES or (
        content_type in ("", "application/octet-stream") and content.lstrip()[:1] == b"{"
    ):
        return _json_results(content, row_limit)
    parsed = _parsed(content, content_type)
    if parsed is None:
        shown = content_type or "none"
        raise NotResults(
            f"the endpoint's reply is not SPARQL results (content type {shown}): "
            f"{reply_start(content)!r}",
            page=True,
        )
    try:
        return sparql_json(parsed, row_limit)
    except (SyntaxError, ValueError, OSError) as exc:
        raise NotResults(_malformed(content_type, exc), page=False) from None


def _parsed(content: bytes, content_type: str) -> Any:
    """Oxigraph's reader of ``content`` (SPARQL XML/CSV/TSV results, or RDF), or ``None``
    when ``content_type`` is neither."""
    try:
        import pyoxigraph
    except ImportError:
        raise NotResults(
            f"reading a reply of content type {content_type} needs the sparql extra "
            "(pyoxigraph): pip install 'graphrag-eval[sparql]'",
            page=False,
        ) from None
    if not content_type:
        return None
    try:
        results_format = pyoxigraph.QueryResultsFormat.from_media_type(content_type)
        if results_format is not None:
            return pyoxigraph.parse_query_results(content, format=results_format)
        rdf_format = pyoxigraph.RdfFormat.from_media_type(content_type)
        if rdf_format == pyoxigraph.RdfFormat.RDF_XML:
            # Oxigraph expands the entities of RDF/XML without bound (docs/security.md).
            problem = xml_entities_problem(content)
            if problem is not None:
                raise NotResults(f"the endpoint's RDF/XML reply {problem}", page=False)
        if rdf_format is not None:
            return pyoxigraph.parse(content, format=rdf_format)
    except (SyntaxError, ValueError, OSError) as exc:
        raise NotResults(_malformed(content_type, exc), page=False) from None
    return None


def _malformed(content_type: str, exc: BaseException) -> str:
    first = " ".join(str(exc).split())[:200]
    return f"the endpoint's reply is not valid {content_type}: {first}"


def _json_results(content: bytes, row_limit: int) -> Results:
    """The results of a SPARQL JSON reply, rebuilt from the parts the format has (``head``'s
    ``vars``; each cell's ``type``, ``value``, ``xml:lang`` and ``datatype`` as strings), so a
    hostile reply brings nothing else along."""
    try:
        reply = json.loads(content)
    except (ValueError, RecursionError) as exc:
        raise NotResults(_malformed("SPARQL JSON results", exc), page=False) from None
    head = reply.get("head", {}) if isinstance(reply, dict) else None
    if not isinstance(head, dict):
        raise NotResults(_not_json_results(content), page=False)
    names = head.get("vars")
    clean_head: dict[str, Any] = {}
    if isinstance(names, list):
        clean_head["vars"] = [name for name in names if isinstance(name, str)]
    if isinstance(reply.get("boolean"), bool):
        return {"head": clean_head, "boolean": reply["boolean"]}, None, False
    results = reply.get("results")
    bindings = results.get("bindings") if isinstance(results, dict) else None
    if not isinstance(bindings, list):
        raise NotResults(_not_json_results(content), page=False)
    try:
        rows = [_row(row) for row in bindings[:row_limit]]
    except (TypeError, ValueError) as exc:
        raise NotResults(f"the endpoint's JSON results are malformed: {exc}", page=False) from None
    return {"head": clean_head, "results": {"bindings": rows}}, len(rows), len(bindings) > row_limit


_CELL_KEYS = frozenset({"type", "value", "xml:lang", "datatype"})


def _row(row: Any) -> dict[str, Any]:
    """``row`` when it holds only what the format has (most do), else its cells rebuilt."""
    if type(row) is not dict:
        raise TypeError(f"a row is not an object: {str(row)[:80]!r}")
    for cell in row.values():
        if (
            type(cell) is not dict
            or not cell.keys() <= _CELL_KEYS
            or type(cell.get("value")) is not str
            or type(cell.get("type")) is not str
            or not all(type(part) is str for part in cell.values())
        ):
            return {name: _term(name, cell) for name, cell in row.items()}
    return row


def _term(name: str, cell: Any) -> dict[str, str]:
    if not isinstance(cell, dict) or not isinstance(cell.get("type"), str):
        raise TypeError(f"the cell {name!r} is not an RDF term: {str(cell)[:80]!r}")
    value = cell.get("value")
    if cell["type"] == "triple" and isinstance(value, dict):  # RDF-star: kept as text
        value = json.dumps(value, sort_keys=True)
    if not isinstance(value, str):
        raise TypeError(f"the cell {name!r} has no text value: {str(cell)[:80]!r}")
    term = {key: cell[key] for key in _CELL_KEYS if isinstance(cell.get(key), str)}
    term["value"] = value
    return term


def _not_json_results(content: bytes) -> str:
    return (
        "the endpoint's JSON reply is not SPARQL results (no head with results.bindings or "
        f"boolean): {reply_start(content)!r}"
    )
