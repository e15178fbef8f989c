"""Run comparison benchmark: ``compare_results`` on two generated runs of N questions.

Two runs' per-question results are generated (default 100,000 questions over 50 templates)
with up to twelve numeric metrics (default 8): scores in [0, 1] (``steps_score``,
``answer_f1``, ``answer_relevance``...), a step metric (``retrieval_context_f1`` on the
``actual_steps`` of every other template, so it is scored on other questions than the rest)
and lower-is-better usage (tokens, seconds, cost). Run B moves some metrics by a small
amount and leaves others as noise; about 2 % of the questions are errors in each run
(independently, so some statuses change), and 0.1 % of each run's questions are missing
from the other.

Generation is not timed. Timed: ``compare_results`` with its defaults (``auto_resamples``
of the number of pairs, 95 %, top 10), overall and per template, which includes reading the
values out of the results (``item_values``). Memory: the process max RSS
(``resource.getrusage``) before and after the timed runs, and the tracemalloc peak of a
separate comparison (tracemalloc slows it down, so its time is not reported as the time).

Run from the repository root::

    .venv/bin/python benchmarks/bench_compare.py [--questions 100000] [--metrics 8]
        [--templates 50] [--repeat 3] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import random
import resource
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from graphrag_eval.comparison.compare import Comparison, compare_results

ERROR_SHARE = 0.02
ONLY_IN_ONE_SHARE = 0.001
STEP_METRIC = "retrieval_context_f1"


def unit(value: float) -> float:
    return min(1.0, max(0.0, value))


# name -> (value in run A, value in run B given A): B's shift is the "true" change
Generator = Callable[[random.Random], float]
Shift = Callable[[random.Random, float], float]
METRICS: dict[str, tuple[Generator, Shift]] = {
    "steps_score": (
        lambda r: r.choice((0.0, 0.5, 1.0, 1.0)),
        lambda r, a: a if r.random() < 0.9 else r.choice((0.0, 0.5, 1.0)),
    ),
    "answer_f1": (lambda r: r.random(), lambda r, a: unit(a + r.gauss(0.02, 0.1))),
    STEP_METRIC: (lambda r: r.random(), lambda r, a: unit(a + r.gauss(0.0, 0.1))),
    "input_tokens": (
        lambda r: float(r.randrange(1000, 300_000)),
        lambda r, a: round(a * r.uniform(0.85, 1.05)),
    ),
    "elapsed_sec": (lambda r: r.uniform(1, 60), lambda r, a: a * r.uniform(0.9, 1.1)),
    "answer_relevance": (lambda r: r.random(), lambda r, a: unit(a + r.gauss(-0.01, 0.05))),
    "output_tokens": (
        lambda r: float(r.randrange(20, 2000)),
        lambda r, a: round(a * r.uniform(0.9, 1.1)),
    ),
    "answer_correctness_cost": (
        lambda r: r.uniform(0.001, 0.01),
        lambda r, a: a * r.uniform(0.95, 1.05),
    ),
    "answer_recall": (lambda r: r.random(), lambda r, a: unit(a + r.gauss(0.01, 0.1))),
    "answer_precision": (lambda r: r.random(), lambda r, a: unit(a + r.gauss(0.0, 0.1))),
    "factual_accuracy_percentage": (
        lambda r: r.uniform(0, 100),
        lambda r, a: min(100.0, max(0.0, a + r.gauss(1, 10))),
    ),
    "total_tokens": (
        lambda r: float(r.randrange(1000, 300_000)),
        lambda r, a: round(a * r.uniform(0.9, 1.1)),
    ),
}


def generate(
    questions: int, metric_names: Sequence[str], templates: int, seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(seed)
    run_a: list[dict[str, Any]] = []
    run_b: list[dict[str, Any]] = []
    for q in range(questions):
        t = q % templates
        base = {"template_id": f"template_{t:02d}", "question_id": f"q{q:07d}"}
        values_a: dict[str, Any] = {}
        values_b: dict[str, Any] = {}
        for name in metric_names:
            if name == STEP_METRIC and t % 2:
                continue  # retrieval on every other template only
            first, shift = METRICS[name]
            values_a[name] = first(rng)
            values_b[name] = shift(rng, values_a[name])
        for run, values in ((run_a, values_a), (run_b, values_b)):
            roll = rng.random()
            if roll < ONLY_IN_ONE_SHARE:
                continue  # this question is missing from this run
            if roll < ONLY_IN_ONE_SHARE + ERROR_SHARE:
                run.append({**base, "status": "error", "error": "Error: the agent timed out"})
                continue
            result: dict[str, Any] = {**base, "status": "success"}
            for name, value in values.items():
                if name == STEP_METRIC:
                    result["actual_steps"] = [
                        {"name": "retrieval", STEP_METRIC: value},
                        {"name": "sparql_query"},
                    ]
                else:
                    result[name] = value
            run.append(result)
    return run_a, run_b


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def timed(run_a: list[dict[str, Any]], run_b: list[dict[str, Any]]) -> tuple[Comparison, float]:
    gc.collect()
    start = time.perf_counter()
    comparison = compare_results(run_a, run_b, run_a="A", run_b="B")
    return comparison, time.perf_counter() - start


def traced(run_a: list[dict[str, Any]], run_b: list[dict[str, Any]]) -> float:
    gc.collect()
    tracemalloc.start()
    compare_results(run_a, run_b)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=100_000, help="questions per run")
    parser.add_argument(
        "--metrics", type=int, default=8, help=f"numeric metrics (1 to {len(METRICS)})"
    )
    parser.add_argument("--templates", type=int, default=50, help="number of templates")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs (min and median)")
    parser.add_argument("--seed", type=int, default=7, help="random seed of the generator")
    parser.add_argument(
        "--no-tracemalloc", action="store_true", help="skip the tracemalloc peak-memory run"
    )
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="PATH",
        help="write the results as JSON to PATH (or to stdout, instead of the table)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.metrics <= len(METRICS):
        parser.error(f"--metrics must be between 1 and {len(METRICS)}")
    if args.questions < 1 or args.templates < 1 or args.repeat < 1:
        parser.error("--questions, --templates and --repeat must be at least 1")
    metric_names = list(METRICS)[: args.metrics]

    start = time.perf_counter()
    run_a, run_b = generate(args.questions, metric_names, args.templates, args.seed)
    generation_s = time.perf_counter() - start
    rss_before = max_rss_mib()
    seconds = []
    comparison = None
    for _ in range(args.repeat):
        comparison = None  # drop the previous comparison before the next one
        comparison, elapsed = timed(run_a, run_b)
        seconds.append(elapsed)
    assert comparison is not None
    rss_after = max_rss_mib()
    peak_mib = None if args.no_tracemalloc else traced(run_a, run_b)

    rows = sum(len(changes) for changes in comparison.per_template.values())
    report = {
        "benchmark": "compare",
        "python": platform.python_version(),
        "questions": args.questions,
        "metrics": metric_names,
        "templates": len(comparison.per_template),
        "seed": args.seed,
        "repeat": args.repeat,
        "results_a": len(run_a),
        "results_b": len(run_b),
        "paired": comparison.paired,
        "resamples": comparison.resamples,
        "intervals": len(comparison.overall) + rows,
        "generation_s": generation_s,
        "compare_s": {
            "min": min(seconds),
            "median": statistics.median(seconds),
            "max": max(seconds),
        },
        "max_rss_mib": {"after_generation": rss_before, "after_timed_runs": rss_after},
        "tracemalloc_peak_mib": peak_mib,
        "overall": {
            name: {
                "pairs": change.pairs,
                "difference": change.difference,
                "ci_low": change.ci_low,
                "ci_high": change.ci_high,
                "change": change.verdict,
            }
            for name, change in comparison.overall.items()
        },
        "status_changes": {k: len(v) for k, v in comparison.status_changes.items()},
    }
    if args.json == "-":
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(render(report))
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


def render(report: dict[str, Any]) -> str:
    times = report["compare_s"]
    peak = report["tracemalloc_peak_mib"]
    lines = [
        ("questions / templates", f"{report['questions']:,} / {report['templates']}"),
        (
            "results A / B, paired",
            f"{report['results_a']:,} / {report['results_b']:,}, {report['paired']:,}",
        ),
        ("metrics", f"{len(report['metrics'])}: {', '.join(report['metrics'])}"),
        ("resamples (auto)", f"{report['resamples']:,}"),
        ("intervals (overall + per template)", f"{report['intervals']:,}"),
        ("generation (not counted)", f"{report['generation_s']:.2f} s"),
        (
            f"compare_results, {report['repeat']} runs",
            f"median {times['median']:.2f} s (min {times['min']:.2f}, max {times['max']:.2f})",
        ),
        (
            "max RSS",
            f"{report['max_rss_mib']['after_generation']:.0f} MiB after generation, "
            f"{report['max_rss_mib']['after_timed_runs']:.0f} MiB after the comparisons",
        ),
        ("tracemalloc peak", "-" if peak is None else f"{peak:.0f} MiB"),
        (
            "status changes",
            ", ".join(f"{k} {v:,}" for k, v in report["status_changes"].items()) or "none",
        ),
    ]
    width = max(len(label) for label, _ in lines)
    text = "\n".join(f"{label.ljust(width)}  {value}" for label, value in lines)
    text += "\n\n| metric | pairs | B - A | 95 % interval | change |\n|---|---:|---:|---|---|"
    for name, change in report["overall"].items():
        difference = change["difference"]
        interval = (
            "-"
            if change["ci_low"] is None
            else f"[{change['ci_low']:+.4g}, {change['ci_high']:+.4g}]"
        )
        text += (
            f"\n| {name} | {change['pairs']:,} | "
            f"{'-' if difference is None else f'{difference:+.4g}'} | {interval} | "
            f"{change['change']} |"
        )
    return text


if __name__ == "__main__":
    raise SystemExit(main())
