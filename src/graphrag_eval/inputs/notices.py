"""Notices: located problems that were handled without stopping the run (docs/inputs.md).

A notice is counted and reported in the run summary; it never raises.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from graphrag_eval.errors import locate

__all__ = ["Diagnostics", "Notice", "count_kinds", "unreadable_output_notice", "unused_field"]


@dataclass(frozen=True, slots=True)
class Notice:
    """A located problem that was handled (counted, reported) without stopping the run.

    ``kind`` groups notices in the run summary: ``missing_response``, ``unknown_response``,
    ``duplicate_response``, ``malformed_response``, ``malformed_step``, ``reference_data``,
    ``unused_field``.
    """

    kind: str
    message: str
    file: str | None = None
    item: str | None = None
    field: str | None = None

    def __str__(self) -> str:
        prefix = locate(self.file, self.item, self.field)
        return f"{prefix}: {self.message}" if prefix else self.message


def unreadable_output_notice(source: str, question_id: object, index: int, why: str) -> Notice:
    """The notice of an actual step whose output could not be read (it scored as no match);
    one wording for an evaluated item and for a kept item read back on ``--resume``."""
    return Notice(
        "unreadable_output",
        f"{why}; scored as no match",
        file=source,
        item=f"question '{question_id}'",
        field=f"actual_steps[{index}]",
    )


def unused_field(source: str, field: str, times: str = "", item: str | None = None) -> Notice:
    """The notice of a field graphrag-eval does not read; ``times`` says how often it was
    seen (``"3 responses"``), when it is counted."""
    counted = f" ({times})" if times else ""
    return Notice(
        "unused_field",
        f"field not used by graphrag-eval, ignored{counted}",
        file=source,
        item=item,
        field=field,
    )


@dataclass(slots=True)
class Diagnostics:
    """The notices collected while loading and evaluating one run."""

    notices: list[Notice] = field(default_factory=list)

    def add(self, notice: Notice) -> None:
        self.notices.append(notice)

    def extend(self, notices: Iterable[Notice]) -> None:
        self.notices.extend(notices)


def count_kinds(notices: Iterable[Notice]) -> dict[str, int]:
    """Number of notices per kind, in order of first appearance."""
    return dict(Counter(notice.kind for notice in notices))
