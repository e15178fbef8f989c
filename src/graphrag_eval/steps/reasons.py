"""Why each reference step that did not fully match did not, and the actual step it came
closest to: ``mismatch_reason`` and ``nearest_match`` in the per-question results
(docs/steps.md, "Why a step did not match").

Computed after matching, only for reference steps below a full match in the groups that were
matched, on at most :data:`MAX_CANDIDATES` actual steps each (the latest ones, which the
matching prefers); each pair's explanation is bounded by its rule. The groups matching did not
reach say why (``all_groups``: not compared; ``last_group``: not scored, with what the step
expects, :func:`expected_of`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from graphrag_eval.inputs import ActualStep, ReferenceStep
from graphrag_eval.steps.explain import Mismatch, shown
from graphrag_eval.steps.matching import StepMatch, StepsOutcome
from graphrag_eval.steps.rules import (
    Overrides,
    PairScore,
    explain_pair,
    rule_for,
    score_pair,
    step_rules,
)
from graphrag_eval.steps.sparql_diff import describe_cell
from graphrag_eval.steps.sparql_values import parse_sparql_results

__all__ = [
    "MAX_CANDIDATES",
    "NOT_REACHED",
    "REASON_CHARACTERS",
    "StepExplanation",
    "expected_of",
    "explain_steps",
]

MAX_CANDIDATES: Final = 5
"""Actual steps explained per reference step at most (the latest candidates)."""

Known = Callable[[ReferenceStep, ActualStep], PairScore | None]
"""A pair's score when matching already computed it."""


REASON_CHARACTERS: Final = 500
"""A reason is cut to this length (it may quote values from the outputs)."""


@dataclass(frozen=True, slots=True)
class StepExplanation:
    """Why reference step (group, index) did not fully match, and the index of the actual
    step it came closest to (``None`` when there was no actual step to compare)."""

    reason: str
    nearest: int | None = None
    diagnosis: tuple[Mapping[str, Any], ...] | None = None
    """For a SPARQL step: why its query is wrong, as ``query_diagnosis`` records it
    (docs/knowledge-graph.md), set after matching by :mod:`graphrag_eval.evaluation.diagnosis`;
    ``None`` when it was not diagnosed."""

    def __post_init__(self) -> None:
        if len(self.reason) > REASON_CHARACTERS:
            object.__setattr__(self, "reason", self.reason[: REASON_CHARACTERS - 3] + "...")


def explain_steps(
    groups: Sequence[Sequence[ReferenceStep]],
    actual_steps: Sequence[ActualStep],
    outcome: StepsOutcome,
    *,
    all_groups: bool,
    known: Known,
    rules: Overrides = None,
) -> dict[tuple[int, int], StepExplanation]:
    """The explanation of every sound reference step below a full match, by (group, index)."""
    scores = {(m.group, m.index): m for m in outcome.matches}
    first = _first_compared(groups, scores) if all_groups else len(groups) - 1
    found: dict[tuple[int, int], StepExplanation] = {}
    for g in range(first, len(groups)):
        # all_groups: group g may use only actual steps before group g+1's earliest match.
        later = [m for m in outcome.matches if m.group == g + 1] if all_groups else []
        bound = min(later, key=lambda m: m.actual_index) if later else None
        for i, reference in enumerate(groups[g]):
            match = scores.get((g, i))
            if reference.problem is not None or (match is not None and match.score >= 1):
                continue
            if match is not None:
                actual = actual_steps[match.actual_index]
                why = explain_pair(reference, actual, known(reference, actual), rules)
                found[(g, i)] = StepExplanation(why.reason, actual.index)
            else:
                found[(g, i)] = _unmatched(reference, actual_steps, outcome, known, rules, bound)
    for g in range(first):  # matching stopped before these, or (last_group) never reached them
        for i, reference in enumerate(groups[g]):
            if reference.problem is None:
                found[(g, i)] = _not_reached(reference, first, all_groups=all_groups)
    return found


NOT_REACHED: Final = ("not scored", "not compared")
"""How the reason of a reference step that matching did not reach begins (before a colon):
``last_group`` mode does not score its group; ``all_groups`` mode did not compare it."""


def _not_reached(reference: ReferenceStep, first: int, *, all_groups: bool) -> StepExplanation:
    """A reference step of a group before ``first``, the earliest that matching reached."""
    if all_groups:
        return StepExplanation(
            f"{NOT_REACHED[1]}: reference group {first + 1} was not fully matched"
        )
    reason = f"{NOT_REACHED[0]}: in last_group mode only reference group {first + 1} is scored"
    expected = expected_of(
        reference.name, reference.args, reference.output, reference.output_media_type
    )
    return StepExplanation(f"{reason}; {expected}" if expected else reason)


