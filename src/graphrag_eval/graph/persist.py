"""The embedded store kept on disk (``sparql.store_directory``) and reused while its data
files are unchanged (docs/knowledge-graph.md, "An embedded store").

The directory holds ``manifest.json`` (the data files with their SHA-256 and size, the base
IRI, the Oxigraph version, the triple count, the content fingerprint, and the name of the
store's subdirectory) and that subdirectory. A build loads into a new ``building-*``
subdirectory (in a second process, while this one computes the count and fingerprint from
the files loaded in memory), and only then replaces the manifest
(atomically) to name it: a build that is killed or fails leaves a manifest that still names
the previous store, or none, so a half-built store is never reused; the next build removes
what it left. A build keeps the store the manifest named before it (a run started earlier
may still be reading it) and removes the older ones. Builds and checks hold the directory's
lock (``files/locking.py``); a second process waits for the first one's build, then reuses
it.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import re
import shutil
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphrag_eval.errors import ConfigError, InputError
from graphrag_eval.files.documents import write_text_atomic
from graphrag_eval.files.locking import LOCK_FILE, OutputDirBusy, lock_out_dir
from graphrag_eval.graph.loading import (
    FileEntry,
    content_fingerprint,
    file_entries,
    load_files,
    pyoxigraph,
)

__all__ = ["MANIFEST", "LoadedGraph", "load_in_memory", "open_persisted"]

MANIFEST = "manifest.json"
_FORMAT_VERSION = 1
_LOCK_WAIT_S = 3600.0
"""How long a run waits for another one's build of the same directory."""
_LOCK_POLL_S = 0.2
_MANIFEST_TEMPORARY = re.compile(r"\A\.manifest\.json\.[0-9a-f]{12}\.tmp\Z")
"""The temporary file of a manifest being written (``files/documents.py``)."""
_STORE_FILE = re.compile(
    r"\A(?:CURRENT|IDENTITY|LOCK|LOG(?:\.old\.\d+)?|(?:MANIFEST|OPTIONS)-\d+(?:\.dbtmp)?"
    r"|\d+\.(?:log|sst|blob|dbtmp))\Z"
)
"""The names of the files of an Oxigraph (RocksDB) store directory."""


@dataclass(frozen=True, slots=True)
class LoadedGraph:
    """An Oxigraph store with what identifies its content."""

    store: Any
    files: list[FileEntry]
    triples: int
    fingerprint: str
    reused: bool = False
    """Opened from ``store_directory`` without loading."""


def load_in_memory(paths: Sequence[Path], base_iri: str | None) -> LoadedGraph:
    """An in-memory store with ``paths`` loaded."""
    entries = file_entries(paths)
    store = pyoxigraph().Store()
    load_files(store, paths, base_iri)
    triples, fingerprint = content_fingerprint(store)
    return LoadedGraph(store, entries, triples, fingerprint)


def open_persisted(paths: Sequence[Path], base_iri: str | None, directory: Path) -> LoadedGraph:
    """The store kept in ``directory``, reused when its manifest matches the files (and the
    base IRI and Oxigraph version), else built anew."""
    entries = file_entries(paths)
    expected = {
        "version": _FORMAT_VERSION,
        "oxigraph": pyoxigraph().__version__,
        "base_iri": base_iri,
        "files": entries,
    }
    _check_ours(directory)
    with _locked(directory):
        reused = _reuse(directory, expected)
        if reused is not None:
            return reused
        return _build(paths, base_iri, directory, expected)


def _check_ours(directory: Path) -> None:
    """Refuse a ``store_directory`` that holds anything but what a build puts there (the
    manifest, the lock, stores, the temporary file of a manifest being written): it is not
    a store directory, and a build removes the ``store-*`` and ``building-*`` entries it
    does not name (docs/knowledge-graph.md)."""
    try:
        if not directory.exists():
            return
        if not directory.is_dir():
            raise ConfigError(f"{directory}: is not a directory", field="sparql.store_directory")
        names = sorted(entry.name for entry in directory.iterdir())
    except OSError as exc:
        raise ConfigError(
            f"{directory}: cannot be used: {exc.strerror or exc}", field="sparql.store_directory"
        ) from None
    for name in names:
        entry = directory / name
        # A build in progress in another process: its directory may not hold a store yet.
        building = name.startswith("building-") and entry.is_dir() and not entry.is_symlink()
        if not (building or _ours(entry)):
            raise ConfigError(
                f"{directory}: holds {name!r}, which no store build made: the directory is "
                "kept for the store alone (its old stores are removed); name a new or empty "
                "directory",
                field="sparql.store_directory",
            )


def _ours(entry: Path) -> bool:
    """Whether ``entry`` is one a build makes: the manifest (or its temporary file), the
    lock, or a store directory (not a link) that holds only the files of an Oxigraph
    (RocksDB) store, or none yet."""
    name = entry.name
    if name in (MANIFEST, LOCK_FILE) or _MANIFEST_TEMPORARY.match(name):
        return entry.is_file() and not entry.is_symlink()
    if not name.startswith(("building-", "store-")):
        return False
    if entry.is_symlink() or not entry.is_dir():
        return False
    try:
        return all(_STORE_FILE.match(part.name) and part.is_file() for part in entry.iterdir())
    except OSError:
        return False


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    deadline = time.monotonic() + _LOCK_WAIT_S
    with contextlib.ExitStack() as stack:
        while True:
            try:
                stack.enter_context(lock_out_dir(directory))
                break
            except OutputDirBusy:
                if time.monotonic() > deadline:
                    raise ConfigError(
                        f"{directory}: another graphrag-eval run has been building the store "
                        f"there for over {_LOCK_WAIT_S:g} s",
                        field="sparql.store_directory",
                    ) from None
                time.sleep(_LOCK_POLL_S)
            except OSError as exc:
                raise ConfigError(
                    f"{directory}: cannot be used: {exc.strerror or exc}",
                    field="sparql.store_directory",
                ) from None
        yield


