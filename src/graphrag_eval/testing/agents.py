"""Asking an agent every question of a reference dataset, a few at a time, for the pytest
plugin (docs/integrations.md, "pytest").

The agent is a callable, plain or ``async``, given an :class:`AgentQuestion` and returning
the response in the format of a responses file (docs/inputs.md): a mapping with
``actual_answer``, ``actual_steps`` and so on (``question_id`` is filled in), or a string, the
answer alone. An agent that raises, or returns something that is no response, fails on that
question only: the question gets an error response saying why (an error sample, as in any
responses file), and the others are asked and scored.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import json
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graphrag_eval.inputs import ReferenceQuestion

__all__ = ["Agent", "AgentFailure", "AgentQuestion", "ask_agent"]

Agent = Callable[["AgentQuestion"], Any]
"""``agent(question) -> response`` or ``async def agent(question) -> response``."""

_MESSAGE_CHARS = 500  # an exception's message is kept to this many characters


class _NotAResponse(ValueError):
    """What the agent returned is no response."""


@dataclass(frozen=True, slots=True)
class AgentQuestion:
    """What an agent is asked: the question's id, its text and its template's id
    (``str(question)`` is the text)."""

    id: str
    text: str
    template_id: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class AgentFailure:
    """A question the agent failed on: why (its exception, or what it returned)."""

    question_id: str
    template_id: str
    reason: str


def ask_agent(
    agent: Agent,
    questions: Sequence[ReferenceQuestion],
    concurrency: int,
    timeout: float | None = None,
) -> Awaitable[tuple[list[dict[str, Any]], list[AgentFailure]]]:
    """Ask ``agent`` every question, at most ``concurrency`` at a time (a plain function in
    worker threads), each for at most ``timeout`` seconds: the responses in the reference's
    order, and the questions it failed on."""
    return _ask_all(agent, questions, max(1, concurrency), timeout)


async def _ask_all(
    agent: Agent, questions: Sequence[ReferenceQuestion], concurrency: int, timeout: float | None
) -> tuple[list[dict[str, Any]], list[AgentFailure]]:
    slots = asyncio.Semaphore(concurrency)

    async def one(question: ReferenceQuestion) -> tuple[dict[str, Any], AgentFailure | None]:
        asked = AgentQuestion(question.id, question.question_text, question.template_id)
        async with slots:
            deadline = asyncio.timeout(timeout)
            try:
                async with deadline:
                    reply = await _call(agent, asked)
                return _response(question, reply), None
            except (Exception, SystemExit) as exc:  # the agent's error: that question's
                reason = _reason(exc)
                if deadline.expired():
                    reason = f"no reply within {timeout:g} s (timeout=)"
        failure = AgentFailure(question.id, question.template_id, reason)
        error = {"question_id": question.id, "status": "error", "error": f"agent: {reason}"}
        return error, failure

    done = await asyncio.gather(*(one(question) for question in questions))
    responses = [response for response, _ in done]
    return responses, [failure for _, failure in done if failure is not None]


async def _call(agent: Agent, question: AgentQuestion) -> Any:
    """The agent's reply: awaited when it is a coroutine function (or returns an
    awaitable), else called in a worker thread, so that plain agents run side by side."""
    if inspect.iscoroutinefunction(agent) or inspect.iscoroutinefunction(
        getattr(agent, "__call__", None)  # noqa: B004 (an object with an async __call__)
    ):
        return await agent(question)
    reply = await _in_thread(agent, question)
    if inspect.isawaitable(reply):
        return await reply
    return reply


async def _in_thread(agent: Agent, question: AgentQuestion) -> Any:
    """``agent(question)`` in a daemon thread of its own: an agent that never returns is
    left behind on a timeout or Ctrl-C, instead of holding the event loop's (and the test
    session's) end until it does, as the loop's default executor would."""
    loop = asyncio.get_running_loop()
    reply: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(error: BaseException | None, value: Any) -> None:
        if reply.done():  # timed out or cancelled meanwhile
            return
        if error is not None:
            reply.set_exception(error)
        else:
            reply.set_result(value)

    def run() -> None:
        try:
            value, error = context.run(agent, question), None
        except BaseException as exc:  # settled in the loop: the caller decides
            value, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
            loop.call_soon_threadsafe(settle, error, value)

    threading.Thread(target=run, name=f"agent {question.id}"[:60], daemon=True).start()
    return await reply


def _response(question: ReferenceQuestion, reply: Any) -> dict[str, Any]:
    """The agent's reply as a response for ``question``; :class:`ValueError` when it is
    none."""
    if isinstance(reply, str):
        return {"question_id": question.id, "actual_answer": reply}
    if not isinstance(reply, Mapping):
        raise _NotAResponse(
            f"returned {type(reply).__name__}, not a response (a dict with actual_answer, "
            "actual_steps, ...; docs/inputs.md) or an answer (a str)"
        )
    response = dict(reply)
    given = response.setdefault("question_id", question.id)
    if given != question.id:
        raise _NotAResponse(f"returned the response of question {given!r}")
    try:  # what the responses file will hold: JSON, finite numbers
        json.dumps(response, allow_nan=False, default=_refuse)
    except (TypeError, ValueError) as exc:
        raise _NotAResponse(f"returned a response that is not JSON data: {exc}") from None
    return response


def _refuse(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON data")


def _reason(exc: BaseException) -> str:
    """``ValueError: message`` on one line, cut to a few hundred characters."""
    message = " ".join(str(exc).split())
    if len(message) > _MESSAGE_CHARS:
        message = message[:_MESSAGE_CHARS] + "..."
    if isinstance(exc, _NotAResponse):
        return message  # our own verdict on what the agent returned
    name = type(exc).__name__
    return f"{name}: {message}" if message else name
