"""The whole configuration (:class:`EvaluationConfig`) and reading one from a path, a dict or
a config object, checking its shape only (:func:`parse_config`). Whether the metric names it
uses exist is checked above the metrics, by :func:`graphrag_eval.config.load_config`
(docs/metrics.md, "Choosing metrics")."""

from __future__ import annotations

import difflib
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, PrivateAttr, ValidationError, field_validator

from graphrag_eval.config.base import Section
from graphrag_eval.config.llm import LLMConfig
from graphrag_eval.config.secrets import mask_secrets, without_secrets
from graphrag_eval.config.sections import (
    AggregationConfig,
    BertScoreConfig,
    CustomEvaluationConfig,
    StepsConfig,
)
from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.errors import ConfigError
from graphrag_eval.files.documents import read_document

__all__ = [
    "ConfigSource",
    "EvaluationConfig",
    "add_section",
    "metric_sections",
    "parse_config",
    "remove_section",
    "set_section_loader",
]


S = TypeVar("S", bound=BaseModel)


class EvaluationConfig(Section):
    """The whole configuration. Every section is optional.

    Besides the sections below, each metric that has settings declares its own section
    (``Metric.section`` and ``Metric.settings_model``, e.g. ``answer_correctness``,
    ``ragas``): :func:`parse_config` validates it with the model the registry knows for it
    once the metrics (entry points included) are registered, and :meth:`section` gives it,
    its defaults where the config leaves it out. The class itself never changes.
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

    sparql: SparqlConfig = SparqlConfig()
    """The knowledge graph SPARQL steps are executed against (docs/knowledge-graph.md)."""

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

    _sections: dict[str, Section] = PrivateAttr(default_factory=dict)
    """The metrics' sections the config gives, validated (:func:`parse_config`)."""

    def section(self, name: str, model: type[S]) -> S:
        """The settings of the section ``name``, a ``model`` (a metric's own section): as the
        config gives them, or the model's defaults."""
        value = self._sections.get(name)
        if value is None:
            return model()
        if not isinstance(value, model):
            raise TypeError(f"config section '{name}' is not a {model.__name__}")
        return value

    def with_sections(self, sections: Mapping[str, Section]) -> EvaluationConfig:
        """This config with the metrics' ``sections`` (validated settings, by name)."""
        config = self.model_copy()
        config._sections = {**self._sections, **sections}
        return config

    def as_data(self) -> dict[str, Any]:
        """The whole config as plain data: its own sections, every metric's section (its
        defaults where the config leaves it out), then the ``metrics`` list."""
        data = self.model_dump(mode="json")
        selection = data.pop("metrics")
        for name, model in metric_sections().items():
            data[name] = self.section(name, model).model_dump(mode="json")
        data["metrics"] = selection
        return data

    def scoring_fingerprint(self) -> dict[str, Any]:
        """The settings that can change a score (not concurrency, limits, cache or budget):
        what a resumed run must share with the run it continues."""
        data = self.as_data()
        llm = data.pop("llm")
        data["llm"] = {key: without_secrets(llm[key]) for key in ("generation", "embedding")}
        data["llm"]["prices"] = llm["prices"]
        if llm.get("repeats", 1) != 1:  # absent at 1: a checkpoint of before repeats resumes
            data["llm"]["repeats"] = llm["repeats"]
        masked: dict[str, Any] = mask_secrets(data)
        return masked

    def public_dump(self) -> dict[str, Any]:
        """The config as plain data with every secret masked (for ``run.yaml``)."""
        masked: dict[str, Any] = mask_secrets(self.as_data())
        return masked


_METRIC_SECTIONS: dict[str, type[Section]] = {}
"""The sections metrics declare, by name, in registration order (:func:`add_section`)."""

_section_loader: Callable[[], None] | None = None
"""What registers the metrics that declare sections (entry points included) before a config
is read: set by the metrics' registry (:func:`set_section_loader`)."""


