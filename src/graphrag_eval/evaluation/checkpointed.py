"""A run that checkpoints as it goes: each finished item appended to the run's
``results.jsonl`` (a :class:`~graphrag_eval.results.results_log.ResultsLog`) so that an
interrupted run loses nothing, and the items kept from an earlier run not evaluated again
(docs/llm.md, "Resume"; the checkpoint itself is
:mod:`graphrag_eval.results.checkpoint`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphrag_eval.config import EvaluationConfig
from graphrag_eval.evaluation.runner import ItemCallback, ResultCallback, evaluate
from graphrag_eval.graph.execution import GraphStore
from graphrag_eval.inputs import ReferenceQuestion, ResponseSet
from graphrag_eval.llm.engine import LLMEngine
from graphrag_eval.results.results_log import ResultsLog
from graphrag_eval.results.run import EvaluationRun

__all__ = ["evaluate_checkpointed"]


async def evaluate_checkpointed(
    log: ResultsLog,
    questions: Sequence[ReferenceQuestion],
    response_set: ResponseSet,
    config: EvaluationConfig,
    *,
    engine: LLMEngine | None = None,
    on_item: ItemCallback | None = None,
    on_result: ResultCallback | None = None,
    keep: bool = True,
    store: GraphStore | None = None,
) -> EvaluationRun:
    """Evaluate ``questions`` against ``response_set``, appending each finished item to
    ``log`` so that an interrupted run loses nothing; the items the log kept from an earlier
    run are not evaluated again. ``on_item`` is called after each item is written;
    ``on_result``, ``keep`` and ``store`` are
    :func:`~graphrag_eval.evaluation.runner.evaluate`'s. The results file is left in finishing
    order: ``write_run`` puts it in reference order::

        checkpoint = open_run(out_dir, reference, responses, config, questions)
        with start_checkpoint(checkpoint) as log:
            run = await evaluate_checkpointed(log, questions, response_set, config)
    """

    def record(result: dict[str, Any]) -> None:
        log.append(result)
        if on_item is not None:
            on_item(result)

    return await evaluate(
        questions,
        response_set,
        config,
        on_item=record,
        engine=engine,
        done=log.kept,
        on_result=on_result,
        keep=keep,
        store=store,
    )
