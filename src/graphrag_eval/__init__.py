"""graphrag-eval: score question-answering systems against a reference dataset.

Compares final answers and intermediate tool-call steps (SPARQL queries, retrieval, time
series, ...) of LLM agents, RAG and GraphRAG pipelines with reference answers and steps, and
aggregates the scores per question template::

    from graphrag_eval import run_evaluation, compute_aggregates

    evaluation_results = run_evaluation(reference_qas, chat_responses)
    aggregates = compute_aggregates(evaluation_results)

Saved runs can be reported on and compared::

    from graphrag_eval import load_run, compare_results, write_report, results_frame

    baseline, candidate = load_run("baseline/"), load_run("candidate/")
    write_report(candidate, "report.html")
    comparison = compare_results(baseline.results, candidate.results)
    frame = results_frame(candidate.results)    # pandas, with the ``report`` extra

This module is the public surface; everything else is private and may change.
"""

from __future__ import annotations

from graphrag_eval.errors import ConfigError, GraphragEvalError, InputError
from graphrag_eval.version import __version__

# typing.TYPE_CHECKING without importing typing: the command line guards Ctrl-C and SIGTERM
# only once this module is imported (graphrag_eval.cli), so it imports nothing Python has
# not loaded already (docs/security.md, "Signals").
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from graphrag_eval.comparison.compare import compare_results
    from graphrag_eval.comparison.frames import comparison_frame
    from graphrag_eval.comparison.page import write_comparison
    from graphrag_eval.config import EvaluationConfig
    from graphrag_eval.evaluation.runner import arun_evaluation, run_evaluation
    from graphrag_eval.inputs import load_reference, load_responses
    from graphrag_eval.metrics.loading import load_config
    from graphrag_eval.report.frames import aggregates_frame, results_frame
    from graphrag_eval.report.html import write_report
    from graphrag_eval.results.aggregation import compute_aggregates, load_results
    from graphrag_eval.results.read_run import load_run
    from graphrag_eval.steps.retrieval import average_precision, recall_at_k
del TYPE_CHECKING  # not part of the public surface


# Each name is imported when first asked for: the command line guards Ctrl-C before it
# imports the rest (graphrag_eval.cli), and reporting pulls in numpy, Jinja and pygal.
_LAZY = {
    "aggregates_frame": "graphrag_eval.report.frames",
    "arun_evaluation": "graphrag_eval.evaluation.runner",
    "average_precision": "graphrag_eval.steps.retrieval",
    "compare_results": "graphrag_eval.comparison.compare",
    "comparison_frame": "graphrag_eval.comparison.frames",
    "compute_aggregates": "graphrag_eval.results.aggregation",
    "EvaluationConfig": "graphrag_eval.config",
    "load_config": "graphrag_eval.metrics.loading",
    "load_reference": "graphrag_eval.inputs",
    "load_responses": "graphrag_eval.inputs",
    "load_results": "graphrag_eval.results.aggregation",
    "load_run": "graphrag_eval.results.read_run",
    "recall_at_k": "graphrag_eval.steps.retrieval",
    "results_frame": "graphrag_eval.report.frames",
    "run_evaluation": "graphrag_eval.evaluation.runner",
    "write_comparison": "graphrag_eval.comparison.page",
    "write_report": "graphrag_eval.report.html",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'graphrag_eval' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "ConfigError",
    "EvaluationConfig",
    "GraphragEvalError",
    "InputError",
    "__version__",
    "aggregates_frame",
    "arun_evaluation",
    "average_precision",
    "compare_results",
    "comparison_frame",
    "compute_aggregates",
    "load_config",
    "load_reference",
    "load_responses",
    "load_results",
    "load_run",
    "recall_at_k",
    "results_frame",
    "run_evaluation",
    "write_comparison",
    "write_report",
]
