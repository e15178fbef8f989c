"""Metrics: the interface and registry (:mod:`.base`), the built-in metrics (registered
when this package is imported, :mod:`.builtin`), and the public extension API for your own
(docs/extending.md): declare a :class:`ItemMetric` or :class:`StepMetric` and register it with
:func:`register_metric`, in code or through the entry point group ``graphrag_eval.metrics``.
A metric reaches the run's judge, embedding model, BERTScore model and SPARQL store through
its item's typed :class:`Services` (``context.services.judge``, ...), builds a judge's messages
with :func:`messages`, reads the reply with :func:`json_reply` and turns a failed call into a
value with :func:`or_failed`. A metric with settings declares its config section
(``section``, and ``settings_model``, a :class:`Section`).
"""

from graphrag_eval.config.base import Section
from graphrag_eval.llm.replies import json_reply
from graphrag_eval.metrics import builtin as builtin
from graphrag_eval.metrics.base import (
    Aggregation,
    DerivedMetric,
    Failed,
    FailureKind,
    Input,
    ItemContext,
    ItemMetric,
    KeyKind,
    Metric,
    Outcome,
    OutputKey,
    Placement,
    Scored,
    Skipped,
    StepMetric,
    Unit,
)
from graphrag_eval.metrics.judging import messages, or_failed
from graphrag_eval.metrics.plugins import ENTRY_POINT_GROUP
from graphrag_eval.metrics.registry import register_metric, registered_metrics, unregister_metric
from graphrag_eval.metrics.services import Services, SparqlStore

__all__ = [
    "ENTRY_POINT_GROUP",
    "Aggregation",
    "DerivedMetric",
    "Failed",
    "FailureKind",
    "Input",
    "ItemContext",
    "ItemMetric",
    "KeyKind",
    "Metric",
    "Outcome",
    "OutputKey",
    "Placement",
    "Scored",
    "Section",
    "Services",
    "Skipped",
    "SparqlStore",
    "StepMetric",
    "Unit",
    "json_reply",
    "messages",
    "or_failed",
    "register_metric",
    "registered_metrics",
    "unregister_metric",
]
