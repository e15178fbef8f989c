"""What the LLM-judged metrics share: the judge's messages, one JSON judge call, and turning
a failed call into a :class:`~graphrag_eval.metrics.base.Failed` value.

The plan (:mod:`graphrag_eval.evaluation.planning`) runs a metric that needs the judge or
embeddings only when the run has them, so a metric takes them from its typed services
(:class:`~graphrag_eval.metrics.services.Services`) as given; a call that gives no usable
reply (a failure, the cost limit, a dry run) is a value, never an exception, through
:func:`or_failed` (docs/metrics.md, "How metrics are planned").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from graphrag_eval.errors import LLMError
from graphrag_eval.inputs import Response
from graphrag_eval.llm.engine import FollowUp, Judged, ListShape, LLMEngine
from graphrag_eval.llm.prompts import prompt
from graphrag_eval.llm.replies import json_reply
from graphrag_eval.metrics.base import (
    Failed,
    FailureKind,
    Input,
    ItemContext,
    ItemMetric,
    Placement,
)
from graphrag_eval.metrics.failure_kinds import failure_of
from graphrag_eval.metrics.services import need
from graphrag_eval.steps.retrieval import parse_contexts

__all__ = [
    "JudgedAnswer",
    "answer_fields",
    "ask",
    "contexts_of",
    "format_contexts",
    "has_contexts",
    "json_list",
    "messages",
    "not_sent",
    "or_failed",
]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


def not_sent(blank: str) -> Failed:
    """The failure of a metric whose prompt would carry a blank text: ``blank`` names it
    (e.g. ``reference_answer``); the judge is not asked."""
    return Failed(f"{blank} is blank; not sent to the judge", FailureKind.INPUT)


async def or_failed(call: Awaitable[T]) -> T | Failed:
    """The result of a judge or embedding call, or :class:`Failed` with the message of the
    :class:`~graphrag_eval.errors.LLMError` it raised (no usable reply, the cost limit, a dry
    run)."""
    try:
        return await call
    except LLMError as exc:
        return failure_of(exc)


def messages(user: str) -> list[dict[str, str]]:
    """The chat messages of a judge call: the shared system prompt and ``user``."""
    return [
        {"role": "system", "content": prompt("system")},
        {"role": "user", "content": user},
    ]


async def ask(
    engine: LLMEngine,
    template: str,
    schema: type[M],
    metric: str,
    fields: Mapping[str, Any],
    check: Callable[[M], None] | None = None,
    *,
    follow_up: FollowUp | None = None,
    shape: ListShape | None = None,
) -> Judged[M]:
    """One judge call: the prompt ``template`` filled with ``fields``, a JSON reply of
    ``schema`` (re-asked once when malformed or when ``check`` raises ``ReplyError``).
    ``follow_up``: what a dry run counts with it (the calls its reply would lead to);
    ``shape``: the list the reply holds, for a tighter schema."""
    return await engine.judge(
        messages(prompt(template).format(**fields)),
        json_reply(schema, check),
        metric=metric,
        schema=schema,
        follow_up=follow_up,
        shape=shape,
    )


class JudgedAnswer(ItemMetric):
    """What the metrics that judge the actual answer against the reference answer declare
    alike (``answer_correctness``, ``factual_accuracy``, ``answer_classification``): both
    answers, the judge, keys before the steps, not run by default; :meth:`_judge` makes their
    judge call."""

    uses_llm = True
    default = False
    inputs = (Input.REFERENCE_ANSWER, Input.ACTUAL_ANSWER)
    needs = frozenset({"judge"})
    placement = Placement.BEFORE_STEPS

    async def _judge(
        self,
        context: ItemContext,
        template: str,
        schema: type[M],
        fields: Mapping[str, Any],
        check: Callable[[M], None] | None = None,
    ) -> Judged[M] | Failed:
        """:func:`ask` the item's judge for this metric, a failed call as :class:`Failed`."""
        judge = need(context.services.judge, "judge")
        return await or_failed(ask(judge, template, schema, self.name, fields, check))


def answer_fields(context: ItemContext) -> dict[str, str]:
    """The question and both answers, as the answer prompts name them (the plan runs an
    answer metric only on items that have the answers it declares)."""
    return {
        "question": context.question.question_text,
        "reference_answer": context.question.reference_answer or "",
        "actual_answer": context.response.actual_answer or "",
    }


def format_contexts(texts: Sequence[str]) -> str:
    """Contexts numbered in rank order, one per paragraph."""
    return "\n\n".join(f"[{rank}] {text.strip()}" for rank, text in enumerate(texts, start=1))


def json_list(items: Sequence[str]) -> str:
    """Items as a numbered list for a prompt."""
    return "\n".join(f"{number}. {item.strip()}" for number, item in enumerate(items, start=1))


def has_contexts(response: Response) -> bool:
    """Whether the system retrieved at all (docs/inputs.md): the response has
    ``retrieved_contexts`` or ``retrieval`` steps. Without, context metrics do not apply."""
    return response.retrieved_contexts is not None or any(
        step.name == "retrieval" for step in response.actual_steps or ()
    )


def contexts_of(response: Response) -> list[str]:
    """The texts of the contexts the system retrieved (docs/inputs.md): ``retrieved_contexts`` on
    the response, else the contexts of its successful ``retrieval`` steps (in step order).
    Empty when retrieval returned nothing or failed (or the system did not retrieve:
    :func:`has_contexts`)."""
    if response.retrieved_contexts is not None:
        return [
            text
            for item in response.retrieved_contexts
            if isinstance(text := _context_text(item), str) and text.strip()
        ]
    texts: list[str] = []
    for step in response.actual_steps or ():
        if step.name != "retrieval" or not step.succeeded:
            continue  # a failed retrieval found nothing: scored 0, not left out
        try:
            contexts = parse_contexts(step.output)
        except ValueError:
            continue  # reported on the step by the retrieval metrics
        texts.extend(c.text for c in contexts if c.text is not None and c.text.strip())
    return texts


def _context_text(item: Any) -> Any:
    return item if isinstance(item, str) else item.get("text") if isinstance(item, dict) else None
