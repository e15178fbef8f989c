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
import xml.parsers.expat
from pathlib import Path
from typing import Any

from graphrag_eval.errors import InputError

__all__ = ["check_xml_entities"]

_CHUNK = 1 << 20
_MIN_EXPANDED = 64 << 20
_FACTOR = 10


class _Stop(Exception):
    """Raised from an expat handler to stop reading."""


def check_xml_entities(path: Path) -> None:
    """Refuse the RDF/XML file ``path`` when its entities are external or expand beyond the
    bound; a file whose prolog does not parse is left to Oxigraph to report."""
    entities = _declared_entities(path)
    if not entities:
        return
    for name, system_id, public_id in entities:
        if system_id is not None or public_id is not None:
            where = system_id or public_id
            raise InputError(
                f"declares the external entity {name!r} ({where}): external entities are "
                "never read; write its text in the file",
                file=str(path),
            )
    _check_expansion(path)


def _declared_entities(path: Path) -> list[tuple[str, str | None, str | None]]:
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
        _feed(parser, path)
    return declared


def _check_expansion(path: Path) -> None:
    limit = max(_MIN_EXPANDED, _FACTOR * path.stat().st_size)
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
        stopped = _feed(parser, path)
    except xml.parsers.expat.ExpatError as exc:
        if "amplification" not in str(exc):
            return  # not well formed: Oxigraph says where
        raise InputError(
            f"line {exc.lineno}: its XML entities expand it past the XML parser's "
            "amplification limit (an entity bomb?); write the file without nested entities",
            file=str(path),
        ) from None
    if stopped:
        raise InputError(
            f"its XML entities expand it to more than {limit / (1 << 20):,.0f} MiB of text "
            "(an entity bomb?); write the file without nested entities",
            file=str(path),
        )


def _feed(parser: Any, path: Path) -> bool:
    """Feed ``path`` to ``parser`` until its end or a handler stops it (``True``)."""
    try:
        with path.open("rb") as stream:
            while chunk := stream.read(_CHUNK):
                parser.Parse(chunk, False)
            parser.Parse(b"", True)
    except _Stop:
        return True
    except OSError:
        return False
    return False
