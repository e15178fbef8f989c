"""RDF/XML files are read by Oxigraph's parser, which expands the internal entities a file's
DOCTYPE declares without bound: ten nested entities of ten references each (a "billion
laughs") would take gigabytes. Before such a file is loaded, its prolog is read with the
standard library's expat, which never opens an external entity; a file that declares none
is loaded as it is. One that declares an external entity (``SYSTEM``, ``PUBLIC``) is
refused: nothing is read from another file or the network. One that declares internal
entities is read once through expat, counting the text its entities expand to, and refused
when that text passes ``max(64 MiB, 10 times the file's size)`` or when expat's own guard
against amplification stops it (docs/security.md, "Knowledge-graph data files")."""

from __future__ import annotations

import contextlib
import io
import xml.parsers.expat
from pathlib import Path
from typing import Any

from graphrag_eval.errors import InputError

__all__ = ["check_xml_entities", "xml_entities_problem"]

_CHUNK = 1 << 20
_MIN_EXPANDED = 64 << 20
_FACTOR = 10


class _Stop(Exception):
    """Raised from an expat handler to stop reading."""


def check_xml_entities(path: Path) -> None:
    """Refuse the RDF/XML file ``path`` (an :class:`InputError` naming it) when its entities
    are external or expand beyond the bound; a file whose prolog does not parse is left to
    Oxigraph to report."""
    problem = xml_entities_problem(path)
    if problem is not None:
        raise InputError(problem, file=str(path))


def xml_entities_problem(source: Path | bytes) -> str | None:
    """What is wrong with the entities of the XML document ``source`` (a file or its bytes,
    such as an endpoint's RDF/XML reply), or ``None``."""
    entities = _declared_entities(source)
    if not entities:
        return None
    for name, system_id, public_id in entities:
        if system_id is not None or public_id is not None:
            where = system_id or public_id
            return (
                f"declares the external entity {name!r} ({where}): external entities are "
                "never read; write its text in the file"
            )
    return _expansion_problem(source)


def _declared_entities(source: Path | bytes) -> list[tuple[str, str | None, str | None]]:
    """The entities the prolog declares: name, system id, public id (read up to the root
    element only)."""
    parser = xml.parsers.expat.ParserCreate()
    declared: list[tuple[str, str | None, str | None]] = []

    def entity(
        name: str, _param: int, _value: Any, _base: Any, system: Any, public: Any, _notation: Any
    ) -> None:
        declared.append((name, system, public))

    def root(_name: str, _attributes: Any) -> None:
        raise _Stop

    parser.EntityDeclHandler = entity
    parser.StartElementHandler = root
    # Not well formed: what was declared before the error is checked all the same.
    with contextlib.suppress(xml.parsers.expat.ExpatError):
        _feed(parser, source)
    return declared


def _expansion_problem(source: Path | bytes) -> str | None:
    size_read = len(source) if isinstance(source, bytes) else source.stat().st_size
    limit = max(_MIN_EXPANDED, _FACTOR * size_read)
    parser = xml.parsers.expat.ParserCreate()
    size = 0

    def count(text: str) -> None:
        nonlocal size
        size += len(text)
        if size > limit:
            raise _Stop

    def element(_name: str, attributes: dict[str, str]) -> None:
        for value in attributes.values():
            count(value)

    parser.CharacterDataHandler = count
    parser.StartElementHandler = element
    try:
        stopped = _feed(parser, source)
    except xml.parsers.expat.ExpatError as exc:
        if "amplification" not in str(exc):
            return None  # not well formed: Oxigraph says where
        return (
            f"line {exc.lineno}: its XML entities expand it past the XML parser's "
            "amplification limit (an entity bomb?); write the file without nested entities"
        )
    if stopped:
        return (
            f"its XML entities expand it to more than {limit / (1 << 20):,.0f} MiB of text "
            "(an entity bomb?); write the file without nested entities"
        )
    return None


def _feed(parser: Any, source: Path | bytes) -> bool:
    """Feed ``source`` to ``parser`` until its end or a handler stops it (``True``)."""
    try:
        with io.BytesIO(source) if isinstance(source, bytes) else source.open("rb") as stream:
            while chunk := stream.read(_CHUNK):
                parser.Parse(chunk, False)
            parser.Parse(b"", True)
    except _Stop:
        return True
    except OSError:
        return False
    return False
