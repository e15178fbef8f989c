"""The terminal summary of a run's judge calls (docs/llm.md): counts read in the singular
and the plural as they should."""

from __future__ import annotations

import io

from rich.console import Console

from graphrag_eval.comparison.compare import compare_results
from graphrag_eval.comparison.console import print_comparison
from graphrag_eval.llm.engine import CallStats
from graphrag_eval.report.console import print_llm_summary


def printed(stats: CallStats) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    print_llm_summary(console, stats, None)
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue()


def test_one_call_one_retry_one_failure_are_singular() -> None:
    text = printed(CallStats(calls=1, retries=1, failed=1, cache_hits=1))
    assert text.startswith("judge: 1 call made, 1 served from the cache, ")
    assert "(1 retry, 1 call failed)" in text


def test_several_calls_are_plural() -> None:
    text = printed(CallStats(calls=2, retries=3, failed=2))
    assert text.startswith("judge: 2 calls made, 0 served from the cache, ")
    assert "(3 retries, 2 calls failed)" in text


def test_one_local_text_is_singular() -> None:
    assert printed(CallStats(local_texts=1, cache_hits=1)) == (
        "local models: 1 text encoded, 1 lookup served from the cache\n"
    )


def test_the_comparison_table_shows_costs_in_dollars_with_their_digits() -> None:
    def run(cost: float) -> list[dict[str, object]]:
        return [
            {
                "template_id": "t",
                "question_id": f"q{i}",
                "status": "success",
                "answer_f1": 0.5,
                "answer_correctness_cost": cost,
            }
            for i in range(8)
        ]

    comparison = compare_results(run(0.00004), run(0.00005))
    console = Console(file=io.StringIO(), width=200, color_system=None)
    print_comparison(console, comparison)
    assert isinstance(console.file, io.StringIO)
    printed = console.file.getvalue().splitlines()
    [row] = [line.split() for line in printed if line.startswith(" answer_correctness_cost")]
    assert row[1:5] == ["8", "$0.00004", "$0.00005", "+$0.00001"]
    assert "  q0 (t): $0.00004 -> $0.00005" in printed  # a question that got worse
