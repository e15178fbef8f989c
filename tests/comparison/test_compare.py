"""Comparing two runs item by item: pairing, means, paired bootstrap intervals, verdicts."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graphrag_eval.comparison.bootstrap as compare_module
from graphrag_eval.comparison.compare import (
    MIN_PAIRS,
    auto_resamples,
    bootstrap_interval,
    bootstrap_intervals,
    compare_results,
    format_interval,
    format_signed,
)

ZERO_ERRORS = {"aggregation": {"error_samples": "zero"}}


def ok(template: str, qid: str, **values: Any) -> dict[str, Any]:
    return {"template_id": template, "question_id": qid, "status": "success", **values}


def err(template: str, qid: str, **values: Any) -> dict[str, Any]:
    return {
        "template_id": template,
        "question_id": qid,
        "status": "error",
        "error": "boom",
        **values,
    }


def scored(key: str, values_a: list[float], values_b: list[float], template: str = "t1"):
    """Two runs of one template, question ``q<i>`` scored ``values_a[i]`` / ``values_b[i]``."""
    run_a = [ok(template, f"q{i}", **{key: v}) for i, v in enumerate(values_a)]
    run_b = [ok(template, f"q{i}", **{key: v}) for i, v in enumerate(values_b)]
    return run_a, run_b


def symmetric_noise(n: int, size: float) -> list[float]:
    """``+size, -size, +size, ...`` (n even): noise whose mean is exactly 0."""
    assert n % 2 == 0
    return [size if i % 2 == 0 else -size for i in range(n)]


def base_scores(n: int, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [round(rng.uniform(0.1, 0.6), 3) for _ in range(n)]


def approx_tree(value: Any) -> Any:
    """``value`` with every float inside (dicts, lists, tuples) compared with a tolerance:
    floats computed by different means (a chunked draw, another order of summing) may differ
    in the last digit from one machine to another."""
    if isinstance(value, dict):
        return {key: approx_tree(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(approx_tree(item) for item in value)
    if isinstance(value, float):
        return pytest.approx(value, rel=1e-9, abs=1e-12)
    return value


# --------------------------------------------------------------------------------------------
# Pairing


def test_items_are_paired_by_question_id_whatever_the_order() -> None:
    run_a = [ok("t1", "q1", answer_f1=0.1), ok("t1", "q2", answer_f1=0.5)]
    run_b = [ok("t1", "q2", answer_f1=0.9), ok("t1", "q1", answer_f1=0.2)]
    change = compare_results(run_a, run_b).overall["answer_f1"]
    assert change.pairs == 2
    assert change.mean_a == pytest.approx(0.3)
    assert change.mean_b == pytest.approx(0.55)
    assert change.difference == pytest.approx(0.25)
    by_id = {item.question_id: item for item in change.better_items}
    assert (by_id["q1"].a, by_id["q1"].b) == pytest.approx((0.1, 0.2))
    assert (by_id["q2"].a, by_id["q2"].b) == pytest.approx((0.5, 0.9))


def test_questions_in_one_run_only_are_listed_not_paired() -> None:
    run_a = [ok("t1", q, answer_f1=0.5) for q in ("q1", "q2", "q3", "q4")]
    run_b = [ok("t1", q, answer_f1=1.0) for q in ("q5", "q3", "q1", "q6")]
    comparison = compare_results(run_a, run_b)
    assert comparison.questions_a == 4
    assert comparison.questions_b == 4
    assert comparison.paired == 2
    assert comparison.only_in_a == ["q2", "q4"]
    assert comparison.only_in_b == ["q5", "q6"]
    change = comparison.overall["answer_f1"]
    assert change.pairs == 2
    assert (change.mean_a, change.mean_b) == pytest.approx((0.5, 1.0))
    # a question in one run only is not "scored only in" that run: it is not paired at all
    assert (change.scored_only_in_a, change.scored_only_in_b) == (0, 0)


def test_reordering_run_b_changes_nothing() -> None:
    values_a = base_scores(30)
    values_b = [v + 0.3 * ((i * 7) % 5 - 2) / 10 for i, v in enumerate(values_a)]
    run_a, run_b = scored("answer_f1", values_a, values_b)
    shuffled = list(run_b)
    random.Random(4).shuffle(shuffled)
    shuffled_comparison = compare_results(run_a, shuffled).as_dict()
    assert shuffled_comparison == approx_tree(compare_results(run_a, run_b).as_dict())


def test_reordering_run_a_does_not_change_the_interval() -> None:
    values_a = base_scores(30)
    values_b = [v + 0.3 * ((i * 7) % 5 - 2) / 10 for i, v in enumerate(values_a)]
    run_a, run_b = scored("answer_f1", values_a, values_b)
    change = compare_results(run_a, run_b).overall["answer_f1"]
    reordered = compare_results(run_a[::-1], run_b).overall["answer_f1"]
    assert (reordered.ci_low, reordered.ci_high) == pytest.approx((change.ci_low, change.ci_high))


def test_a_repeated_question_id_keeps_its_first_result() -> None:
    run_a = [ok("t1", "q1", answer_f1=0.2), ok("t1", "q1", answer_f1=0.9)]
    run_b = [ok("t1", "q1", answer_f1=0.4)]
    comparison = compare_results(run_a, run_b)
    assert comparison.questions_a == 1
    assert comparison.overall["answer_f1"].mean_a == pytest.approx(0.2)


def test_empty_runs() -> None:
    comparison = compare_results([], [])
    assert comparison.paired == 0
    assert comparison.overall == {}
    assert comparison.per_template == {}
    json.dumps(comparison.as_dict(), allow_nan=False)


# --------------------------------------------------------------------------------------------
# Means, differences, verdicts


def test_means_and_difference_by_hand() -> None:
    run_a, run_b = scored("answer_f1", [0.0, 0.5, 1.0, 0.25], [0.5, 0.5, 0.75, 1.0])
    change = compare_results(run_a, run_b, resamples=500).overall["answer_f1"]
    assert change.pairs == 4
    assert change.mean_a == pytest.approx(1.75 / 4)
    assert change.mean_b == pytest.approx(2.75 / 4)
    assert change.difference == pytest.approx(0.25)
    assert (change.improved, change.regressed, change.unchanged) == (2, 1, 1)
    # the interval lies within the smallest and largest possible resampled means
    assert -0.25 <= change.ci_low <= change.difference <= change.ci_high <= 0.75


def test_clear_improvement_is_better_and_the_interval_holds_the_true_difference() -> None:
    values_a = base_scores(60)
    noise = symmetric_noise(60, 0.05)
    values_b = [a + 0.2 + e for a, e in zip(values_a, noise, strict=True)]
    change = compare_results(*scored("answer_f1", values_a, values_b)).overall["answer_f1"]
    assert change.verdict == "better"
    assert change.difference == pytest.approx(0.2)
    assert 0 < change.ci_low < 0.2 < change.ci_high
    assert change.ci_high - change.ci_low < 0.05  # sd 0.05 over 60 pairs: width about 0.025
    assert (change.improved, change.regressed, change.unchanged) == (60, 0, 0)


def test_clear_fall_is_worse() -> None:
    values_a = base_scores(40)
    values_b = [a - 0.1 + e for a, e in zip(values_a, symmetric_noise(40, 0.02), strict=True)]
    change = compare_results(*scored("steps_score", values_a, values_b)).overall["steps_score"]
    assert change.verdict == "worse"
    assert change.ci_low < change.ci_high < 0
    assert change.regressed == 40


def test_identical_runs_are_unchanged_with_a_zero_interval() -> None:
    run_a, _ = scored("answer_f1", base_scores(25), [])
    comparison = compare_results(run_a, run_a)
    change = comparison.overall["answer_f1"]
    assert change.verdict == "unchanged"
    assert (change.ci_low, change.ci_high) == pytest.approx((0.0, 0.0), abs=1e-12)
    assert change.difference == pytest.approx(0.0, abs=1e-12)
    assert (change.improved, change.regressed, change.unchanged) == (0, 0, 25)
    assert change.better_items == [] and change.worse_items == []
    assert comparison.status_changes == {}
    assert comparison.significant("better") == [] and comparison.significant("worse") == []


def test_a_constant_shift_has_a_degenerate_interval_at_the_shift() -> None:
    values_a = [0.1, 0.3, 0.2, 0.6, 0.4, 0.0, 0.5, 0.7]
    values_b = [v + 0.25 for v in values_a]
    change = compare_results(*scored("answer_f1", values_a, values_b)).overall["answer_f1"]
    assert change.ci_low == pytest.approx(0.25, abs=1e-12)
    assert change.ci_high == pytest.approx(0.25, abs=1e-12)
    assert change.ci_low == pytest.approx(change.ci_high, abs=1e-12)
    assert change.verdict == "better"


def test_noise_only_is_unchanged() -> None:
    values_a = base_scores(80)
    values_b = [a + e for a, e in zip(values_a, symmetric_noise(80, 0.3), strict=True)]
    change = compare_results(*scored("answer_f1", values_a, values_b)).overall["answer_f1"]
    assert change.difference == pytest.approx(0, abs=1e-12)
    assert change.ci_low < 0 < change.ci_high
    assert change.verdict == "unchanged"
    # every single item moved: the verdict is about the mean, not the item counts
    assert (change.improved, change.regressed) == (40, 40)


def test_random_noise_only_is_unchanged() -> None:
    rng = np.random.default_rng(11)
    values_a = rng.uniform(0, 1, 200).tolist()
    values_b = rng.uniform(0, 1, 200).tolist()  # same distribution, independent draws
    change = compare_results(*scored("answer_f1", values_a, values_b)).overall["answer_f1"]
    assert change.ci_low < 0 < change.ci_high
    assert change.verdict == "unchanged"


def test_a_positive_difference_whose_interval_holds_zero_is_unchanged() -> None:
    values_a = base_scores(20)
    shifts = [0.5, -0.4] * 10  # mean +0.05, spread far larger
    values_b = [a + s for a, s in zip(values_a, shifts, strict=True)]
    change = compare_results(*scored("answer_f1", values_a, values_b)).overall["answer_f1"]
    assert change.difference == pytest.approx(0.05)
    assert change.ci_low < 0 < change.ci_high
    assert change.verdict == "unchanged"


@pytest.mark.parametrize(
    "key", ["input_tokens", "total_tokens", "elapsed_sec", "answer_correctness_cost"]
)
def test_a_fall_is_better_when_lower_is_better(key: str) -> None:
    values_a = [100.0 + 10 * i for i in range(30)]
    values_b = [a - 20 + e for a, e in zip(values_a, symmetric_noise(30, 3.0), strict=True)]
    comparison = compare_results(*scored(key, values_a, values_b))
    change = comparison.overall[key]
    assert change.lower_is_better
    assert change.difference == pytest.approx(-20)
    assert change.ci_high < 0
    assert change.verdict == "better"
    assert (change.improved, change.regressed) == (30, 0)
    assert comparison.significant("better") == [key]
    # and a rise is worse
    change = compare_results(*scored(key, values_b, values_a)).overall[key]
    assert change.verdict == "worse"
    assert (change.improved, change.regressed) == (0, 30)
    assert change.worse_items[0].difference > 0


def test_better_items_of_a_cost_are_the_largest_falls() -> None:
    run_a, run_b = scored("input_tokens", [100, 100, 100, 100], [90, 50, 130, 100])
    change = compare_results(run_a, run_b).overall["input_tokens"]
    assert [item.question_id for item in change.better_items] == ["q1", "q0"]
    assert [item.question_id for item in change.worse_items] == ["q2"]
    assert (change.improved, change.regressed, change.unchanged) == (2, 1, 1)


def test_higher_is_better_scores_are_not_lower_is_better() -> None:
    run_a, run_b = scored("answer_f1", [0.5, 0.5], [0.6, 0.7])
    comparison = compare_results(run_a, run_b)
    assert not comparison.overall["answer_f1"].lower_is_better
    assert not comparison.keys["answer_f1"].lower_is_better
    assert comparison.keys["input_tokens"].lower_is_better


# --------------------------------------------------------------------------------------------
# Reproducibility and independence of the intervals


def noisy_runs(n: int = 40, seed: int = 2) -> tuple[list[dict], list[dict]]:
    rng = np.random.default_rng(seed)
    values_a = rng.uniform(0, 1, n).tolist()
    values_b = (np.array(values_a) + rng.normal(0.02, 0.2, n)).tolist()
    return scored("answer_f1", values_a, values_b)


def interval(comparison: Any, key: str = "answer_f1", template: str | None = None):
    change = comparison.overall[key] if template is None else comparison.per_template[template][key]
    return change.ci_low, change.ci_high


def test_the_same_seed_gives_the_same_intervals() -> None:
    run_a, run_b = noisy_runs()
    first = compare_results(run_a, run_b, seed=5)
    second = compare_results(run_a, run_b, seed=5)
    assert first.as_dict() == approx_tree(second.as_dict())
    assert first.seed == 5


def test_other_seeds_give_other_intervals() -> None:
    run_a, run_b = noisy_runs()
    intervals = {interval(compare_results(run_a, run_b, seed=seed)) for seed in range(5)}
    assert len(intervals) == 5


def test_an_interval_does_not_depend_on_other_metrics_scored_on_the_same_questions() -> None:
    run_a, run_b = noisy_runs()
    alone = interval(compare_results(run_a, run_b))

    def with_keys(run: list[dict], keys: list[str], offset: float) -> list[dict]:
        return [{**r, **dict.fromkeys(keys, i * 0.01 + offset)} for i, r in enumerate(run)]

    # one or two more metrics (gathering), then three and more (counting): the same draws
    for extra in (["answer_recall"], ["answer_recall", "answer_precision", "steps_score"]):
        both = compare_results(with_keys(run_a, extra, 0.0), with_keys(run_b, extra, 0.1))
        assert interval(both) == pytest.approx(alone, abs=1e-12)


def test_an_interval_does_not_depend_on_metrics_scored_on_other_questions() -> None:
    run_a, run_b = noisy_runs()
    alone = interval(compare_results(run_a, run_b))
    # a metric on half the questions only
    more_a = [{**r, "steps_score": 0.5} if i % 2 else r for i, r in enumerate(run_a)]
    more_b = [{**r, "steps_score": 0.9} if i % 2 else r for i, r in enumerate(run_b)]
    assert interval(compare_results(more_a, more_b)) == pytest.approx(alone, abs=1e-12)


def test_an_interval_does_not_depend_on_other_templates() -> None:
    run_a, run_b = noisy_runs()
    alone = compare_results(run_a, run_b)
    # another template, scored on another metric: the answer_f1 pairs are the same
    other_a = [ok("t2", f"x{i}", steps_score=0.2 * (i % 5)) for i in range(15)]
    other_b = [ok("t2", f"x{i}", steps_score=0.1 * (i % 7)) for i in range(15)]
    mixed = compare_results(other_a[:7] + run_a + other_a[7:], run_b + other_b)
    assert interval(mixed) == pytest.approx(interval(alone), abs=1e-12)
    assert interval(mixed, template="t1") == pytest.approx(
        interval(alone, template="t1"), abs=1e-12
    )
    assert "answer_f1" not in mixed.per_template["t2"]
    # another template scored on the same metric changes the overall pairs, not t1's
    same_key_a = [ok("t3", f"y{i}", answer_f1=0.1) for i in range(10)]
    same_key_b = [ok("t3", f"y{i}", answer_f1=0.2 + 0.01 * i) for i in range(10)]
    grown = compare_results(run_a + same_key_a, run_b + same_key_b)
    assert interval(grown, template="t1") == pytest.approx(
        interval(alone, template="t1"), abs=1e-12
    )
    assert grown.overall["answer_f1"].pairs == 50


# --------------------------------------------------------------------------------------------
# Templates, items, errors, steps


def test_per_template_comparisons() -> None:
    improving_a, improving_b = scored(
        "answer_f1",
        base_scores(20),
        [v + 0.3 + e for v, e in zip(base_scores(20), symmetric_noise(20, 0.02), strict=True)],
        template="good",
    )
    flat_a, flat_b = scored("answer_f1", [0.5] * 10, [0.5] * 10, template="flat")
    flat_a = [{**r, "question_id": "f" + r["question_id"]} for r in flat_a]
    flat_b = [{**r, "question_id": "f" + r["question_id"]} for r in flat_b]
    comparison = compare_results(improving_a + flat_a, improving_b + flat_b)
    assert list(comparison.per_template) == ["good", "flat"]
    good = comparison.per_template["good"]["answer_f1"]
    flat = comparison.per_template["flat"]["answer_f1"]
    assert (good.pairs, good.verdict) == (20, "better")
    assert good.difference == pytest.approx(0.3)
    assert (flat.pairs, flat.verdict) == (10, "unchanged")
    assert flat.difference == pytest.approx(0.0, abs=1e-12)
    assert (flat.ci_low, flat.ci_high) == pytest.approx((0.0, 0.0), abs=1e-12)
    overall = comparison.overall["answer_f1"]
    assert overall.pairs == 30
    assert overall.difference == pytest.approx(0.3 * 20 / 30)
    assert {item.template_id for item in overall.better_items} == {"good"}


def test_a_metric_a_template_does_not_have_is_not_listed_for_it() -> None:
    run_a = [ok("t1", "a", answer_f1=0.1), ok("t2", "b", steps_score=0.5)]
    run_b = [ok("t1", "a", answer_f1=0.2), ok("t2", "b", steps_score=0.5)]
    comparison = compare_results(run_a, run_b)
    assert set(comparison.per_template["t1"]) == {"answer_f1"}
    assert set(comparison.per_template["t2"]) == {"steps_score"}
    assert set(comparison.overall) == {"answer_f1", "steps_score"}  # no unscored token keys


def test_item_counts_and_the_order_of_better_and_worse_items() -> None:
    values_a = [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    values_b = [0.6, 0.9, 0.5, 0.2, 0.7, 0.4, 0.9, 0.5]
    run_a, run_b = scored("answer_f1", values_a, values_b)
    change = compare_results(run_a, run_b, top=0).overall["answer_f1"]
    assert (change.improved, change.regressed, change.unchanged) == (4, 2, 2)
    # largest change first; equal changes in the questions' order
    assert [i.question_id for i in change.better_items] == ["q1", "q6", "q4", "q0"]
    assert [i.question_id for i in change.worse_items] == ["q3", "q5"]
    assert change.better_items[0].difference == pytest.approx(0.4)
    assert change.worse_items[0].difference == pytest.approx(-0.3)

    limited = compare_results(run_a, run_b, top=2).overall["answer_f1"]
    assert [i.question_id for i in limited.better_items] == ["q1", "q6"]
    assert [i.question_id for i in limited.worse_items] == ["q3", "q5"]
    assert (limited.improved, limited.regressed) == (4, 2)  # counts are not limited by top
    one = compare_results(run_a, run_b, top=1).overall["answer_f1"]
    assert [i.question_id for i in one.better_items] == ["q1"]
    assert [i.question_id for i in one.worse_items] == ["q3"]


def test_top_defaults_to_ten() -> None:
    run_a, run_b = scored("answer_f1", [0.0] * 15, [0.01 * (i + 1) for i in range(15)])
    change = compare_results(run_a, run_b).overall["answer_f1"]
    assert len(change.better_items) == 10
    assert change.better_items[0].question_id == "q14"
    assert change.improved == 15


def test_a_new_error_is_scored_only_in_a_with_error_samples_exclude() -> None:
    run_a = [ok("t1", f"q{i}", steps_score=1.0, reference_steps=[[{}]]) for i in range(8)]
    run_b = [*run_a[:3], err("t1", "q3", reference_steps=[[{}]]), *run_a[4:]]
    comparison = compare_results(run_a, run_b, error_samples="exclude")
    change = comparison.overall["steps_score"]
    assert change.pairs == 7
    assert (change.scored_only_in_a, change.scored_only_in_b) == (1, 0)
    assert change.difference == pytest.approx(0.0, abs=1e-12)
    assert change.verdict == "unchanged"
    assert comparison.status_changes == {"success -> error": ["q3"]}
    assert comparison.per_template["t1"]["steps_score"].scored_only_in_a == 1
    # the other way round
    reverse = compare_results(run_b, run_a, error_samples="exclude")
    assert reverse.overall["steps_score"].scored_only_in_b == 1
    assert reverse.status_changes == {"error -> success": ["q3"]}


def test_a_new_error_is_a_fall_by_default() -> None:
    """As in ``graphrag-eval compare``: a question that newly fails scores 0 (honest numbers),
    so a notebook and a CI job reach the same verdict on the same runs."""
    run_a = [ok("t1", f"q{i}", steps_score=1.0, reference_steps=[[{}]]) for i in range(4)]
    run_b = [*run_a[:3], err("t1", "q3", reference_steps=[[{}]])]
    comparison = compare_results(run_a, run_b)
    change = comparison.overall["steps_score"]
    assert change.pairs == 4
    assert (change.scored_only_in_a, change.scored_only_in_b) == (0, 0)
    assert change.mean_b == pytest.approx(0.75)
    assert change.difference == pytest.approx(-0.25)
    assert (change.improved, change.regressed, change.unchanged) == (0, 1, 3)
    assert [(i.question_id, i.a, i.b) for i in change.worse_items] == [
        ("q3", pytest.approx(1.0), pytest.approx(0.0))
    ]


def test_error_samples_applies_to_both_runs_whatever_their_configs_say() -> None:
    run_a = [ok("t1", f"q{i}", steps_score=1.0, reference_steps=[[{}]]) for i in range(4)]
    run_b = [*run_a[:3], err("t1", "q3", reference_steps=[[{}]])]
    excluding = {"aggregation": {"error_samples": "exclude"}}
    zero = compare_results(run_a, run_b, config_a=excluding, config_b=excluding)
    assert zero.overall["steps_score"].pairs == 4
    assert zero.overall["steps_score"].mean_b == pytest.approx(0.75)
    excluded = compare_results(
        run_a, run_b, config_a=ZERO_ERRORS, config_b=ZERO_ERRORS, error_samples="exclude"
    )
    assert excluded.overall["steps_score"].pairs == 3
    assert excluded.overall["steps_score"].scored_only_in_a == 1


def test_error_samples_zero_needs_the_required_fields() -> None:
    run_a = [ok("t1", f"q{i}", steps_score=1.0, reference_steps=[[{}]]) for i in range(4)]
    run_b = [*run_a[:3], err("t1", "q3")]  # no reference_steps: no steps_score to zero
    change = compare_results(run_a, run_b, error_samples="zero").overall["steps_score"]
    assert change.pairs == 3
    assert change.scored_only_in_a == 1


@pytest.mark.parametrize(("option", "value"), [("error_samples", "skip"), ("top", -1)])
def test_compare_results_rejects_a_bad_option(option: str, value: Any) -> None:
    run_a, run_b = noisy_runs(5)
    with pytest.raises(ValueError, match=option):
        compare_results(run_a, run_b, **{option: value})


def test_a_metric_scored_in_one_run_only_has_no_pairs() -> None:
    run_a = [ok("t1", f"q{i}", answer_f1=0.5, steps_score=0.5) for i in range(3)]
    run_b = [ok("t1", f"q{i}", steps_score=0.5) for i in range(3)]
    comparison = compare_results(run_a, run_b)
    change = comparison.overall["answer_f1"]
    assert change.verdict == "no pairs"
    assert change.pairs == 0
    assert (change.mean_a, change.mean_b, change.difference) == (None, None, None)
    assert (change.ci_low, change.ci_high) == (None, None)
    assert change.scored_only_in_a == 3
    assert format_interval(change.ci_low, change.ci_high) == "-"
    json.dumps(comparison.as_dict(), allow_nan=False)


def step(value: float | None, name: str = "retrieval") -> dict[str, Any]:
    return {"name": name} if value is None else {"name": name, "retrieval_context_f1": value}


def test_step_metrics_use_the_mean_over_each_items_steps() -> None:
    run_a = [
        ok("t1", "q1", actual_steps=[step(0.5), step(1.0), step(None, "sparql_query")]),
        ok("t1", "q2", actual_steps=[step(0.2)]),
    ]
    run_b = [
        ok("t1", "q1", actual_steps=[step(0.25)]),
        ok("t1", "q2", actual_steps=[step(0.4), step(0.6)]),
    ]
    change = compare_results(run_a, run_b).overall["retrieval_context_f1"]
    assert change.pairs == 2
    assert change.mean_a == pytest.approx((0.75 + 0.2) / 2)
    assert change.mean_b == pytest.approx((0.25 + 0.5) / 2)
    items = {i.question_id: (i.a, i.b) for i in change.better_items + change.worse_items}
    assert items["q1"] == pytest.approx((0.75, 0.25))
    assert items["q2"] == pytest.approx((0.2, 0.5))


def test_status_changes_both_ways() -> None:
    run_a = [ok("t1", "q1"), ok("t1", "q2"), err("t1", "q3"), ok("t1", "q4"), ok("t1", "q5")]
    run_b = [err("t1", "q1"), ok("t1", "q2"), ok("t1", "q3"), err("t1", "q4")]
    changes = compare_results(run_a, run_b).status_changes
    assert changes == {"success -> error": ["q1", "q4"], "error -> success": ["q3"]}


# --------------------------------------------------------------------------------------------
# Output


COMPARISON_KEYS = {
    "run_a",
    "run_b",
    "seed",
    "resamples",
    "confidence",
    "questions_a",
    "questions_b",
    "paired",
    "only_in_a",
    "only_in_b",
    "status_changes",
    "metrics",
    "per_template",
    "error_samples",
    "significant_scores",
    "resources",
    "failed",
    "graph_warning",
    "reference_changed",
    "response_changed",
}
METRIC_KEYS = {
    "pairs",
    "mean_a",
    "mean_b",
    "difference",
    "ci_low",
    "ci_high",
    "change",
    "lower_is_better",
    "improved",
    "regressed",
    "unchanged",
    "scored_only_in_a",
    "scored_only_in_b",
    "better_items",
    "worse_items",
    "unit",
}


def test_as_dict_is_json_with_the_documented_keys() -> None:
    run_a = [ok("t1", "q1", answer_f1=0.25, input_tokens=10), ok("t2", "q2", answer_f1=0.4)]
    run_b = [ok("t1", "q1", answer_f1=0.75, input_tokens=12), err("t2", "q2"), ok("t1", "q3")]
    comparison = compare_results(run_a, run_b, run_a="base", run_b="new", seed=3, resamples=50)
    document = json.loads(json.dumps(comparison.as_dict(), allow_nan=False))
    assert set(document) == COMPARISON_KEYS
    assert (document["run_a"], document["run_b"], document["seed"]) == ("base", "new", 3)
    assert (document["resamples"], document["confidence"]) == (50, 0.95)
    assert (document["questions_a"], document["questions_b"], document["paired"]) == (2, 3, 2)
    assert document["only_in_b"] == ["q3"]
    assert document["status_changes"] == {"success -> error": ["q2"]}
    assert set(document["metrics"]) == {"answer_f1", "input_tokens"}
    for change in document["metrics"].values():
        assert set(change) == METRIC_KEYS
    answer = document["metrics"]["answer_f1"]
    assert answer["change"] == "too few pairs"
    assert answer["better_items"] == approx_tree(
        [{"question_id": "q1", "template_id": "t1", "a": 0.25, "b": 0.75, "difference": 0.5}]
    )
    assert set(document["per_template"]) == {"t1", "t2"}
    assert document["per_template"]["t2"]["answer_f1"]["change"] == "no pairs"
    assert document["error_samples"] == "zero"
    assert document["significant_scores"] == {"better": [], "worse": []}
    assert document["failed"] == {}
    assert (answer["unit"], document["metrics"]["input_tokens"]["unit"]) == ("score", "tokens")
    assert document["resources"] == {
        "input_tokens": {
            "unit": "tokens",
            "pairs": 1,
            "mean_a": 10,
            "mean_b": 12,
            "difference": 2,
            "ci_low": 2,
            "ci_high": 2,
            "change": "too few pairs",
        }
    }


def test_default_resamples_follow_the_number_of_pairs() -> None:
    run_a, run_b = noisy_runs(10)
    assert compare_results(run_a, run_b).resamples == auto_resamples(10) == 10_000
    assert compare_results(run_a, run_b, resamples=123).resamples == 123


def test_auto_resamples() -> None:
    assert auto_resamples(0) == 10_000
    assert auto_resamples(1_000) == 10_000
    assert auto_resamples(20_000) == 10_000
    assert auto_resamples(50_000) == 4_000
    assert auto_resamples(100_000) == 2_000
    assert auto_resamples(10_000_000) == 2_000


def test_format_interval() -> None:
    assert format_interval(-0.01234, 0.5) == "[-0.0123, +0.500]"
    assert format_interval(0.1, 0.2, digits=1) == "[+0.1, +0.2]"
    assert format_interval(-7541.2, -7407.9) == "[-7,541, -7,408]"
    assert format_interval(0.0, 0.0) == "[0, 0]"
    assert format_interval(None, 0.2) == "-"
    assert format_interval(math.nan, 0.2) == "-"


def test_format_signed_keeps_significant_digits() -> None:
    assert format_signed(0.0) == "0"
    assert format_signed(0.018254) == "+0.0183"
    assert format_signed(-3.376e-07) == "-0.000000338"
    assert format_signed(-7474.4) == "-7,474"
    assert format_signed(12.345) == "+12.3"
    assert format_signed(12.345, digits=2) == "+12"


def test_too_few_pairs_get_no_verdict() -> None:
    values_a = [0.1 * i for i in range(MIN_PAIRS)]
    shifted = [v + 0.5 for v in values_a]
    few = compare_results(*scored("answer_f1", values_a[:-1], shifted[:-1]))
    change = few.overall["answer_f1"]
    assert change.pairs == MIN_PAIRS - 1
    assert change.verdict == "too few pairs"
    assert change.difference == pytest.approx(0.5)  # the numbers are still there
    assert change.improved == MIN_PAIRS - 1
    assert few.significant("better") == []
    enough = compare_results(*scored("answer_f1", values_a, shifted)).overall["answer_f1"]
    assert enough.verdict == "better"


def test_a_single_pair_gets_no_verdict() -> None:
    change = compare_results(*scored("input_tokens", [100], [10])).overall["input_tokens"]
    assert change.pairs == 1
    assert (change.ci_low, change.ci_high) == pytest.approx((-90.0, -90.0))
    assert change.verdict == "too few pairs"


@pytest.mark.parametrize("resamples", [0, -5])
def test_compare_results_rejects_too_few_resamples(resamples: int) -> None:
    run_a, run_b = noisy_runs(5)
    with pytest.raises(ValueError, match="resamples"):
        compare_results(run_a, run_b, resamples=resamples)


@pytest.mark.parametrize("confidence", [0.0, 1.0, -0.5, 1.5, 95, math.nan])
def test_compare_results_rejects_a_confidence_outside_0_1(confidence: float) -> None:
    run_a, run_b = noisy_runs(5)
    with pytest.raises(ValueError, match="confidence"):
        compare_results(run_a, run_b, confidence=confidence)


# --------------------------------------------------------------------------------------------
# bootstrap_intervals


def test_bootstrap_rejects_no_differences() -> None:
    with pytest.raises(ValueError):
        bootstrap_intervals(np.empty((0, 1)), np.random.default_rng(0), 100)


def test_bootstrap_intervals_rejects_zero_resamples() -> None:
    differences = np.array([[0.1], [0.3], [-0.2]])
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_intervals(differences, np.random.default_rng(0), 0)


@pytest.mark.parametrize("confidence", [0.0, 1.0])
def test_bootstrap_intervals_rejects_a_confidence_outside_0_1(confidence: float) -> None:
    differences = np.array([[0.1], [0.3], [-0.2]])
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_intervals(differences, np.random.default_rng(0), 100, confidence)


def test_bootstrap_covers_the_true_mean_about_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(2024)
    true_mean = 0.3
    covered = 0
    datasets = 200
    for _ in range(datasets):
        sample = rng.normal(true_mean, 1.0, 50)
        low, high = bootstrap_interval(sample, rng, resamples=1000)
        covered += low <= true_mean <= high
    assert 0.88 * datasets <= covered <= 0.99 * datasets


def test_bootstrap_width_matches_the_normal_interval_for_large_samples() -> None:
    rng = np.random.default_rng(7)
    n, sd = 2000, 2.0
    sample = rng.normal(1.0, sd, n)
    low, high = bootstrap_interval(sample, rng, resamples=5000)
    analytic = 2 * 1.959964 * sample.std(ddof=1) / math.sqrt(n)
    assert high - low == pytest.approx(analytic, rel=0.15)
    assert low < sample.mean() < high
    assert (low + high) / 2 == pytest.approx(sample.mean(), abs=0.1 * analytic)


def test_a_higher_confidence_gives_a_wider_interval() -> None:
    sample = np.random.default_rng(3).normal(0, 1, 100)[:, None]
    narrow = bootstrap_intervals(sample, np.random.default_rng(1), 2000, 0.8)[0]
    wide = bootstrap_intervals(sample, np.random.default_rng(1), 2000, 0.99)[0]
    assert wide[0] < narrow[0] < narrow[1] < wide[1]


def test_bootstrap_interval_is_the_single_column_case() -> None:
    sample = np.random.default_rng(3).normal(0, 1, 30)
    single = bootstrap_interval(sample, np.random.default_rng(9), 700)
    assert single == pytest.approx(
        bootstrap_intervals(sample[:, None], np.random.default_rng(9), 700)[0], abs=1e-12
    )


@pytest.mark.parametrize("columns", [2, 3, 4, 7])
def test_gathering_and_counting_give_the_same_intervals(columns: int) -> None:
    """One or two columns are resampled by gathering, three and more by counting rows:
    for the same draws both give the same means."""
    data = np.random.default_rng(5).normal(0, 1, (57, 7))
    single = [
        bootstrap_intervals(data[:, [c]], np.random.default_rng(13), 1500)[0]
        for c in range(columns)
    ]
    together = bootstrap_intervals(data[:, :columns], np.random.default_rng(13), 1500)
    for alone, joint in zip(single, together, strict=True):
        assert joint == pytest.approx(alone, abs=1e-9)


@pytest.mark.parametrize("columns", [1, 2, 4])
@pytest.mark.parametrize(("rows", "cells"), [(7, 7), (7, 10), (33, 100), (50, 333), (101, 1)])
def test_chunking_does_not_change_the_intervals(
    monkeypatch: pytest.MonkeyPatch, columns: int, rows: int, cells: int
) -> None:
    """Resamples drawn a chunk at a time give the same intervals as drawn all at once."""
    data = np.random.default_rng(rows).normal(0, 1, (rows, columns))
    whole = bootstrap_intervals(data, np.random.default_rng(21), 1001)
    monkeypatch.setattr(compare_module, "_CELLS_PER_CHUNK", cells)
    chunked = bootstrap_intervals(data, np.random.default_rng(21), 1001)
    for piece, entire in zip(chunked, whole, strict=True):
        assert piece == pytest.approx(entire, abs=1e-12)


def test_chunking_does_not_change_a_comparison(monkeypatch: pytest.MonkeyPatch) -> None:
    run_a, run_b = noisy_runs(45)
    run_a = [{**r, "steps_score": 0.5, "answer_recall": 0.1} for r in run_a]
    run_b = [{**r, "steps_score": 0.6, "answer_recall": 0.3 * (i % 3)} for i, r in enumerate(run_b)]
    whole = compare_results(run_a, run_b, resamples=999).as_dict()
    monkeypatch.setattr(compare_module, "_CELLS_PER_CHUNK", 100)
    # Chunks sum the resampled means in another order: equal up to the last digit.
    assert compare_results(run_a, run_b, resamples=999).as_dict() == approx_tree(whole)


def test_a_constant_column_has_a_degenerate_interval_among_others() -> None:
    data = np.column_stack(
        [np.full(20, 0.125), np.random.default_rng(1).normal(0, 1, 20), np.zeros(20)]
    )
    found = bootstrap_intervals(data, np.random.default_rng(0), 500)
    assert found[0] == pytest.approx((0.125, 0.125), abs=1e-12)
    assert found[1][0] < found[1][1]
    assert found[2] == pytest.approx((0.0, 0.0), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(min_value=-100, max_value=100, allow_nan=False), min_size=1, max_size=40),
    st.integers(min_value=0, max_value=2**32 - 1),
)
def test_an_interval_lies_within_the_differences_and_holds_their_mean(
    values: list[float], seed: int
) -> None:
    differences = np.array(values)
    low, high = bootstrap_interval(differences, np.random.default_rng(seed), 2000)
    tolerance = 1e-9 * (1 + np.abs(differences).max())
    assert differences.min() - tolerance <= low <= high <= differences.max() + tolerance
    assert low - tolerance <= differences.mean() <= high + tolerance
