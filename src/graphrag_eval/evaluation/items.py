"""Scoring the items of one run: each item with its response, at most so many at a time
(:class:`ItemRunner`), and the results given in reference order as they are done
(:func:`in_order`), for :mod:`graphrag_eval.evaluation.runner` (docs/architecture.md, "The
data flow")."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from graphrag_eval.config import EvaluationConfig
from graphrag_eval.evaluation.scoring import evaluate_item
from graphrag_eval.inputs import Diagnostics, Notice, ReferenceQuestion, Response, ResponseSet
from graphrag_eval.inputs.reference import CompactQuestion
from graphrag_eval.llm.batch.lane import BatchLane
from graphrag_eval.metrics.base import Metric
from graphrag_eval.metrics.services import Services
from graphrag_eval.results.model import QuestionResult
from graphrag_eval.results.to_records import to_record

__all__ = ["ORDER_WINDOW", "ItemCallback", "ItemRunner", "ResultCallback", "Sinks", "in_order"]

logger = logging.getLogger("graphrag_eval")

ItemCallback = Callable[[dict[str, Any]], None]
ResultCallback = Callable[[QuestionResult], None]


ORDER_WINDOW = 4
"""How many times the items in flight may be started past the earliest unfinished one: the
results waiting to be given in reference order are bounded by that many."""


@dataclass(frozen=True, slots=True)
class Sinks:
    """Where an evaluation's results go: each flat result as it is final (``on_item``), each
    typed result in reference order (``on_result``), and whether the run keeps them."""

    on_item: ItemCallback | None
    on_result: ResultCallback | None
    keep: bool


@dataclass(slots=True)
class ItemRunner:
    """Evaluates the items of one run, at most ``slots`` at a time."""

    config: EvaluationConfig
    metrics: Sequence[Metric]
    response_set: ResponseSet
    diagnostics: Diagnostics
    services: Services
    slots: asyncio.Semaphore
    kept: Mapping[str, QuestionResult]
    on_item: ItemCallback | None
    drop_responses: bool = False
    """Take each response out of the set once its item is scored (the caller does not need
    the set after the run), so that the responses' memory goes as the run advances."""
    batch: BatchLane | None = None
    """The judge's batch lane in batch mode: each item scored counts as in flight there
    (its batch is submitted when every item in flight waits on it)."""

    async def one(self, question: ReferenceQuestion) -> QuestionResult:
        """The result of ``question`` (kept from a previous run, or evaluated now)."""
        responses = self.response_set.responses
        response = (
            responses.pop(question.id, None) if self.drop_responses else responses.get(question.id)
        )
        if question.id in self.kept:
            _release(question, response)
            return self.kept[question.id]
        async with self.slots:
            try:
                if isinstance(question, CompactQuestion):
                    question = question.load()  # kept compact until now
                with self.batch.item() if self.batch is not None else nullcontext():
                    result, notices = await evaluate_item(
                        question,
                        response,
                        self.metrics,
                        self.config,
                        source=self.response_set.source,
                        services=self.services,
                    )
            except Exception as exc:  # a bug or an extreme input costs this item only
                logger.exception("could not evaluate question %r", question.id)
                result = _unevaluated_result(question, exc)
                notices = [_unevaluated_notice(self.response_set.source, question, exc)]
            finally:
                _release(question, response)
        self.diagnostics.extend(notices)
        if self.on_item is not None:
            self.on_item(to_record(result))
        return result


async def in_order(
    questions: Sequence[ReferenceQuestion],
    one: Callable[[ReferenceQuestion], Awaitable[QuestionResult]],
    window: int,
    emit: ResultCallback,
) -> None:
    """Evaluate ``questions`` with ``one`` and ``emit`` each result in reference order, as
    soon as it and those before it are done; a question is started only while fewer than
    ``window`` are started and not yet emitted (the items in flight are bounded by ``one``
    itself), so neither the tasks nor the results waiting for an earlier one grow with the
    run. A ``window`` of 1 evaluates the questions one after the other in the caller's task:
    a run whose items never wait for a service gains nothing from a task per item."""
    if window <= 1:  # one at a time (a run without services): no task per item
        for question in questions:
            emit(await one(question))
            await asyncio.sleep(0)  # where Ctrl-C's cancellation of the run reaches it
        return
    pending: deque[asyncio.Future[QuestionResult]] = deque()
    try:
        for question in questions:
            while len(pending) >= window:
                emit(await pending.popleft())
            pending.append(asyncio.ensure_future(one(question)))
        while pending:
            emit(await pending.popleft())
    finally:
        for task in pending:  # interrupted (Ctrl-C cancels the run): nothing runs on
            task.cancel()


def _unevaluated_result(question: ReferenceQuestion, exc: Exception) -> QuestionResult:
    """The result of an item graphrag-eval could not evaluate: counted with the error
    samples, flagged with ``evaluation_error``, and without copies of its inputs (copying
    them may be what failed)."""
    return QuestionResult(
        {
            "template_id": question.template_id,
            "question_id": question.id,
            "question_text": question.question_text,
            "status": "error",
            "error": f"graphrag-eval could not evaluate this item: {exc!r}",
            "evaluation_error": True,
        }
    )


def _unevaluated_notice(source: str, question: ReferenceQuestion, exc: Exception) -> Notice:
    return Notice(
        "evaluation_error",
        f"could not be evaluated: {exc!r}",
        file=source,
        item=f"question '{question.id}'",
    )


def _release(question: ReferenceQuestion, response: Response | None) -> None:
    """Drop what match rules derived from the item's steps (parsed outputs): the item is
    done, and a large dataset should not keep every parsed result alive."""
    for group in question.reference_steps or ():
        for reference_step in group:
            reference_step.memo.clear()
    for actual_step in (response.actual_steps if response is not None else None) or ():
        actual_step.memo.clear()
