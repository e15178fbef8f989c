"""HTML report benchmark: ``render_report`` of a generated run of N questions.

A run of N questions (default 100,000) over T templates (default 50) is generated: 2 % error
responses, the rest with ``steps_score``, ``answer_f1``, ``answer_relevance`` (headline
scores), token counts, a judge reason and texts. Timed separately: reading the results back
and their aggregates (as ``report`` reads and computes them) and the rendering of
the page (``render_report``: charts, tables, the 20 worst questions). The page size is
printed too.

Run from the repository root::

    .venv/bin/python benchmarks/bench_report.py [--questions 100000] [--templates 50]
        [--repeat 3]
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import time
from pathlib import Path
from typing import Any

from graphrag_eval.collector import collection_paused
from graphrag_eval.config import EvaluationConfig
from graphrag_eval.report.html import render_report
from graphrag_eval.results.aggregation import aggregate
from graphrag_eval.results.from_records import read_records
from graphrag_eval.results.read_run import SavedRun


def generate(questions: int, templates: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    results: list[dict[str, Any]] = []
    for index in range(questions):
        head = {
            "template_id": f"template_{index % templates}",
            "question_id": f"q{index}",
            "question_text": f"Which substations are connected to substation {index}?",
            "reference_answer": "ARENDAL, BLAFALLI, STAVANGER",
        }
        if rng.random() < 0.02:
            results.append({**head, "status": "error", "error": "the agent timed out"})
            continue
        results.append(
            {
                **head,
                "status": "success",
                "actual_answer": "ARENDAL, BLAFALLI",
                "steps_score": rng.choice((0.0, 0.5, 1.0, 1.0)),
                "answer_recall": rng.random(),
                "answer_precision": rng.random(),
                "answer_f1": rng.random(),
                "answer_correctness_reason": "One reference claim is missing.",
                "answer_relevance": rng.random(),
                "input_tokens": rng.randint(1_000, 200_000),
                "output_tokens": rng.randint(10, 800),
                "total_tokens": 0,
                "elapsed_sec": rng.uniform(1, 40),
            }
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=100_000)
    parser.add_argument("--templates", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="the wall clock, or this process's CPU time (less disturbed by other processes)",
    )
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    results = generate(args.questions, args.templates)
    aggregate_times, render_times = [], []
    size = 0
    for _ in range(args.repeat):
        started = clock()
        with collection_paused():  # as load_run reads them back and aggregates them
            typed = read_records(results)
            aggregates = aggregate(typed)
        # The collector's pass over what was built while it was paused runs at the first
        # allocations after it (here, as in load_run): the reading's cost, not the render's.
        run = SavedRun("bench", Path("results.jsonl"), typed, aggregates, EvaluationConfig())
        aggregated = clock()
        page = render_report(run)
        rendered = clock()
        aggregate_times.append(aggregated - started)
        render_times.append(rendered - aggregated)
        size = len(page.encode("utf-8"))
    print(f"python {platform.python_version()}, {platform.machine()}")
    print(f"{args.clock} time, median (min) of {args.repeat}")
    print(f"{'questions':>10} {'templates':>9} {'aggregate s':>14} {'render s':>12} {'page MB':>8}")
    print(
        f"{args.questions:>10,} {args.templates:>9,} "
        f"{statistics.median(aggregate_times):>6.2f} ({min(aggregate_times):.2f}) "
        f"{statistics.median(render_times):>6.2f} ({min(render_times):.2f}) {size / 1e6:>8.2f}"
    )


if __name__ == "__main__":
    main()