def _first_compared(
    groups: Sequence[Sequence[ReferenceStep]], scores: Mapping[tuple[int, int], StepMatch]
) -> int:
    """The earliest group that ``all_groups`` matching reached (it stops after the first
    group, from the last, that is not fully matched)."""
    for g in range(len(groups) - 1, -1, -1):
        if any((g, i) not in scores for i in range(len(groups[g]))):
            return g
    return 0


def _unmatched(
    reference: ReferenceStep,
    actual_steps: Sequence[ActualStep],
    outcome: StepsOutcome,
    known: Known,
    rules: Overrides,
    bound: StepMatch | None,
) -> StepExplanation:
    """Why a reference step has no match; ``bound``: the next group's earliest match
    (``all_groups``), which the step's actual step had to come before."""
    candidates = [a for a in actual_steps if rule_for(reference, a, rules) is not None]
    if not candidates:
        names = [reference.name] if rules and reference.name in rules else _names(reference)
        return StepExplanation(f"no actual step named {' or '.join(names)}")
    succeeded = [a for a in candidates if a.succeeded]
    if not succeeded:
        last = candidates[-1]
        return StepExplanation(explain_pair(reference, last, None, rules).reason, last.index)
    best: tuple[float, int, Mismatch] | None = None
    for actual in succeeded[-MAX_CANDIDATES:]:
        pair = known(reference, actual)
        late = bound is not None and actual.index >= bound.actual_index
        if pair is None and late:  # matching never compared it: it came too late
            pair = score_pair(reference, actual, rules)
        why = _taken(actual, pair, outcome, bound if late else None, actual_steps)
        if why is None:
            why = explain_pair(reference, actual, pair, rules)
        if best is None or (why.closeness, actual.index) >= (best[0], best[1]):
            best = (why.closeness, actual.index, why)
    assert best is not None
    reason = best[2].reason
    if len(succeeded) > 1:
        reason += f" (the nearest of {len(succeeded)} candidate actual steps)"
    return StepExplanation(reason, best[1])


def _taken(
    actual: ActualStep,
    pair: PairScore | None,
    outcome: StepsOutcome,
    bound: StepMatch | None,
    steps: Sequence[ActualStep],
) -> Mismatch | None:
    """Why an actual step that matches the reference step (a positive score) was not its
    match: another reference step has it, or (``bound``, all_groups) it comes after the
    match of the next group. ``None`` when it does not match."""
    if pair is None or pair.score <= 0:
        return None
    owner = outcome.reference_for(actual.index)
    if owner is not None:
        where = f"was matched to reference step {owner[0] + 1}.{owner[1] + 1}"
    elif bound is not None:
        first = steps[bound.actual_index].label
        where = (
            f"comes after actual step {first}, the first match of reference group "
            f"{bound.group + 1} (all_groups mode: a group may use only actual steps before "
            "the next group's first match)"
        )
    else:
        where = "was matched to no reference step"
    return Mismatch(f"actual step {actual.label} matches, but {where}", 1.0)


def expected_of(name: str, args: Any, output: Any, media_type: str | None) -> str:
    """What a reference step expects, in one clipped line (``expected IRI <...>``,
    ``expected 5 rows of (t, name), first ('urn:T1', 'OSLO T1')``, ``expected args ...,
    output ...``); empty when it states nothing."""
    if name == "iri_discovery" and isinstance(output, str):
        iri = output.strip()
        return f"expected IRI {iri if iri.startswith('<') else f'<{iri}>'}"[:_EXPECTED]
    if media_type == "application/sparql-results+json" and output is not None:
        return _expected_sparql(output)
    parts = []
    if args not in (None, {}, []):
        parts.append(f"args {shown(args)}")
    if output is not None:
        parts.append(f"output {shown(output)}")
    return f"expected {', '.join(parts)}" if parts else ""


_EXPECTED: Final = 200
"""Characters of :func:`expected_of` at most."""
_PARSED: Final = 2_000_000
"""A larger SPARQL output is described by its size, not parsed again."""


def _expected_sparql(output: Any) -> str:
    if isinstance(output, str) and len(output) > _PARSED:
        return f"expected SPARQL results of {len(output):,} characters"
    try:
        results = parse_sparql_results(output)
    except (ValueError, TypeError):
        return f"expected output {shown(output)}"
    if results.is_ask:
        return f"expected ASK result {results.boolean}"
    if results.row_count == 0:
        return f"expected no rows of ({', '.join(results.vars)})"
    row = [describe_cell(results.columns[var][0]) for var in results.vars]
    rows = "1 row" if results.row_count == 1 else f"{results.row_count:,} rows"
    text = f"expected {rows} of ({', '.join(results.vars)}), first ({', '.join(row)})"
    return text if len(text) <= _EXPECTED else text[: _EXPECTED - 4] + "...)"


def _names(reference: ReferenceStep) -> list[str]:
    for rule in step_rules():
        if rule.actual_steps and rule.handles_reference(reference):
            return sorted(rule.actual_steps)
    return [reference.name]
