"""A metric that failed for an internal error (a bug) is counted as failed wherever metrics are
shown: the saved record (its kind), the HTML report, the terminal summary and a comparison
(issue 23, points 4 and 6)."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from graphrag_eval.comparison.compare import compare_results
from graphrag_eval.comparison.console import print_comparison
from graphrag_eval.comparison.page import render_comparison
from graphrag_eval.metrics.base import ItemContext, ItemMetric, Outcome, OutputKey, Scored
from graphrag_eval.metrics.registry import register_metric, unregister_metric
from graphrag_eval.report.console import print_summary
from graphrag_eval.report.html import render_report
from graphrag_eval.results.model import FAILURE_KINDS_KEY
from graphrag_eval.results.read_run import SavedRun, load_run
from graphrag_eval.results.to_records import to_records

from builders import evaluate_cli, failing_metric, read_records, write_answered

QUESTIONS = 4


class _Working(ItemMetric):
    name = "broken"
    outputs = (OutputKey("broken_score", maximum=1),)
    error_keys = ("broken_error",)

    async def score(self, context: ItemContext) -> Outcome:
        return Scored({"broken_score": 1.0})


def _evaluate(folder: Path) -> int:
    reference, responses = write_answered(folder, QUESTIONS)
    config = folder / "config.yaml"
    config.write_text(yaml.safe_dump({"metrics": ["broken"]}))
    return evaluate_cli(reference, responses, "-c", config, "-o", folder / "out", "-q")


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[tuple[SavedRun, SavedRun, Path]]:
    """Run A, where the metric works, and run B, where it raises on every question; read
    back while the metric is registered."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    register_metric(_Working())
    try:
        assert _evaluate(tmp_path / "a") == 0
        run_a = load_run(tmp_path / "a" / "out")
    finally:
        unregister_metric("broken")
    with failing_metric("broken", "a bug"):
        assert _evaluate(tmp_path / "b") == 3
        yield run_a, load_run(tmp_path / "b" / "out"), tmp_path / "b" / "out"


def test_the_record_keeps_its_error_key_and_says_the_failure_is_internal(
    runs: tuple[SavedRun, SavedRun, Path],
) -> None:
    records = read_records(runs[2])

    assert all(record["broken_error"].startswith("internal error") for record in records)
    assert all(record[FAILURE_KINDS_KEY] == {"broken": "internal"} for record in records)


def test_the_report_counts_the_metric_as_failed(runs: tuple[SavedRun, SavedRun, Path]) -> None:
    page = render_report(runs[1])

    overall = page[page.index('id="metrics"') : page.index("</table>", page.index('id="metrics"'))]
    # A row of its own, without statistics: 0 scored, every question failed.
    row = re.search(r"<td>broken_score</td>(.*?)</tr>", overall, re.S)
    assert row is not None
    cells = [
        re.sub(r"<[^>]+>", "", cell).strip()
        for cell in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)
    ]
    assert cells[:4] == ["-"] * 4
    assert f"0 / {QUESTIONS}" in cells
    assert str(QUESTIONS) == cells[cells.index(f"0 / {QUESTIONS}") + 1]


def test_the_summary_counts_the_metric_as_failed(runs: tuple[SavedRun, SavedRun, Path]) -> None:
    console = Console(file=io.StringIO(), width=120, color_system=None)

    print_summary(console, runs[1].aggregates, runs[1].layout)

    assert isinstance(console.file, io.StringIO)
    printed = console.file.getvalue()
    assert f"0/{QUESTIONS} ({QUESTIONS} failed)" in printed
    assert (
        f"broken_score 0/{QUESTIONS}, {QUESTIONS} failed: internal error in broken: "
        "RuntimeError('a bug')"
    ) in printed


def test_a_comparison_shows_the_failed_run_has_no_value(
    runs: tuple[SavedRun, SavedRun, Path],
) -> None:
    run_a, run_b, _ = runs
    comparison = compare_results(run_a.results, run_b.results)

    change = comparison.overall["broken_score"]
    assert (change.pairs, change.scored_only_in_a, change.verdict) == (0, QUESTIONS, "no pairs")
    assert comparison.as_dict()["failed"] == {"broken_score": {"a": 0, "b": QUESTIONS}}
    line = f"broken_score failed on {QUESTIONS} questions of B, 0 of A"
    console = Console(file=io.StringIO(), width=160, color_system=None)
    print_comparison(console, comparison)
    assert isinstance(console.file, io.StringIO)
    assert line in console.file.getvalue()
    assert line in render_comparison(comparison, run_a, run_b)
    # Flat records count the failures the same way.
    assert compare_results(_records(run_a), _records(run_b)).failed == comparison.failed


def _records(run: SavedRun) -> list[dict[str, Any]]:
    return to_records(run.results)
