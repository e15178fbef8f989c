"""What the report shows per question (src/graphrag_eval/report/item_views.py): the headline
score of every row in one loop is each row's own headline score."""

from __future__ import annotations

import pytest

from graphrag_eval.report.item_views import headline_score, headline_scores

HEADLINE = {"answer_f1": 1.0, "steps_score": 1.0, "rating": 5.0}


def test_headline_scores_are_each_rows_headline_score() -> None:
    rows = [
        {"answer_f1": 0.5, "steps_score": 1.0, "rating": 4.0},
        {"answer_f1": 0.5},
        {"rating": 5.0, "other": 0.0},
        {},
        {"other": 1.0},
        {"steps_score": -0.0, "answer_f1": 0.0},
    ]
    scores = headline_scores(rows, HEADLINE)
    assert scores == pytest.approx([headline_score(row, HEADLINE) for row in rows])
    assert scores[0] == pytest.approx((0.5 + 1.0 + 0.8) / 3)
    assert scores[1] == pytest.approx(0.5)
    assert scores[2] == pytest.approx(1.0)
    assert scores[3] is None and scores[4] is None
    assert headline_scores(rows, {}) == [None] * len(rows)
