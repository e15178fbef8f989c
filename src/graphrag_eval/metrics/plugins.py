"""Metrics from other packages: the entry point group ``graphrag_eval.metrics``
(docs/extending.md, "From a separate package"). Each entry point is a metric, or a callable
taking no arguments that returns a metric or a list of metrics; one that cannot be loaded,
raises, or gives something else is a :class:`~graphrag_eval.errors.ConfigError` naming it.

This module knows nothing of the metric interface (the registry in :mod:`.base` passes the
class to check against), so the registry can use it without an import cycle.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points
from typing import Any, TypeVar

from graphrag_eval.errors import ConfigError

__all__ = ["ENTRY_POINT_GROUP", "entry_point_metrics"]

ENTRY_POINT_GROUP = "graphrag_eval.metrics"

T = TypeVar("T")


def entry_point_metrics(kind: type[T]) -> list[T]:
    """The metrics (instances of ``kind``) every installed entry point of the group gives,
    in entry point order."""
    entries = entry_points(group=ENTRY_POINT_GROUP)
    return [metric for entry in entries for metric in _of(entry, kind)]


def _of(entry_point: EntryPoint, kind: type[T]) -> list[T]:
    where = f"metric entry point {entry_point.name!r} ({entry_point.value})"
    try:
        loaded: Any = entry_point.load()
        given = loaded() if callable(loaded) and not isinstance(loaded, kind) else loaded
    except Exception as exc:
        raise ConfigError(f"{where} failed to load: {exc!r}") from exc
    metrics = [given] if isinstance(given, kind) else given
    if not isinstance(metrics, Iterable) or not all(isinstance(m, kind) for m in metrics):
        raise ConfigError(f"{where} gave {given!r}, not a Metric or Metrics")
    return list(metrics)
