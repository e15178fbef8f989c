"""Group matching and ``steps_score`` in both score modes (docs/steps.md)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphrag_eval.inputs import ActualStep, ReferenceStep, parse_reference, parse_responses
from graphrag_eval.steps.matching import evaluate_steps, match_group
from graphrag_eval.steps.rules import check_reference_step, match_score

from builders import contexts, dataset, question, ref_step, response, sparql, sparql_ref, step


def _parse(
    groups: Sequence[Sequence[dict[str, Any]]], actual: Sequence[dict[str, Any]]
) -> tuple[tuple[tuple[ReferenceStep, ...], ...], tuple[ActualStep, ...]]:
    [parsed] = parse_reference(dataset(question("q", groups)), check_step=check_reference_step)
    responses = parse_responses([response("q", actual)])
    assert parsed.reference_steps is not None
    steps = responses.responses["q"].actual_steps
    assert steps is not None
    return parsed.reference_steps, steps


def _tool(name: str, output: str, step_id: str) -> dict[str, Any]:
    return step(name, output, step_id)


# Two SPARQL reference steps: A needs a column {1, 2}; B needs {1, 2} together with {3, 4}
# in the same rows. The actual result BOTH satisfies A and B, NARROW only A.
REF_A = sparql_ref(sparql(["p"], [["1"], ["2"]]))
REF_B = sparql_ref(sparql(["p", "q"], [["1", "3"], ["2", "4"]]))
BOTH = sparql(["p", "q"], [["1", "3"], ["2", "4"]])
NARROW = sparql(["p"], [["1"], ["2"]])


def test_optimal_assignment_where_greedy_first_fit_fails() -> None:
    # First-fit gives A the first step it matches ("both", the only one B can use), then B
    # finds nothing: 0.5. The optimal assignment gives A "narrow" and B "both": 1.0.
    groups, actual = _parse(
        [[REF_A, REF_B]],
        [_tool("sparql_query", BOTH, "s0"), _tool("sparql_query", NARROW, "s1")],
    )
    outcome = evaluate_steps(groups, actual, match_score)
    assert outcome.score == pytest.approx(1.0)
    assert outcome.actual_for(0, 0) == 1
    assert outcome.actual_for(0, 1) == 0


def test_most_recent_actual_step_is_preferred_among_equal_matches() -> None:
    groups, actual = _parse(
        [[REF_A]],
        [_tool("sparql_query", NARROW, "old"), _tool("sparql_query", NARROW, "new")],
    )
    outcome = evaluate_steps(groups, actual, match_score)
    assert outcome.score == pytest.approx(1.0)
    assert outcome.actual_for(0, 0) == 1


def test_each_actual_step_matches_at_most_one_reference_step() -> None:
    groups, actual = _parse([[REF_A, REF_A]], [_tool("sparql_query", NARROW, "only")])
    outcome = evaluate_steps(groups, actual, match_score)
    assert outcome.score == pytest.approx(0.5)
    assert len(outcome.matches) == 1


def test_a_step_satisfying_two_reference_steps_goes_to_the_later_one() -> None:
    # The seed's later versions match reference steps from last to first, each taking the
    # latest free actual step: the one query is annotated on the second reference step.
    groups, actual = _parse([[REF_A, REF_A]], [_tool("sparql_query", NARROW, "only")])
    outcome = evaluate_steps(groups, actual, match_score)
    assert outcome.actual_for(0, 1) == 0
    assert outcome.actual_for(0, 0) is None


def test_later_reference_steps_take_later_actual_steps_among_equal_assignments() -> None:
    # r0 is satisfied by a0 and a2, r1 by a1 and a2. Both {r1: a2, r0: a0} and
    # {r1: a1, r0: a2} score 2; the later reference step takes the latest step (a2), as in
    # the seed, although the other assignment uses more recent steps overall.
    groups, actual = _parse(
        [[ref_step("t", "r0"), ref_step("t", "r1")]],
        [_tool("t", "a0", "a0"), _tool("t", "a1", "a1"), _tool("t", "a2", "a2")],
    )
    satisfied = {("r0", "a0"), ("r0", "a2"), ("r1", "a1"), ("r1", "a2")}

    def scorer(ref: ReferenceStep, act: ActualStep) -> float:
        return 1.0 if (ref.output, act.output) in satisfied else 0.0

    assert match_group(groups[0], actual, scorer) == [(0, 0, 1.0), (1, 2, 1.0)]


def test_failed_steps_never_match() -> None:
    groups, actual = _parse(
        [[REF_A]], [step("sparql_query", NARROW, "s0", status="error", error="timeout")]
    )
    assert evaluate_steps(groups, actual, match_score).score == pytest.approx(0.0)


def test_no_actual_steps_scores_zero() -> None:
    groups, actual = _parse([[REF_A]], [])
    outcome = evaluate_steps(groups, actual, match_score)
    assert outcome.score == pytest.approx(0.0)
    assert outcome.matches == ()


def test_fractional_retrieval_score_counts_toward_the_group() -> None:
    reference = ref_step("retrieval", contexts(("d1", "a"), ("d2", "b")))
    groups, actual = _parse(
        [[reference, REF_A]],
        [
            step("retrieval", contexts(("d1", "a"), ("x", "c")), "r", args={"k": 2}),
            _tool("sparql_query", NARROW, "s"),
        ],
    )
    # recall@2 = 1/2 for the retrieval step, 1 for the SPARQL step: (0.5 + 1) / 2
    assert evaluate_steps(groups, actual, match_score).score == pytest.approx(0.75)


# ---------------------------------------------------------------- the two score modes

IRI = "urn:uuid:1"
AUTOCOMPLETE = sparql(["iri", "name"], [[{"type": "uri", "value": IRI}, "OSLO"]])
RESULT = sparql(["s"], [[{"type": "uri", "value": "urn:s:1"}]])
REF_IRI = ref_step("iri_discovery", IRI)
REF_QUERY = sparql_ref(RESULT)
REF_LOOKUP = ref_step("lookup", "found")


def test_last_group_mode_scores_only_the_last_group() -> None:
    groups, actual = _parse(
        [[REF_IRI], [REF_QUERY]],
        [_tool("sparql_query", RESULT, "q")],  # no autocomplete at all
    )
    outcome = evaluate_steps(groups, actual, match_score, "last_group")
    assert outcome.score == pytest.approx(1.0)
    assert outcome.actual_for(0, 0) is None


def test_all_groups_mode_averages_over_all_groups() -> None:
    groups, actual = _parse([[REF_IRI], [REF_QUERY]], [_tool("sparql_query", RESULT, "q")])
    assert evaluate_steps(groups, actual, match_score, "all_groups").score == pytest.approx(0.5)


def test_all_groups_earlier_group_must_come_before_the_later_groups_matches() -> None:
    groups, actual = _parse(
        [[REF_IRI], [REF_QUERY]],
        [_tool("sparql_query", RESULT, "q"), _tool("autocomplete_search", AUTOCOMPLETE, "a")],
    )
    # the autocomplete happened after the query it should have fed: group 0 unmatched
    outcome = evaluate_steps(groups, actual, match_score, "all_groups")
    assert outcome.score == pytest.approx(0.5)
    assert outcome.actual_for(0, 0) is None


def test_all_groups_full_match_in_order() -> None:
    groups, actual = _parse(
        [[REF_IRI], [REF_QUERY]],
        [_tool("autocomplete_search", AUTOCOMPLETE, "a"), _tool("sparql_query", RESULT, "q")],
    )
    outcome = evaluate_steps(groups, actual, match_score, "all_groups")
    assert outcome.score == pytest.approx(1.0)
    assert outcome.actual_for(0, 0) == 0
    assert outcome.actual_for(1, 0) == 1


def test_all_groups_stops_after_a_partially_matched_group() -> None:
    # Three groups; the middle one is only half matched (nothing answers "missing"), so the
    # first group is not matched although its step is there: (0 + 0.5 + 1) / 3.
    groups, actual = _parse(
        [[REF_LOOKUP], [REF_IRI, ref_step("lookup", "missing")], [REF_QUERY]],
        [
            _tool("lookup", "found", "l0"),
            _tool("autocomplete_search", AUTOCOMPLETE, "a"),
            _tool("sparql_query", RESULT, "q"),
        ],
    )
    outcome = evaluate_steps(groups, actual, match_score, "all_groups")
    assert outcome.score == pytest.approx(0.5)
    assert outcome.actual_for(1, 0) == 1  # the partial match still counts
    assert outcome.actual_for(0, 0) is None  # matching stopped before the first group


def test_all_groups_multi_step_groups() -> None:
    groups, actual = _parse(
        [[REF_IRI, REF_LOOKUP], [REF_QUERY]],
        [
            _tool("lookup", "found", "l"),
            _tool("autocomplete_search", AUTOCOMPLETE, "a"),
            _tool("sparql_query", RESULT, "q"),
        ],
    )
    assert evaluate_steps(groups, actual, match_score, "all_groups").score == pytest.approx(1.0)
    assert evaluate_steps(groups, actual, match_score, "last_group").score == pytest.approx(1.0)


def test_match_group_respects_the_before_limit() -> None:
    groups, actual = _parse(
        [[REF_QUERY]],
        [_tool("sparql_query", RESULT, "early"), _tool("sparql_query", RESULT, "late")],
    )
    assert match_group(groups[0], actual, match_score, before=1) == [(0, 0, 1.0)]
    assert match_group(groups[0], actual, match_score, before=0) == []


def test_match_group_with_a_table_scorer_maximises_the_total() -> None:
    # A scorer is the matcher's real extension seam; a table makes the optimum explicit:
    # first-fit would take (r0, a0) = 0.9 and leave r1 with 0.1 (1.0 total); the optimum
    # is r0 -> a1 (0.8) and r1 -> a0 (0.9) = 1.7.
    groups, actual = _parse(
        [[ref_step("t", "r0"), ref_step("t", "r1")]],
        [_tool("t", "a0", "a0"), _tool("t", "a1", "a1")],
    )
    table = {("r0", "a0"): 0.9, ("r0", "a1"): 0.8, ("r1", "a0"): 0.9, ("r1", "a1"): 0.1}

    def scorer(ref: ReferenceStep, act: ActualStep) -> float:
        return table[(ref.output, act.output)]

    assert match_group(groups[0], actual, scorer) == [(0, 1, 0.8), (1, 0, 0.9)]


def test_empty_reference_groups_raise() -> None:
    with pytest.raises(ValueError, match="no reference step groups"):
        evaluate_steps((), (), match_score)


def _table_steps(
    n_ref: int, n_act: int
) -> tuple[tuple[ReferenceStep, ...], tuple[ActualStep, ...]]:
    groups, actual = _parse(
        [[ref_step("t", f"r{r}") for r in range(n_ref)]],
        [_tool("t", f"a{a}", f"a{a}") for a in range(n_act)],
    )
    return groups[0], actual


def _brute_force(
    table: dict[tuple[int, int], float], n_ref: int, n_act: int
) -> tuple[float, tuple[int, ...]]:
    """Best (total, actual index of each reference step from the last to the first, -1 when
    unmatched) over every injective partial assignment: what the matcher must find. The
    tuple order is the tie-break: later reference steps take later actual steps."""
    best: tuple[float, tuple[int, ...]] = (0.0, (-1,) * n_ref)
    for choice in itertools.product(range(-1, n_act), repeat=n_ref):
        used = [a for a in choice if a >= 0]
        if len(used) != len(set(used)):
            continue
        kept = [a if a >= 0 and table[(r, a)] > 0 else -1 for r, a in enumerate(choice)]
        total = round(sum(table[(r, a)] for r, a in enumerate(kept) if a >= 0), 9)
        key = (total, tuple(reversed(kept)))
        if key > best:
            best = key
    return best


def _seed_greedy(table: dict[tuple[int, int], float], n_ref: int, n_act: int) -> list[int]:
    """The seed's later matching of one group: reference steps from last to first, each
    taking the latest free actual step with a positive score (-1: none)."""
    used: set[int] = set()
    chosen = [-1] * n_ref
    for r in reversed(range(n_ref)):
        for a in reversed(range(n_act)):
            if a not in used and table[(r, a)] > 0:
                chosen[r] = a
                used.add(a)
                break
    return chosen


_TABLES = st.integers(1, 4).flatmap(
    lambda n_ref: st.integers(1, 5).flatmap(
        lambda n_act: st.tuples(
            st.just(n_ref),
            st.just(n_act),
            st.lists(
                st.sampled_from([0.0, 0.0, 0.25, 0.5, 1.0]),
                min_size=n_ref * n_act,
                max_size=n_ref * n_act,
            ),
        )
    )
)


def _match_table(
    case: tuple[int, int, list[float]],
) -> tuple[dict[tuple[int, int], float], list[int], float]:
    """The table of a case, and match_group's choice per reference step (-1: unmatched) and
    total."""
    n_ref, n_act, values = case
    table = {(r, a): values[r * n_act + a] for r in range(n_ref) for a in range(n_act)}
    group, actual = _table_steps(n_ref, n_act)

    def scorer(ref: ReferenceStep, act: ActualStep) -> float:
        return table[(int(ref.output[1:]), act.index)]

    found = match_group(group, actual, scorer)
    assert all(score == table[(r, a)] > 0 for r, a, score in found)
    assert len({a for _, a, _ in found}) == len(found)
    chosen = [-1] * n_ref
    for r, a, _ in found:
        chosen[r] = a
    return table, chosen, round(sum(score for _, _, score in found), 9)


@settings(max_examples=300, deadline=None, database=None)
@given(_TABLES)
def test_assignment_is_optimal_and_later_reference_steps_take_later_steps(
    case: tuple[int, int, list[float]],
) -> None:
    n_ref, n_act, _ = case
    table, chosen, total = _match_table(case)
    assert (total, tuple(reversed(chosen))) == _brute_force(table, n_ref, n_act)


@settings(max_examples=300, deadline=None, database=None)
@given(_TABLES)
def test_assignment_is_the_seeds_wherever_its_greedy_is_optimal(
    case: tuple[int, int, list[float]],
) -> None:
    n_ref, n_act, _ = case
    table, chosen, total = _match_table(case)
    greedy = _seed_greedy(table, n_ref, n_act)
    greedy_total = round(sum(table[(r, a)] for r, a in enumerate(greedy) if a >= 0), 9)
    assert greedy_total <= total
    if greedy_total == total:
        assert chosen == greedy


def test_large_groups_are_matched_exactly() -> None:
    # 20 interchangeable reference steps and 40 candidates: an exponential method would not
    # finish; the last reference step takes the latest step, the one before it the next.
    group, actual = _table_steps(20, 40)
    found = match_group(group, actual, lambda ref, act: 1.0)
    assert [a for _, a, _ in found] == list(range(20, 40))
