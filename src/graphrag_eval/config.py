"""The validated configuration of an evaluation run.

A config can be given as a path to a YAML (or JSON) file, a dict, or an
:class:`EvaluationConfig`; :func:`load_config` turns any of them into the one typed object used
everywhere else. Unknown keys are errors, so a typo can never silently disable a metric.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from graphrag_eval.errors import ConfigError

__all__ = [
    "AggregationConfig",
    "EvaluationConfig",
    "RetrievalContextConfig",
    "StepsConfig",
    "load_config",
]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class StepsConfig(_Section):
    """How actual tool-call steps are matched to reference steps."""

    score_mode: Literal["last_group", "all_groups"] = "last_group"
    """``last_group``: only the last reference group is matched and scored (the seed's
    behaviour). ``all_groups``: groups are matched from last to first, each before the steps
    the next group matched, and ``steps_score`` is the mean over all groups."""


class AggregationConfig(_Section):
    """How per-question results are aggregated."""

    error_samples: Literal["exclude", "zero"] = "exclude"
    """``exclude``: responses with an error are left out of the statistics (the seed).
    ``zero``: they score 0 on ``steps_score`` and on every answer metric they would have had,
    so a system that fails more cannot look better."""


class RetrievalContextConfig(_Section):
    """The deterministic ``retrieval_context_*`` metrics of retrieval steps."""

    enabled: bool = True
    """Compute ``retrieval_context_recall``/``_precision``/``_f1`` and
    ``retrieval_context_ids_average_precision`` on actual retrieval steps."""

    similarity_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    """Two contexts without ids on both sides match when the normalised similarity of their
    texts (0-1, rapidfuzz ratio after case and whitespace folding) reaches this value."""


class EvaluationConfig(_Section):
    """The whole configuration. Every section is optional."""

    steps: StepsConfig = StepsConfig()
    """Step matching options."""

    aggregation: AggregationConfig = AggregationConfig()
    """Aggregation options."""

    retrieval_context: RetrievalContextConfig = RetrievalContextConfig()
    """Options of the deterministic retrieval-context metrics."""


ConfigSource = str | Path | Mapping[str, Any] | EvaluationConfig | None


def load_config(source: ConfigSource = None) -> EvaluationConfig:
    """Return the validated config for a path, a dict, a config object, or ``None`` (defaults).

    Raises :class:`ConfigError` with a one-line message naming the file and the key.
    """
    if source is None:
        return EvaluationConfig()
    if isinstance(source, EvaluationConfig):
        return source
    if isinstance(source, str | Path):
        from graphrag_eval.files import read_document  # files imports errors only

        label = str(source)
        try:
            data = read_document(Path(source))
        except FileNotFoundError:
            raise ConfigError("file not found", file=label) from None
        except ValueError as exc:
            raise ConfigError(str(exc), file=label) from None
        if data is None:
            return EvaluationConfig()
    elif isinstance(source, Mapping):
        label, data = "<config>", source
    else:
        raise ConfigError(
            f"expected a path, a dict or an EvaluationConfig, got {type(source).__name__}",
            file="<config>",
        )
    if not isinstance(data, Mapping):
        raise ConfigError(f"expected a mapping of sections, got {_kind(data)}", file=label)
    try:
        return EvaluationConfig.model_validate(dict(data))
    except ValidationError as exc:
        raise _config_error(exc, label) from None


def _config_error(exc: ValidationError, label: str) -> ConfigError:
    """Turn the first pydantic error into a one-line message; count the others."""
    errors = exc.errors()
    first = errors[0]
    path = ".".join(str(part) for part in first["loc"])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    if first["type"] == "extra_forbidden":
        message = "unknown key" + _suggestion(first["loc"]) + more
    else:
        message = f"{first['msg']} (got {first.get('input')!r}){more}"
    return ConfigError(message, file=label, field=path)


def _suggestion(loc: tuple[Any, ...]) -> str:
    """A 'did you mean' hint for an unknown key, from the fields of its section."""
    model: type[BaseModel] = EvaluationConfig
    for part in loc[:-1]:
        annotation = model.model_fields[str(part)].annotation
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return ""
        model = annotation
    known = list(model.model_fields)
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    if close:
        return f" (did you mean '{close[0]}'?)"
    return f" (known keys: {', '.join(known)})"


def _kind(value: object) -> str:
    return "a list" if isinstance(value, list) else type(value).__name__
