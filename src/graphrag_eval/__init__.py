"""graphrag-eval: score question-answering systems against a reference dataset.

Compares final answers and intermediate tool-call steps (SPARQL queries, retrieval, time
series, ...) of LLM agents, RAG and GraphRAG pipelines with reference answers and steps, and
aggregates the scores per question template::

    from graphrag_eval import run_evaluation, compute_aggregates

    evaluation_results = run_evaluation(reference_qas, chat_responses)
    aggregates = compute_aggregates(evaluation_results)

This module is the public surface; everything else is private and may change.
"""

from __future__ import annotations

from graphrag_eval.aggregation import compute_aggregates, load_results
from graphrag_eval.config import EvaluationConfig, load_config
from graphrag_eval.errors import ConfigError, GraphragEvalError, InputError
from graphrag_eval.evaluation import arun_evaluation, run_evaluation
from graphrag_eval.inputs import load_reference, load_responses
from graphrag_eval.steps.retrieval import average_precision, recall_at_k

__version__ = "6.0.0.dev0"

__all__ = [
    "ConfigError",
    "EvaluationConfig",
    "GraphragEvalError",
    "InputError",
    "__version__",
    "arun_evaluation",
    "average_precision",
    "compute_aggregates",
    "load_config",
    "load_reference",
    "load_responses",
    "load_results",
    "recall_at_k",
    "run_evaluation",
]
