"""The built-in metrics, registered in their output order through the same
:func:`~graphrag_eval.metrics.registry.register_metric` a user's metric goes through
(docs/metrics.md). Importing :mod:`graphrag_eval.metrics` imports this module, so every
registry reader sees them."""

from __future__ import annotations

from graphrag_eval.metrics.answer_classification import AnswerClassification
from graphrag_eval.metrics.answer_correctness import AnswerCorrectness
from graphrag_eval.metrics.answer_relevance import AnswerRelevance
from graphrag_eval.metrics.base import Metric
from graphrag_eval.metrics.custom import custom_metrics
from graphrag_eval.metrics.factual_accuracy import FactualAccuracy
from graphrag_eval.metrics.ragas import (
    RagasAnswerRelevance,
    RagasContextPrecision,
    RagasContextRecall,
    RagasFaithfulness,
    RagasScore,
)
from graphrag_eval.metrics.registry import (
    builtins_registered,
    register_config_metrics,
    register_metric,
)
from graphrag_eval.metrics.retrieval_answer import RetrievalAnswer
from graphrag_eval.metrics.retrieval_context import RetrievalContext
from graphrag_eval.metrics.similarity import BertScore, SemanticSimilarity
from graphrag_eval.metrics.steps_score import StepsScore
from graphrag_eval.metrics.test_suite import TestSuiteAccuracy
from graphrag_eval.metrics.usage import Usage

__all__ = ["BUILTIN_METRICS"]

BUILTIN_METRICS: tuple[Metric, ...] = (
    AnswerCorrectness(),
    AnswerRelevance(),
    FactualAccuracy(),
    AnswerClassification(),
    SemanticSimilarity(),
    BertScore(),
    StepsScore(),
    TestSuiteAccuracy(),
    RetrievalAnswer(),
    RetrievalContext(),
    RagasFaithfulness(),
    RagasContextPrecision(),
    RagasContextRecall(),
    RagasAnswerRelevance(),
    RagasScore(),
    Usage(),
)
"""In output order."""

for _metric in BUILTIN_METRICS:
    register_metric(_metric)
register_config_metrics(custom_metrics)
builtins_registered()
