"""Loading a run's config: its shape (:func:`graphrag_eval.config.parse_config`) and the metric
names it uses, checked against the registered metrics (docs/metrics.md, "Choosing metrics"):
:func:`check_metric_names` rejects unknown, repeated or disabled metric names and custom
evaluations that take a metric's name or key.

It lives beside the registry, so that the ``config`` package stays below everything that
reads it (docs/architecture.md, "The data flow").
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path

from graphrag_eval.config.model import ConfigSource, EvaluationConfig, parse_config
from graphrag_eval.errors import ConfigError
from graphrag_eval.files.documents import JSONL_SUFFIXES, read_document
from graphrag_eval.inputs.shapes import TEMPLATE_KEYS
from graphrag_eval.metrics.registry import (
    configured_metrics,
    reserved_keys,
    selectable_metric_names,
)

__all__ = ["check_metric_names", "load_config"]


def load_config(source: ConfigSource = None) -> EvaluationConfig:
    """Return the validated config for a path, a dict, a config object, or ``None`` (defaults):
    its shape, and the metric names it uses (unknown, repeated or disabled metrics; custom
    evaluations taking a metric's name or key).

    Raises :class:`~graphrag_eval.errors.ConfigError` with a one-line message naming the file
    and the key.
    """
    try:
        config = parse_config(source)
    except ConfigError:
        other = _other_input(source)
        if other is None:
            raise
        raise ConfigError(
            f"this looks like {other}, not a config (a mapping of sections such as llm: and "
            "steps:); give the config file with -c",
            file=str(source),
        ) from None
    label = str(source) if isinstance(source, str | Path) else "<config>"
    check_metric_names(config, label)
    return config


def _other_input(source: ConfigSource) -> str | None:
    """What the file ``source`` that is no config looks like instead (the reference dataset,
    the responses), if it is one of them."""
    if not isinstance(source, str | Path):
        return None
    if Path(source).suffix.lower() in JSONL_SUFFIXES:
        return "a responses file (JSON Lines)"
    try:
        data = read_document(Path(source))
    except (OSError, ValueError):
        return None
    first = data[0] if isinstance(data, list) and data else None
    if isinstance(first, Mapping) and first.keys() & TEMPLATE_KEYS:
        return "a reference dataset"
    if isinstance(first, Mapping) and "question_id" in first:
        return "a responses file"
    return None


def check_metric_names(config: EvaluationConfig, label: str = "<config>") -> None:
    """Raise :class:`ConfigError` (located in ``label``, the config file) when a custom
    evaluation takes a metric's name or a key another metric writes, or ``metrics:`` names
    an unknown metric, one twice, or one whose section disables it."""
    try:
        _check_custom_names(config)
        _check_listed_names(config)
    except ValueError as exc:
        raise ConfigError(str(exc), file=label) from None


def _check_custom_names(config: EvaluationConfig) -> None:
    taken = set(reserved_keys())
    names = set(selectable_metric_names())
    for index, evaluation in enumerate(config.custom_evaluations):
        if evaluation.name in names:
            raise ValueError(
                f"custom_evaluations[{index}]: the name '{evaluation.name}' is already a metric's"
            )
        names.add(evaluation.name)
        for key in (evaluation.error_key, evaluation.cost_key, *evaluation.outputs):
            if key in taken:
                raise ValueError(
                    f"custom_evaluations[{index}] ({evaluation.name}): key '{key}' is "
                    "already used by a built-in metric or another evaluation"
                )
            taken.add(key)


def _check_listed_names(config: EvaluationConfig) -> None:
    if not isinstance(config.metrics, list):
        return
    by_name = {metric.name: metric for metric in configured_metrics(config)}
    known = list(by_name)
    for index, name in enumerate(config.metrics):
        if name not in by_name:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ValueError(f"metrics[{index}]: unknown metric '{name}'{hint}")
    if len(set(config.metrics)) != len(config.metrics):
        raise ValueError("metrics: a metric is listed more than once")
    for name in config.metrics:
        if not by_name[name].enabled(config):
            why = by_name[name].why_disabled(config)
            raise ValueError(f"metrics lists '{name}' but {why}")
