"""Reading RDF files into an Oxigraph store, and what identifies what was read: each file's
sha256 and size, the triple count and a content fingerprint (docs/knowledge-graph.md, "An
embedded store" and "The graph's identity").

The fingerprint is order-independent: each quad of the store is written as one N-Quads line
(blank node labels left out, as Oxigraph makes new ones at every load), each line hashed with
SHA-256, and the hashes summed modulo 2**256. Reordering or reformatting a file, or
splitting it into several, keeps it; adding, removing or changing a triple changes it."""

from __future__ import annotations

import hashlib
import re
import stat
import xml.parsers.expat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graphrag_eval.errors import ConfigError, InputError
from graphrag_eval.graph.xml_guard import check_xml_entities

__all__ = [
    "FileEntry",
    "content_fingerprint",
    "file_entries",
    "load_files",
    "pyoxigraph",
    "rdf_format",
]

_FORMATS = {
    ".ttl": "TURTLE",
    ".turtle": "TURTLE",
    ".nt": "N_TRIPLES",
    ".ntriples": "N_TRIPLES",
    ".nq": "N_QUADS",
    ".nquads": "N_QUADS",
    ".trig": "TRIG",
    ".rdf": "RDF_XML",
    ".owl": "RDF_XML",
    ".xml": "RDF_XML",
    ".jsonld": "JSON_LD",
    ".json": "JSON_LD",
    ".n3": "N3",
}
_XML_FORMATS = frozenset({".rdf", ".owl", ".xml"})
_WHERE_SUFFIX = re.compile(r"\s*\([^()]*, line \d+\)$")
_BLANK_LABEL = re.compile(rb"_:[A-Za-z0-9_\-.]*[A-Za-z0-9_\-]")
_MODULUS = 1 << 256
_CHUNK = 1 << 20

FileEntry = dict[str, Any]
"""One data file as run.yaml and the store's manifest record it: ``path``, ``sha256``,
``size``."""


def pyoxigraph() -> Any:
    """The ``pyoxigraph`` module, or a config error saying which extra to install."""
    try:
        import pyoxigraph as oxigraph
    except ImportError:
        raise ConfigError(
            "an embedded store needs the sparql extra: pip install 'graphrag-eval[sparql]'",
            field="sparql.data",
        ) from None
    return oxigraph


def rdf_format(path: Path) -> Any:
    """The RDF format of a data file, by its extension."""
    name = _FORMATS.get(path.suffix.lower())
    if name is None:
        known = ", ".join(sorted(_FORMATS))
        raise InputError(f"unknown RDF file extension (known: {known})", file=str(path))
    return getattr(pyoxigraph().RdfFormat, name)  # a pyoxigraph.RdfFormat


def load_files(store: Any, paths: Sequence[Path], base_iri: str | None) -> None:
    """Bulk-load ``paths`` into ``store``. An unreadable or unparsable file is a one-line
    :class:`InputError` naming the file and, where it can be told, the line."""
    for path in paths:
        form = rdf_format(path)
        _regular_file(path)
        if path.suffix.lower() in _XML_FORMATS:
            check_xml_entities(path)
        try:
            store.bulk_load(path=str(path), format=form, base_iri=base_iri)
        except FileNotFoundError:
            raise InputError("file not found", file=str(path)) from None
        except SyntaxError as exc:
            raise _syntax_error(path, exc, base_iri) from None
        except (ValueError, OSError) as exc:
            raise InputError(_first_line(str(exc)), file=str(path)) from None


def _syntax_error(path: Path, exc: SyntaxError, base_iri: str | None) -> InputError:
    message = _WHERE_SUFFIX.sub("", _first_line(exc.msg or str(exc)))
    if base_iri is None and "No scheme found" in message:
        message += " (a relative IRI, e.g. rdf:ID without xml:base: set sparql.base_iri)"
    if "LoadDocumentCallback" in message:
        message = (
            "its JSON-LD @context names a remote document: a remote @context is never "
            "downloaded (runs are offline); write the context into the file"
        )
    line = exc.lineno
    if line is None and path.suffix.lower() in _XML_FORMATS:
        line = _xml_error_line(path)
    return InputError(message, file=str(path), item=f"line {line}" if line else None)


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else "cannot be read"


def _xml_error_line(path: Path) -> int | None:
    """The line of the first XML well-formedness error of ``path`` (Oxigraph's RDF/XML
    parser does not tell it), or ``None`` when the XML is well formed."""
    parser = xml.parsers.expat.ParserCreate()
    try:
        with path.open("rb") as stream:
            parser.ParseFile(stream)
    except xml.parsers.expat.ExpatError as exc:
        return int(exc.lineno)
    except OSError:
        return None
    return None


def _regular_file(path: Path) -> None:
    """Refuse what is not a regular file (after links), before it is opened: a device
    (``/dev/zero`` never ends), a named pipe (opening one waits for a writer), a directory."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputError("file not found", file=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}", file=str(path)) from None
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "a device, pipe or socket"
        raise InputError(f"not a regular file ({kind}): name an RDF file", file=str(path))


def file_entries(paths: Sequence[Path]) -> list[FileEntry]:
    """Each file's path, SHA-256 and size in bytes."""
    entries: list[FileEntry] = []
    for path in paths:
        _regular_file(path)
        digest = hashlib.sha256()
        size = 0
        try:
            with path.open("rb") as stream:
                while chunk := stream.read(_CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
        except FileNotFoundError:
            raise InputError("file not found", file=str(path)) from None
        except OSError as exc:
            raise InputError(f"cannot be read: {exc.strerror or exc}", file=str(path)) from None
        entries.append({"path": str(path), "sha256": digest.hexdigest(), "size": size})
    return entries


class _LineHasher:
    """A binary stream Oxigraph dumps N-Quads into: sums the SHA-256 of each line."""

    def __init__(self) -> None:
        self.total = 0
        self.lines = 0
        self._rest = b""

    def write(self, data: bytes) -> int:
        lines = (self._rest + bytes(data)).split(b"\n")
        self._rest = lines.pop()
        self._add(lines)
        return len(data)

    def flush(self) -> None:
        return None

    def finish(self) -> None:
        if self._rest:
            self._add([self._rest])
            self._rest = b""

    def _add(self, lines: list[bytes]) -> None:
        sha256 = hashlib.sha256
        total = self.total
        for line in lines:
            if not line:
                continue
            if b"_:" in line:
                line = _BLANK_LABEL.sub(b"_:", line)
            total += int.from_bytes(sha256(line).digest(), "big")
            self.lines += 1
        self.total = total % _MODULUS


def content_fingerprint(store: Any) -> tuple[int, str]:
    """The store's quad count and content fingerprint (64 hexadecimal digits)."""
    hasher = _LineHasher()
    store.dump(hasher, format=pyoxigraph().RdfFormat.N_QUADS)
    hasher.finish()
    return hasher.lines, f"{hasher.total:064x}"
