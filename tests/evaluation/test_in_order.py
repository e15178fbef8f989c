"""The items of a run are started in a bounded window and their results given in reference
order (evaluation/items.py): the run holds neither a task per question nor the results that
wait for an earlier one beyond the window, whatever order they finish in."""

from __future__ import annotations

import asyncio

from graphrag_eval.evaluation.items import in_order
from graphrag_eval.inputs import ReferenceQuestion
from graphrag_eval.inputs.reference import parse_reference
from graphrag_eval.results.model import QuestionResult

from builders import dataset, question


def _questions(count: int) -> list[ReferenceQuestion]:
    return parse_reference(dataset(*(question(f"q{i}", None) for i in range(count))))


def test_results_come_in_reference_order_when_items_finish_in_reverse() -> None:
    """In each window the later items finish first: item i waits until item i+1 is done."""
    questions = _questions(10)
    window = 4
    done = {q.id: asyncio.Event() for q in questions}
    started: list[str] = []
    emitted: list[str] = []
    in_flight: list[int] = []

    async def one(q: ReferenceQuestion) -> QuestionResult:
        started.append(q.id)
        in_flight.append(len(started) - len(emitted))
        index = int(q.id[1:])
        window_end = min((index // window + 1) * window, len(questions)) - 1
        if index < window_end:
            await done[f"q{index + 1}"].wait()
        done[q.id].set()
        return QuestionResult({"question_id": q.id, "template_id": q.template_id})

    def emit(result: QuestionResult) -> None:
        emitted.append(str(result.question_id))

    asyncio.run(in_order(questions, one, window, emit))
    assert emitted == [q.id for q in questions]
    assert max(in_flight) <= window


def test_an_interrupted_run_cancels_the_items_started() -> None:
    questions = _questions(6)
    cancelled: list[str] = []

    async def one(q: ReferenceQuestion) -> QuestionResult:
        try:
            await asyncio.Event().wait()  # never set: the run is stopped first
        except asyncio.CancelledError:
            cancelled.append(q.id)
            raise
        raise AssertionError("not reached")

    async def main() -> None:
        task = asyncio.ensure_future(in_order(questions, one, 3, lambda _: None))
        for _ in range(5):
            await asyncio.sleep(0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        for _ in range(5):
            await asyncio.sleep(0)

    asyncio.run(main())
    assert sorted(cancelled) == ["q0", "q1", "q2"]


def test_one_at_a_time_gives_every_result_in_order_and_stops_when_cancelled() -> None:
    """A window of 1 (a run without services) runs the items one after the other in the
    caller's task, and a cancelled run (Ctrl-C) stops between two items."""
    questions = _questions(6)
    emitted: list[str] = []
    task: asyncio.Task[None] | None = None

    async def one(q: ReferenceQuestion) -> QuestionResult:
        assert asyncio.current_task() is task  # no task of its own
        if q.id == "q3" and task is not None:
            task.cancel()  # as Ctrl-C does: the run stops at its next pause
        return QuestionResult({"question_id": q.id, "template_id": q.template_id})

    async def main() -> None:
        nonlocal task
        task = asyncio.ensure_future(
            in_order(questions, one, 1, lambda r: emitted.append(str(r.question_id)))
        )
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
    assert task is not None and task.cancelled()
    assert emitted == ["q0", "q1", "q2", "q3"]
