"""The configuration of an evaluation run, validated for its shape (docs/metrics.md,
docs/llm.md).

A config can be given as a path to a YAML (or JSON) file, a dict, or an
:class:`EvaluationConfig`; :func:`parse_config` turns any of them into the one typed object
used everywhere else. Unknown keys are errors, so a typo can never silently disable a metric.

This package imports nothing above it: the engine, the metrics and the runner import it. A
metric's own section lives in the metric's module and joins the config when the metric is
registered (:func:`add_section`). The metric names a config uses are checked against the
registered metrics by :func:`graphrag_eval.metrics.loading.load_config`, above the metrics.
"""

from __future__ import annotations

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

__all__ = [
    "BUNDLED_MODEL",
    "AggregationConfig",
    "BertScoreConfig",
    "CacheConfig",
    "ConfigSource",
    "CustomEvaluationConfig",
    "EmbeddingConfig",
    "EvaluationConfig",
    "GenerationConfig",
    "LLMConfig",
    "ModelPrice",
    "StepsConfig",
    "mask_secrets",
    "parse_config",
    "secret_values",
]
