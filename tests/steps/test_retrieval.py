"""recall@k, average precision and context comparison (docs/steps.md)."""

from __future__ import annotations

import pytest

from graphrag_eval import average_precision, recall_at_k
from graphrag_eval.steps.retrieval import (
    Context,
    ContextScores,
    parse_contexts,
    score_contexts,
    text_similarity,
)


def test_recall_at_k_seed_example() -> None:
    assert recall_at_k({1, 3, 5, 6}, [1, 4, 3, 5, 7], k=5) == pytest.approx(0.75)


def test_recall_at_k_cuts_retrieved_at_k() -> None:
    assert recall_at_k([1, 3], [4, 1, 3], k=2) == pytest.approx(0.5)


def test_recall_at_k_uses_the_first_k_relevant_of_a_ranked_list() -> None:
    # with k=2 only relevant a, b count, and the denominator is min(k, |relevant|) = 2
    assert recall_at_k(["a", "b", "c"], ["c", "a"], k=2) == pytest.approx(0.5)
    # a set has no order: all of it is relevant
    assert recall_at_k({"a", "b", "c"}, ["c", "a"], k=2) == pytest.approx(1.0)


def test_recall_at_k_denominator_is_min_of_k_and_relevant() -> None:
    assert recall_at_k(["a"], ["a", "x", "y"], k=3) == pytest.approx(1.0)
    assert recall_at_k(["a", "b", "c", "d"], ["a", "b"], k=2) == pytest.approx(1.0)


def test_recall_at_k_degenerate_inputs() -> None:
    assert recall_at_k([], ["a"], k=3) == pytest.approx(0.0)
    assert recall_at_k(["a"], [], k=3) == pytest.approx(0.0)
    assert recall_at_k(["a"], ["a"], k=0) == pytest.approx(0.0)


def test_recall_at_k_ignores_repeated_retrievals() -> None:
    assert recall_at_k(["a", "b"], ["a", "a", "b"], k=2) == pytest.approx(0.5)


def test_average_precision_standard_definition() -> None:
    # (1/1 + 2/3 + 3/4) / 4 relevant items; the seed's text divides by 3 hits (0.8056)
    assert average_precision({1, 3, 5, 6}, [1, 4, 3, 5, 7]) == pytest.approx(0.6041666, abs=1e-6)


def test_average_precision_extremes() -> None:
    assert average_precision(["a", "b"], ["a", "b"]) == pytest.approx(1.0)
    assert average_precision(["a", "b"], ["b", "a"]) == pytest.approx(1.0)
    assert average_precision(["a", "b"], ["x", "y"]) == pytest.approx(0.0)
    assert average_precision([], ["a"]) == pytest.approx(0.0)
    assert average_precision(["a"], ["x", "a"]) == pytest.approx(0.5)


def test_average_precision_counts_a_relevant_item_once_at_its_first_rank() -> None:
    assert average_precision(["a"], ["a", "a"]) == pytest.approx(1.0)
    # the repeat still occupies rank 2, so b is found at rank 3
    assert average_precision(["a", "b"], ["a", "a", "b"]) == pytest.approx((1 + 2 / 3) / 2)


# ---------------------------------------------------------------- contexts


def test_parse_contexts_from_objects_and_strings() -> None:
    parsed = parse_contexts('[{"id": "d1", "text": "A"}, "B", {"id": 7}]')
    assert parsed == (Context("d1", "A"), Context(None, "B"), Context("7", None))


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("not json", "not a JSON list of contexts"),
        ('{"id": "d1"}', "not a list of contexts"),
        ("[{}]", "context 0 has neither 'id' nor 'text'"),
        ("[3]", "context 0 is neither an object nor a string"),
        ('[{"text": 3}]', "context 0 has a text that is not a string"),
    ],
)
def test_parse_contexts_rejects(value: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_contexts(value)


def test_text_similarity_folds_case_and_whitespace() -> None:
    assert text_similarity("Transformer  OSLO T1", "transformer oslo t1") == pytest.approx(1.0)
    assert text_similarity("", "") == pytest.approx(1.0)
    assert text_similarity("abc", "xyz") == pytest.approx(0.0)


def test_contexts_match_by_id_when_both_have_ids() -> None:
    reference = [Context("d1", "same text"), Context("d2", "other")]
    # the same text under a different id does not count
    scores = score_contexts(reference, [Context("d9", "same text"), Context("d2", "x")])
    assert scores.recall == pytest.approx(0.5)
    assert scores.precision == pytest.approx((1 / 2) / 2)


def test_contexts_match_by_text_when_an_id_is_missing() -> None:
    reference = [Context(None, "Transformer OSLO T1 is in Substation Oslo.")]
    retrieved = [
        Context("d1", "Unrelated paragraph about weather in Bergen."),
        Context("d2", "Transformer OSLO T1 is located in Substation Oslo."),
    ]
    scores = score_contexts(reference, retrieved)
    assert scores.recall == pytest.approx(1.0)
    assert scores.precision == pytest.approx(0.5)  # found at rank 2


def test_similarity_threshold_is_respected() -> None:
    reference = [Context(None, "abcdefgh")]
    retrieved = [Context(None, "abcdxyzw")]  # ratio 0.5
    assert score_contexts(reference, retrieved, threshold=0.5).recall == pytest.approx(1.0)
    assert score_contexts(reference, retrieved, threshold=0.6).recall == pytest.approx(0.0)


def test_duplicate_retrievals_do_not_inflate_precision() -> None:
    reference = [Context("d1", None)]
    scores = score_contexts(reference, [Context("d1", None)] * 3)
    assert scores.recall == pytest.approx(1.0)
    assert scores.precision == pytest.approx(1.0)


def test_f1_is_the_harmonic_mean() -> None:
    assert ContextScores(recall=1.0, precision=0.5).f1 == pytest.approx(2 / 3)
    assert ContextScores(recall=0.0, precision=0.0).f1 == pytest.approx(0.0)


def test_no_reference_contexts_is_an_error() -> None:
    with pytest.raises(ValueError, match="no contexts"):
        score_contexts([], [Context("d1", None)])


def test_documented_worked_example() -> None:
    # docs/metrics.md: reference d1, d2; retrieved d3, d1
    scores = score_contexts(
        [Context("d1", None), Context("d2", None)], [Context("d3", None), Context("d1", None)]
    )
    assert scores.recall == pytest.approx(0.5)
    assert scores.precision == pytest.approx(0.25)
    assert scores.f1 == pytest.approx(1 / 3)