def set_section_loader(load: Callable[[], None]) -> None:
    """Have :func:`parse_config` call ``load`` first, so every metric that declares a section
    is registered whatever was imported before (the registry below the metrics sets it)."""
    global _section_loader
    _section_loader = load


def metric_sections() -> dict[str, type[Section]]:
    """The sections the registered metrics declare, by name, after registering them."""
    if _section_loader is not None:
        _section_loader()
    return dict(_METRIC_SECTIONS)


def add_section(name: str, model: type[Section], doc: str | None = None) -> None:
    """Declare the config section ``name`` (settings ``model``, all fields with defaults) of a
    metric; declaring the same section again does nothing. Raises ``ValueError`` when the
    name is taken by another section. ``doc``: unused (the model's docstring describes it),
    kept for callers of earlier versions."""
    existing = _METRIC_SECTIONS.get(name)
    if existing is model:
        return
    if existing is not None or name in EvaluationConfig.model_fields:
        raise ValueError(f"config section '{name}' is already declared")
    _METRIC_SECTIONS[name] = model


def remove_section(name: str) -> None:
    """Forget a section :func:`add_section` declared (when no metric declares it any more)."""
    _METRIC_SECTIONS.pop(name, None)


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
    models = metric_sections()
    own = {key: value for key, value in data.items() if key not in models}
    try:
        config = EvaluationConfig.model_validate(own)
    except ValidationError as exc:
        raise _config_error(exc, label) from None
    sections: dict[str, Section] = {}
    for name, model in models.items():
        if name in data:
            try:
                sections[name] = model.model_validate(data[name])
            except ValidationError as exc:
                raise _config_error(exc, label, within=name) from None
    if isinstance(source, str | Path):
        config = _data_beside(config, Path(source).parent)
    return config.with_sections(sections) if sections else config


def _data_beside(config: EvaluationConfig, directory: Path) -> EvaluationConfig:
    """``config`` with the relative paths of ``sparql.data`` and ``sparql.store_directory``
    read from ``directory`` (the config file's)."""
    sparql = config.sparql
    if not sparql.data:
        return config
    data = [str(directory / path) for path in sparql.data]
    store = sparql.store_directory
    if store is not None:
        store = str(directory / store)
    moved = sparql.model_copy(update={"data": data, "store_directory": store})
    return config.model_copy(update={"sparql": moved})


def _config_error(exc: ValidationError, label: str, within: str | None = None) -> ConfigError:
    """Turn the first pydantic error into a one-line message; count the others. ``within``:
    the metric's section that was validated (its name starts the error's location)."""
    errors = exc.errors()
    first = errors[0]
    loc = (within, *first["loc"]) if within is not None else tuple(first["loc"])
    path = ".".join(str(part) for part in loc)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    if first["type"] == "extra_forbidden":
        message = "unknown key" + _suggestion(loc) + more
    elif first["type"] == "value_error":
        message = str(first["msg"]).removeprefix("Value error, ") + more
    elif any("api_key" in str(part) for part in loc):
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
    sections = metric_sections()
    keyed = False  # the previous part was a mapping of sections, so this part is a key
    for depth, part in enumerate(loc[:-1]):
        if isinstance(part, int) or keyed:  # an index into a list, a key of a mapping
            keyed = False
            continue
        if depth == 0 and part in sections:
            model = sections[str(part)]
            continue
        field = model.model_fields.get(str(part))
        inner = _model_in(field.annotation) if field is not None else None
        if field is None or inner is None:
            return ""
        keyed = typing.get_origin(field.annotation) is dict
        model = inner
    known = list(model.model_fields)
    if len(loc) == 1:  # a top-level key: the metrics' sections are known too
        known = [*known[:-1], *sections, known[-1]]
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    if close:
        return f" (did you mean '{close[0]}'?)"
    return f" (known keys: {', '.join(known)})"


def _kind(value: object) -> str:
    return "a list" if isinstance(value, list) else type(value).__name__
