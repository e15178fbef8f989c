"""Which rule scores each reference step name of a dataset (docs/steps.md, "Which rule scores
a step"), for ``graphrag-eval validate``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from graphrag_eval.inputs import ReferenceStep
from graphrag_eval.steps.rule import StepRule, specificity
from graphrag_eval.steps.rules import step_rules

__all__ = ["FALLBACK", "RuleUse", "rules_in_use"]

FALLBACK = 3
"""The :func:`~graphrag_eval.steps.rule.specificity` of a rule that declares neither step
names nor reference options: it scores any step (the identical-output rule)."""


@dataclass(frozen=True, slots=True)
class RuleUse:
    """``count`` reference steps named ``name`` are scored by rule ``rule``."""

    name: str
    rule: str
    count: int
    fallback: bool
    """The rule is a fallback for any step (identical outputs), not one for this name."""


def rules_in_use(
    steps: Iterable[ReferenceStep], overrides: Mapping[str, StepRule] | None = None
) -> list[RuleUse]:
    """The rule of every sound reference step, counted by (step name, rule), in the order
    the names first appear. The rule is the config's for the name, else the first
    registered rule whose declarations admit the step."""
    rules = step_rules()
    counts: Counter[tuple[str, str]] = Counter()
    fallback: dict[str, bool] = {}
    for step in steps:
        if step.problem is not None:
            continue
        rule = (overrides or {}).get(step.name) or _first(rules, step)
        name = rule.name if rule is not None else "none"
        counts[(step.name, name)] += 1
        fallback[name] = rule is None or specificity(rule) == FALLBACK
    return [
        RuleUse(step_name, rule, count, fallback[rule])
        for (step_name, rule), count in counts.items()
    ]


def _first(rules: Sequence[StepRule], step: ReferenceStep) -> StepRule | None:
    return next((rule for rule in rules if rule.handles_reference(step)), None)
