"""The validated configuration of an evaluation run (docs/metrics.md, docs/llm.md).

A config can be given as a path to a YAML (or JSON) file, a dict, or an
:class:`EvaluationConfig`; :func:`load_config` turns any of them into the one typed object used
everywhere else. Unknown keys are errors, so a typo can never silently disable a metric.

The sections live in submodules that import nothing above them (:mod:`.llm`,
:mod:`.sections`, :mod:`.model`), so the engine and the metrics import those; a metric's own
section lives in the metric's module and joins the config when the metric is registered
(re-exported here under the names it always had). This package adds :func:`load_config`,
which also checks the metric names a config uses against the registered metrics
(:func:`graphrag_eval.evaluation.planning.check_metric_names`): it sits above the metrics, and
nothing
below it imports it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphrag_eval.config.llm import (
    BUNDLED_MODEL,
    CacheConfig,
    EmbeddingConfig,
    GenerationConfig,
    LLMConfig,
    ModelPrice,
)
from graphrag_eval.config.model import ConfigSource, EvaluationConfig, parse_config
from graphrag_eval.config.secrets import mask_secrets, secret_values
from graphrag_eval.config.sections import (
    AggregationConfig,
    BertScoreConfig,
    CustomEvaluationConfig,
    StepsConfig,
)
from graphrag_eval.errors import ConfigError
from graphrag_eval.files.documents import JSONL_SUFFIXES, read_document
from graphrag_eval.inputs.shapes import TEMPLATE_KEYS

if TYPE_CHECKING:
    from graphrag_eval.metrics.answer_classification import (
        DEFAULT_NON_ANSWERS,
        DEFAULT_UNCERTAINTY_PHRASES,
        AnswerClassificationConfig,
    )
    from graphrag_eval.metrics.answer_correctness import (
        ANSWER_CORRECTNESS_PLACEHOLDERS,
        AnswerCorrectnessConfig,
    )
    from graphrag_eval.metrics.answer_relevance import AnswerRelevanceConfig
    from graphrag_eval.metrics.factual_accuracy import FactualAccuracyConfig
    from graphrag_eval.metrics.ragas import RagasConfig
    from graphrag_eval.metrics.retrieval_answer import RetrievalAnswerConfig
    from graphrag_eval.metrics.retrieval_context import RetrievalContextConfig

# The metrics' own sections, re-exported under the names they always had; imported when
# first asked for, since the metrics import the engine, which imports this package's
# submodules (and so this package) first.
_FROM_METRICS = {
    "ANSWER_CORRECTNESS_PLACEHOLDERS": "answer_correctness",
    "AnswerClassificationConfig": "answer_classification",
    "AnswerCorrectnessConfig": "answer_correctness",
    "AnswerRelevanceConfig": "answer_relevance",
    "DEFAULT_NON_ANSWERS": "answer_classification",
    "DEFAULT_UNCERTAINTY_PHRASES": "answer_classification",
    "FactualAccuracyConfig": "factual_accuracy",
    "RagasConfig": "ragas",
    "RetrievalAnswerConfig": "retrieval_answer",
    "RetrievalContextConfig": "retrieval_context",
}


def __getattr__(name: str) -> Any:
    module = _FROM_METRICS.get(name)
    if module is None:
        raise AttributeError(f"module 'graphrag_eval.config' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"graphrag_eval.metrics.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ANSWER_CORRECTNESS_PLACEHOLDERS",
    "BUNDLED_MODEL",
    "DEFAULT_NON_ANSWERS",
    "DEFAULT_UNCERTAINTY_PHRASES",
    "AggregationConfig",
    "AnswerClassificationConfig",
    "AnswerCorrectnessConfig",
    "AnswerRelevanceConfig",
    "BertScoreConfig",
    "CacheConfig",
    "ConfigSource",
    "CustomEvaluationConfig",
    "EmbeddingConfig",
    "EvaluationConfig",
    "FactualAccuracyConfig",
    "GenerationConfig",
    "LLMConfig",
    "ModelPrice",
    "RagasConfig",
    "RetrievalAnswerConfig",
    "RetrievalContextConfig",
    "StepsConfig",
    "load_config",
    "mask_secrets",
    "secret_values",
]


def load_config(source: ConfigSource = None) -> EvaluationConfig:
    """Return the validated config for a path, a dict, a config object, or ``None`` (defaults):
    its shape, and the metric names it uses (unknown, repeated or disabled metrics; custom
    evaluations taking a metric's name or key).

    Raises :class:`~graphrag_eval.errors.ConfigError` with a one-line message naming the file
    and the key.
    """
    from graphrag_eval.evaluation.planning import (
        check_metric_names,  # above the metrics: see the top
    )

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
