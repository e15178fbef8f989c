"""Judge replies that are lists of verdicts, one per numbered item asked (claims, statements,
contexts), used as far as they go (docs/llm.md, "Replies that don't fit").

A reply's entries are matched to the items by the number each names: entries out of order
are read as well as entries in order; an entry for an item not asked, a second entry for
the same item and an entry that is not a verdict are left out. The items left without a
verdict are asked again, once, in a prompt that lists only them; the metric is then
computed over the items judged, and says so in its reason ("3 of 4 claims judged"). The
metric fails only when no usable verdict came back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from graphrag_eval.llm.engine import FollowUp, Judged, ListShape, LLMEngine, ReplyError
from graphrag_eval.llm.prompts import prompt
from graphrag_eval.llm.replies import json_object
from graphrag_eval.metrics.base import Failed
from graphrag_eval.metrics.judging import messages, or_failed

__all__ = ["VerdictList", "Verdicts", "judge_items", "numbered", "ranked"]

E = TypeVar("E", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class VerdictList(Generic[E]):
    """The shape of a verdict-list reply: the object ``schema`` whose list ``field`` holds
    ``entry`` objects, each naming its item by the integer property ``index``."""

    schema: type[BaseModel]
    field: str
    entry: type[E]
    index: str
    what: str
    """The items, for messages (``claim``, ``statement``, ``context``)."""
    check: Callable[[E], None] | None = None
    """Raises :class:`ReplyError` for an entry that is not usable (a score out of range)."""

    def parser(self, asked: Sequence[int]) -> Callable[[str], dict[int, E]]:
        """A parser of a reply to the items ``asked``: their usable verdicts by number;
        :class:`ReplyError` (a re-ask) when there is none."""
        wanted = set(asked)

        def parse(text: str) -> dict[int, E]:
            data = json_object(text)
            entries = data.get(self.field) if isinstance(data, dict) else None
            if not isinstance(entries, list):
                raise ReplyError(f"the reply has no list {self.field!r}")
            found: dict[int, E] = {}
            for raw in entries:
                entry = self._usable(raw)
                number = getattr(entry, self.index, None) if entry is not None else None
                if entry is not None and number in wanted and number not in found:
                    found[number] = entry
            if not found:
                raise ReplyError(
                    f"no usable verdict for the {self.what}s asked "
                    f"({', '.join(map(str, sorted(wanted)))}), each naming its {self.what} "
                    f"in {self.index!r}"
                )
            return found

        return parse

    def _usable(self, raw: Any) -> E | None:
        try:
            entry = self.entry.model_validate(raw)
            if self.check is not None:
                self.check(entry)
        except (ValidationError, ReplyError):
            return None
        return entry


@dataclass(frozen=True, slots=True)
class Verdicts(Generic[E]):
    """The verdicts obtained for ``count`` items asked, by item number (1-based, in order),
    with the cost of the calls behind them."""

    found: dict[int, E]
    count: int
    cost_usd: float

    @property
    def complete(self) -> bool:
        return len(self.found) == self.count

    def note(self, what: str) -> str:
        """``"3 of 4 claims judged"`` when some item has no verdict, else empty."""
        if self.complete:
            return ""
        return f"{len(self.found)} of {self.count} {what}s judged"


async def judge_items(
    engine: LLMEngine,
    shape: VerdictList[E],
    template: str,
    metric: str,
    fields: Callable[[Sequence[int]], Mapping[str, Any]],
    count: int,
    *,
    follow_up: FollowUp | None = None,
) -> Verdicts[E] | Failed:
    """A verdict for each of ``count`` items: the prompt ``template`` filled with
    ``fields(numbers)`` (the items with those numbers), then, for the items the reply left
    without a verdict, one more call listing only them. :class:`Failed` when the first call
    gives no usable verdict (after its one re-ask) or fails."""
    asked = list(range(1, count + 1))
    first = await or_failed(_ask(engine, shape, template, metric, fields(asked), asked, follow_up))
    if isinstance(first, Failed):
        return first
    found, cost = dict(first.value), first.cost_usd
    missing = [number for number in asked if number not in found]
    if missing:
        again = await or_failed(_ask(engine, shape, template, metric, fields(missing), missing))
        if not isinstance(again, Failed):
            found.update(again.value)
            cost += again.cost_usd
    return Verdicts({number: found[number] for number in asked if number in found}, count, cost)


async def _ask(
    engine: LLMEngine,
    shape: VerdictList[E],
    template: str,
    metric: str,
    fields: Mapping[str, Any],
    asked: Sequence[int],
    follow_up: FollowUp | None = None,
) -> Judged[dict[int, E]]:
    return await engine.judge(
        messages(prompt(template).format(**fields)),
        shape.parser(asked),
        metric=metric,
        schema=shape.schema,
        shape=ListShape(shape.field, tuple(asked), shape.index),
        follow_up=follow_up,
    )


def numbered(items: Sequence[str], numbers: Sequence[int]) -> str:
    """The items with the (1-based) ``numbers``, as a numbered list for a prompt."""
    return "\n".join(f"{number}. {items[number - 1].strip()}" for number in numbers)


def ranked(texts: Sequence[str], ranks: Sequence[int]) -> str:
    """The contexts with the (1-based) ``ranks``, numbered by rank, one per paragraph."""
    return "\n\n".join(f"[{rank}] {texts[rank - 1].strip()}" for rank in ranks)
