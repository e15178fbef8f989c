"""What a step match rule is: a scoring function and the steps and reference options it
declares (docs/steps.md, "Match rules").

The declarations say which (reference step, actual step) pairs a rule handles, and they alone
decide the order rules are tried in (:func:`specificity`): no rule carries a priority number.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from graphrag_eval.inputs import ActualStep, ReferenceStep
from graphrag_eval.steps.explain import Mismatch

__all__ = ["GIVEN", "StepRule", "only_validating", "specificity", "validating_only"]


class _Given:
    def __repr__(self) -> str:
        return "GIVEN"


GIVEN: Final = _Given()
"""A required reference option that must be present (not null), whatever its value."""

_TYPED_OPTIONS = frozenset(
    {"args", "output", "output_media_type", "ordered", "required_columns", "ignore_duplicates"}
)


def _names(value: str | Iterable[str]) -> frozenset[str]:
    return frozenset((value,) if isinstance(value, str) else value)


@dataclass(frozen=True, slots=True, eq=False)
class StepRule:
    """A named way of scoring a reference step against an actual step.

    ``reference_steps`` and ``actual_steps`` are the step names the rule handles (empty: any
    reference step; an actual step of the reference step's name). ``requires`` maps reference
    options to the value they must have (or :data:`GIVEN`: present, any value); ``options``
    lists further reference-step keys the rule reads (from ``reference.raw``), so they are not
    reported as unused. ``applies`` is an extra condition on a pair, ``score`` scores it in
    [0, 1] (raising ``ValueError`` when the actual output cannot be read), and
    ``check_reference`` finds a problem in a reference step it handles when the dataset is
    loaded. ``explain`` says why a pair scored below 1 (a line, or a
    :class:`~graphrag_eval.steps.explain.Mismatch` with how close it came); it is called only
    for such pairs.
    """

    name: str
    score: Callable[[ReferenceStep, ActualStep], float]
    reference_steps: Collection[str] = ()
    actual_steps: Collection[str] = ()
    requires: Mapping[str, object] = field(default_factory=dict)
    options: Collection[str] = ()
    applies: Callable[[ReferenceStep, ActualStep], bool] | None = None
    check_reference: Callable[[ReferenceStep], str | None] | None = None
    explain: Callable[[ReferenceStep, ActualStep], Mismatch | str] | None = None

    def __post_init__(self) -> None:
        # Loose declarations (one name as a string, a list) become one canonical form.
        object.__setattr__(self, "reference_steps", _names(self.reference_steps))
        object.__setattr__(self, "actual_steps", _names(self.actual_steps))
        object.__setattr__(self, "options", _names(self.options))
        object.__setattr__(self, "requires", MappingProxyType(dict(self.requires)))

    def handles_reference(self, reference: ReferenceStep) -> bool:
        """Whether the declarations admit this reference step."""
        if self.reference_steps and reference.name not in self.reference_steps:
            return False
        return all(_satisfies(reference, key, value) for key, value in self.requires.items())

    def handles(self, reference: ReferenceStep, actual: ActualStep) -> bool:
        """Whether the rule scores this pair: the declarations and ``applies`` admit it."""
        if self.actual_steps:
            if actual.name not in self.actual_steps:
                return False
        elif actual.name != reference.name:
            return False
        if not self.handles_reference(reference):
            return False
        return self.applies is None or self.applies(reference, actual)


def _satisfies(reference: ReferenceStep, key: str, required: object) -> bool:
    value: Any = getattr(reference, key) if key in _TYPED_OPTIONS else reference.raw.get(key)
    return value is not None if required is GIVEN else bool(value == required)


def specificity(rule: StepRule) -> int:
    """The rank of a rule's declarations, most specific first: 0 for named steps with a
    required reference option, 1 for named steps alone, 2 for a required option alone, 3 for
    a rule that declares neither."""
    named = bool(rule.reference_steps or rule.actual_steps)
    return (0 if named else 2) + (0 if rule.requires else 1)


_VALIDATING_ONLY: ContextVar[bool] = ContextVar("validating_only", default=False)


@contextmanager
def validating_only() -> Iterator[None]:
    """Reference steps checked in this block are read to be validated and then dropped (a
    reference kept compact: each question is read again, and checked again, when it is
    scored): a rule's ``check_reference`` may leave out the work it keeps for scoring, and
    must find the same problems."""
    token = _VALIDATING_ONLY.set(True)
    try:
        yield
    finally:
        _VALIDATING_ONLY.reset(token)


def only_validating() -> bool:
    """Whether the reference steps checked now are only validated (:func:`validating_only`)."""
    return _VALIDATING_ONLY.get()
