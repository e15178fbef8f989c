"""A judged metric's repeats made one outcome (src/graphrag_eval/metrics/repeats.py;
docs/outputs.md, "Repeats"): the cases the end-to-end tests of tests/metrics/test_repeats.py
do not reach with the test judge (a custom output of true/false, a metric skipped every time,
a repeat with its own partial failure)."""

from __future__ import annotations

import pytest

from graphrag_eval.metrics.base import Failed, FailureKind, OutputKey, Scored, Skipped
from graphrag_eval.metrics.repeats import combine_repeats, with_repeat_companions

OUTPUTS = with_repeat_companions(
    (OutputKey("grounded"), OutputKey("score"), OutputKey.cost("check_cost"))
)
ERRORS = ("check_error",)


def test_true_and_false_are_voted_not_averaged() -> None:
    outcomes = [
        Scored({"grounded": True, "score": 1, "check_cost": 0.5}),
        Scored({"grounded": False, "score": 0, "check_cost": 0.5}),
        Scored({"grounded": True, "score": 1, "check_cost": 0.25}),
    ]

    combined = combine_repeats(outcomes, OUTPUTS, ERRORS)

    assert isinstance(combined, Scored)
    assert combined.values["grounded"] is True
    assert combined.values["grounded_repeats"] == [True, False, True]
    assert combined.values["grounded_repeats_std"] is None
    assert combined.values["score"] == pytest.approx(2 / 3)
    assert combined.values["score_repeats_std"] == pytest.approx(0.57735, abs=1e-5)
    assert combined.values["check_cost"] == pytest.approx(1.25)
    assert list(combined.values) == [
        *("grounded", "grounded_repeats", "grounded_repeats_std"),
        *("score", "score_repeats", "score_repeats_std"),
        "check_cost",
    ]
    assert not combined.failures


def test_a_metric_skipped_every_time_stays_skipped() -> None:
    skipped = Skipped("the response has no contexts")
    assert combine_repeats([skipped, skipped], OUTPUTS, ERRORS) is skipped


def test_all_failed_keeps_the_kind_that_calling_again_may_mend() -> None:
    outcomes = [
        Failed("malformed judge reply", FailureKind.REPLY, "judge"),
        Failed("judge unreachable", FailureKind.UNREACHABLE, "judge"),
    ]

    combined = combine_repeats(outcomes, OUTPUTS, ERRORS)

    assert combined == Failed(
        "all 2 repeats failed: malformed judge reply", FailureKind.UNREACHABLE, "judge"
    )


def test_a_repeats_own_partial_failure_is_kept_beside_the_failed_repeats() -> None:
    outcomes = [
        Scored({"score": None, "grounded": True}, {"check_error": "1 of 2 outputs judged"}),
        Failed("judge unreachable", FailureKind.UNREACHABLE),
        Scored({"score": 0.5, "grounded": True}),
    ]

    combined = combine_repeats(outcomes, OUTPUTS, ERRORS)

    assert isinstance(combined, Scored)
    assert combined.values["score_repeats"] == [None, None, 0.5]
    assert combined.values["score"] == 0.5
    assert combined.values["score_repeats_std"] is None  # one successful repeat
    assert combined.failures == {"check_error": "1 of 2 outputs judged"}
    assert combined.failure_kind is FailureKind.UNREACHABLE  # the resume redoes the item
