"""The whole configuration (:class:`EvaluationConfig`) and reading one from a path, a dict or
a config object, checking its shape only (:func:`parse_config`). Whether the metric names it
uses exist is checked above the metrics, by :func:`graphrag_eval.config.load_config`
(docs/metrics.md, "Choosing metrics")."""

from __future__ import annotations

import difflib
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError, field_validator
from pydantic.fields import FieldInfo

from graphrag_eval.config.base import Section
from graphrag_eval.config.llm import LLMConfig
from graphrag_eval.config.secrets import mask_secrets, without_secrets
from graphrag_eval.config.sections import (
    AggregationConfig,
    BertScoreConfig,
    CustomEvaluationConfig,
    StepsConfig,
)
from graphrag_eval.errors import ConfigError
from graphrag_eval.files import read_document

__all__ = [
    "ConfigSource",
    "EvaluationConfig",
    "add_section",
    "parse_config",
    "remove_section",
]


S = TypeVar("S", bound=BaseModel)


class EvaluationConfig(Section):
    """The whole configuration. Every section is optional.

    Besides the sections below, each metric that has settings declares its own section
    (``Metric.section`` and ``Metric.settings_model``, e.g. ``answer_correctness``,
    ``ragas``); registering the metric adds it here (:func:`add_section`), before the
    ``metrics`` list.
    """

    steps: StepsConfig = StepsConfig()
    """Step matching options."""

    aggregation: AggregationConfig = AggregationConfig()
    """Aggregation options."""

    llm: LLMConfig = LLMConfig()
    """The LLM judge and embedding endpoints."""

    custom_evaluations: list[CustomEvaluationConfig] = Field(default_factory=list)
    """Judge calls with your own instructions and outputs."""

    bert_score: BertScoreConfig = BertScoreConfig()
    """BERTScore (a local model)."""

    metrics: Literal["all"] | list[str] | None = None
    """The metrics to run, by name (``answer_correctness``, ``answer_relevance``,
    ``retrieval_answer``, ``retrieval_context``, ``ragas_faithfulness``,
    ``ragas_context_precision``, ``ragas_context_recall``, ``ragas_answer_relevance``,
    ``ragas_score``, ``factual_accuracy``, ``semantic_similarity``, ``bert_score``,
    ``answer_classification``, custom evaluation names), or ``all``. A listed metric whose
    model is not configured is an error. Default (docs/metrics.md, "Choosing metrics"):
    ``answer_correctness``, ``answer_relevance``, ``retrieval_answer``,
    ``retrieval_context`` and custom evaluations, each where its inputs and models are
    available. ``steps_score`` and the usage counts are always computed."""

    @field_validator("metrics", mode="before")
    @classmethod
    def _all_or_list(cls, value: Any) -> Any:
        if isinstance(value, str) and value != "all":
            raise ValueError(f"expected a list of metric names or 'all', got '{value}'")
        return value

    def section(self, name: str, model: type[S]) -> S:
        """The settings of the section ``name``, a ``model`` (a metric's own section)."""
        value = getattr(self, name)
        if not isinstance(value, model):
            raise TypeError(f"config section '{name}' is not a {model.__name__}")
        return value

    def scoring_fingerprint(self) -> dict[str, Any]:
        """The settings that can change a score (not concurrency, limits, cache or budget):
        what a resumed run must share with the run it continues."""
        data = self.model_dump(mode="json")
        llm = data.pop("llm")
        data["llm"] = {key: without_secrets(llm[key]) for key in ("generation", "embedding")}
        data["llm"]["prices"] = llm["prices"]
        masked: dict[str, Any] = mask_secrets(data)
        return masked

    def public_dump(self) -> dict[str, Any]:
        """The config as plain data with every secret masked (for ``run.yaml``)."""
        masked: dict[str, Any] = mask_secrets(self.model_dump(mode="json"))
        return masked


def add_section(name: str, model: type[Section], doc: str | None = None) -> None:
    """Add the config section ``name`` (settings ``model``, all fields with defaults) that a
    metric declares; adding the same section again does nothing. Raises ``ValueError`` when
    the name is taken by another section."""
    fields = dict(EvaluationConfig.model_fields)
    existing = fields.get(name)
    if existing is not None:
        if existing.annotation is model:
            return
        raise ValueError(f"config section '{name}' is already declared")
    section = FieldInfo.from_annotated_attribute(model, model())
    section.description = doc or model.__doc__
    metrics = fields.pop("metrics")
    fields[name] = section
    fields["metrics"] = metrics  # the selection stays last
    _set_fields(fields)


def remove_section(name: str) -> None:
    """Remove a section :func:`add_section` added (when no metric declares it any more)."""
    fields = dict(EvaluationConfig.model_fields)
    if name in _CORE_SECTIONS or fields.pop(name, None) is None:
        return
    _set_fields(fields)


def _set_fields(fields: dict[str, FieldInfo]) -> None:
    EvaluationConfig.model_fields.clear()
    EvaluationConfig.model_fields.update(fields)
    EvaluationConfig.model_rebuild(force=True)


_CORE_SECTIONS = frozenset(EvaluationConfig.model_fields)
"""The sections every config has; the others come from metrics."""

ConfigSource = str | Path | Mapping[str, Any] | EvaluationConfig | None
"""What a config can be given as: a path to YAML or JSON, a dict, a config, or ``None``."""


def parse_config(source: ConfigSource = None) -> EvaluationConfig:
    """The config of a path, a dict, a config object, or ``None`` (defaults), with its shape
    validated (not the metric names it uses: :func:`graphrag_eval.config.load_config`).

    Raises :class:`ConfigError` with a one-line message naming the file and the key.
    """
    if source is None:
        return EvaluationConfig()
    if isinstance(source, EvaluationConfig):
        return source
    if isinstance(source, str | Path):
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
    elif first["type"] == "value_error":
        message = str(first["msg"]).removeprefix("Value error, ") + more
    elif any("api_key" in str(part) for part in first["loc"]):
        message = f"{first['msg']}{more}"  # never echo what may be a secret
    else:
        message = f"{first['msg']} (got {_short(first.get('input'))}){more}"
    return ConfigError(message, file=label, field=path)


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside an annotation such as ``X``, ``X | None`` or ``list[X]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in typing.get_args(annotation):
        model = _model_in(argument)
        if model is not None:
            return model
    return None


def _suggestion(loc: tuple[Any, ...]) -> str:
    """A 'did you mean' hint for an unknown key, from the fields of its section."""
    model: type[BaseModel] = EvaluationConfig
    keyed = False  # the previous part was a mapping of sections, so this part is a key
    for part in loc[:-1]:
        if isinstance(part, int) or keyed:  # an index into a list, a key of a mapping
            keyed = False
            continue
        field = model.model_fields.get(str(part))
        inner = _model_in(field.annotation) if field is not None else None
        if field is None or inner is None:
            return ""
        keyed = typing.get_origin(field.annotation) is dict
        model = inner
    known = list(model.model_fields)
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    if close:
        return f" (did you mean '{close[0]}'?)"
    return f" (known keys: {', '.join(known)})"


def _kind(value: object) -> str:
    return "a list" if isinstance(value, list) else type(value).__name__
