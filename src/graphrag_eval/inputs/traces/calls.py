"""Tool calls paired with their results, in the order they were made, as steps; and the
response a transcript makes (docs/integrations.md)."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from graphrag_eval.inputs.traces.common import ItemContext

__all__ = ["Calls", "response_of"]

NO_RESULT = "no tool result answers this call"

# The keys of our own format a transcript's record may give itself; they win over what the
# transcript implies (docs/integrations.md).
_OWN_KEYS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "elapsed_sec",
    "retrieved_contexts",
    "status",
    "error",
)


@dataclass(slots=True)
class Calls:
    """The tool calls of one conversation, by call id, and their results as they come."""

    context: ItemContext
    steps: list[dict[str, Any]] = field(default_factory=list)
    _open: dict[str, deque[dict[str, Any]]] = field(default_factory=dict)
    """The calls waiting for their result, by call id, earliest first (an id may be given
    to several calls: in one turn, or again in a later one)."""

    def call(
        self, name: Any, call_id: Any, args: Any, field_path: str, waits_as: str | None = None
    ) -> None:
        """A call the model made; its result comes later (:meth:`result`), under its id or,
        for a call without one, ``waits_as``."""
        if not isinstance(name, str) or not name:
            self.context.problem(f"{field_path}.name", "a tool call without a name; left out")
            return
        key = str(call_id) if isinstance(call_id, str | int) and call_id != "" else None
        step = self.context.step(name, key, args, None, None)
        self.steps.append(step)
        waiting = key if key is not None else waits_as
        if waiting is not None:
            self._open.setdefault(waiting, deque()).append(step)

    def is_open(self, key: str) -> bool:
        """Whether a call waits for its result under ``key``."""
        return key in self._open

    def failed_call(self, name: Any, call_id: Any, args: Any, error: str) -> None:
        """A call that could not be made (its arguments did not parse, say)."""
        key = str(call_id) if isinstance(call_id, str | int) else None
        label = name if isinstance(name, str) and name else "unknown_tool"
        self.steps.append(self.context.step(label, key, args, None, error))

    def result(self, call_id: Any, output: Any, error: str | None, field_path: str) -> None:
        """The result of the call ``call_id``; ``error`` when the tool failed."""
        key = str(call_id) if isinstance(call_id, str | int) else None
        waiting = self._open.get(key) if key is not None else None
        step = waiting.popleft() if waiting else None
        if key is not None and waiting is not None and not waiting:
            del self._open[key]
        if step is None:
            self.context.problem(
                field_path, f"a tool result for no earlier call (call id {call_id!r}); ignored"
            )
            return
        if output is not None:
            step["output"] = output
        if error is not None:
            step["status"], step["error"] = "error", error

    def finish(self) -> list[dict[str, Any]]:
        """The steps; a call no result answered is a failed step."""
        for waiting in self._open.values():
            for step in waiting:
                step["status"], step["error"] = "error", NO_RESULT
        self._open.clear()
        return self.steps


def response_of(
    record: Mapping[str, Any],
    question_id: str,
    steps: list[dict[str, Any]],
    answer: str | None,
    usage: Mapping[str, int],
) -> dict[str, Any]:
    """A response of our own format from what a transcript gave."""
    response: dict[str, Any] = {"question_id": question_id, "actual_steps": steps}
    if answer is not None:
        response["actual_answer"] = answer
    response.update(usage)
    for key in _OWN_KEYS:
        if key in record:
            response[key] = record[key]
    return response