def _read_manifest(directory: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((directory / MANIFEST).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _reuse(directory: Path, expected: dict[str, Any]) -> LoadedGraph | None:
    manifest = _read_manifest(directory)
    if manifest is None or any(manifest.get(key) != value for key, value in expected.items()):
        return None
    name, triples, fingerprint = (manifest.get(k) for k in ("store", "triples", "fingerprint"))
    if not (isinstance(name, str) and name.startswith("store-") and "/" not in name):
        return None
    if not (isinstance(triples, int) and isinstance(fingerprint, str)):
        return None
    location = directory / name
    if not location.is_dir():
        return None
    try:
        store = pyoxigraph().Store.read_only(str(location))
    except (OSError, ValueError, RuntimeError):
        return None  # damaged: built again
    return LoadedGraph(store, expected["files"], triples, fingerprint, reused=True)


def _build(
    paths: Sequence[Path], base_iri: str | None, directory: Path, expected: dict[str, Any]
) -> LoadedGraph:
    manifest = _read_manifest(directory) or {}
    previous = manifest.get("store") if isinstance(manifest.get("store"), str) else None
    _remove_unnamed(directory, keep={previous})
    token = uuid.uuid4().hex[:16]
    building = directory / f"building-{token}"
    oxigraph = pyoxigraph()
    loader = _DiskLoader(building, paths, base_iri)
    try:
        # The count and fingerprint from a store in memory (faster to dump than one on
        # disk) while another process loads the files into the store on disk: Oxigraph's
        # loaders hold the interpreter, so two of them run side by side only as processes.
        memory = oxigraph.Store()
        load_files(memory, paths, base_iri)
        triples, fingerprint = content_fingerprint(memory)
        del memory
        loader.finish()
        final = directory / f"store-{token}"
        building.rename(final)
    except BaseException:
        loader.stop()
        shutil.rmtree(building, ignore_errors=True)
        raise
    manifest = {**expected, "store": final.name, "triples": triples, "fingerprint": fingerprint}
    write_text_atomic(directory / MANIFEST, json.dumps(manifest, indent=1) + "\n")
    _remove_unnamed(directory, keep={final.name, previous})
    store = oxigraph.Store.read_only(str(final))
    return LoadedGraph(store, expected["files"], triples, fingerprint)


class _DiskLoader:
    """The data files bulk-loaded into the store being built on disk, in a process of its
    own (:func:`_load_on_disk`); here, after the files were loaded in memory, when no
    process can be started."""

    def __init__(self, building: Path, paths: Sequence[Path], base_iri: str | None) -> None:
        self._args = (str(building), [str(path) for path in paths], base_iri)
        context = multiprocessing.get_context("spawn")
        self._failures: Any = context.SimpleQueue()
        self._process: Any = context.Process(
            target=_load_on_disk,
            args=(*self._args, self._failures),
            name="graphrag-eval-store-build",
            daemon=True,
        )
        try:
            self._process.start()
        except OSError:  # no process to be had: loaded here, in turn
            self._process = None

    def finish(self) -> None:
        """Wait for the store on disk; raise what its loading raised."""
        if self._process is None:
            _load_on_disk(*self._args, None)
            return
        self._process.join()
        if self._process.exitcode != 0:
            why = self._failures.get() if not self._failures.empty() else None
            if isinstance(why, Exception):
                raise why
            raise OSError(
                f"building the store in {self._args[0]} failed "
                f"(its process ended with {self._process.exitcode})"
            )

    def stop(self) -> None:
        """Stop the loading (the build is abandoned)."""
        if self._process is not None and self._process.is_alive():
            self._process.terminate()
            self._process.join()


def _load_on_disk(building: str, paths: list[str], base_iri: str | None, failures: Any) -> None:
    """Bulk-load ``paths`` into a new store at ``building``; in a process of its own, its
    error goes to ``failures`` (the process exits 1, printing nothing)."""
    try:
        store = pyoxigraph().Store(building)
        load_files(store, [Path(path) for path in paths], base_iri)
        store.flush()
    except Exception as exc:
        if failures is None:
            raise
        failures.put(exc if isinstance(exc, InputError | OSError) else OSError(str(exc)))
        sys.exit(1)


def _remove_unnamed(directory: Path, keep: set[str | None]) -> None:
    """Remove the stores but those in ``keep``: the one the manifest names and the one it
    named before (a run started earlier may still be reading it); what a killed build left
    goes too. Only our own subdirectories, never through a link."""
    for entry in directory.iterdir():
        ours = entry.name.startswith(("building-", "store-")) and _ours(entry)
        if ours and entry.name not in keep:
            shutil.rmtree(entry, ignore_errors=True)
