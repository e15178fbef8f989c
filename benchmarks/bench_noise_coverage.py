"""Coverage of compare's intervals on synthetic pairs of runs whose true difference is known.

Each simulated pair of runs has N questions judged K times each (``answer_relevance`` and its
``answer_relevance_repeats``, as ``llm.repeats`` writes them). A question's score in run A is
``0.5 + q_i + e``, in run B ``0.5 + delta + q_i + u_i + e``: ``q_i`` the question's own level,
``u_i`` (standard deviation ``sigma_b``) how much the change helps or hurts that question, ``e``
(standard deviation ``sigma_w``) the judge's noise on each repeat. The true difference is
``delta`` (the mean over all questions and all judgements). Each pair is compared by
``compare_results`` (its default 10,000 resamples, 95 %, the pair's index as seed) and three
intervals of B - A are checked for covering ``delta``:

- ``one-level``: the questions resampled, each question's mean taken as exact (what compare
  gives without repeats; ``noise.one_level_ci_*``);
- ``two-level``: compare's interval with repeats (``ci_low``, ``ci_high``);
- ``naive two-level``: questions then repeats resampled as they are (computed here, not in
  compare), which counts the judge's noise twice.

With ``--timing``, ``compare_results`` is also timed on one pair of 1,000 questions with and
without repeats.

Run from the repository root::

    .venv/bin/python benchmarks/bench_noise_coverage.py [--pairs 200] [--timing] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from graphrag_eval.comparison.compare import compare_results

KEY = "answer_relevance"
DELTA = 0.05


@dataclass(frozen=True)
class Scenario:
    name: str
    questions: int
    repeats: int
    sigma_b: float
    sigma_w: float


SCENARIOS = (
    Scenario("judge noise only", 30, 3, 0.0, 0.3),
    Scenario("judge noise dominates", 30, 3, 0.1, 0.3),
    Scenario("questions dominate", 30, 3, 0.3, 0.05),
    Scenario("judge noise dominates, more questions", 200, 3, 0.1, 0.3),
    Scenario("judge noise dominates, 2 repeats", 30, 2, 0.1, 0.3),
)


def simulate(scenario: Scenario, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Questions x repeats scores of runs A and B."""
    n, k = scenario.questions, scenario.repeats
    level = rng.normal(0.0, 0.15, n)
    effect = rng.normal(DELTA, scenario.sigma_b, n) if scenario.sigma_b else np.full(n, DELTA)
    a = 0.5 + level[:, None] + rng.normal(0.0, scenario.sigma_w, (n, k))
    b = 0.5 + (level + effect)[:, None] + rng.normal(0.0, scenario.sigma_w, (n, k))
    # The true difference is DELTA over all questions: the effects are centred on it.
    return a, b


def records(scores: np.ndarray) -> list[dict[str, Any]]:
    return [
        {
            "template_id": "t",
            "question_id": f"q{i}",
            "status": "success",
            KEY: float(row.mean()),
            f"{KEY}_repeats": [float(value) for value in row],
            f"{KEY}_repeats_std": float(row.std()),
        }
        for i, row in enumerate(scores)
    ]


def naive_interval(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    """Questions, then each drawn question's repeats, resampled as they are."""
    n, k = a.shape
    drawn = rng.integers(0, n, (10_000, n))
    means = np.take_along_axis(b[drawn], rng.integers(0, k, (10_000, n, k)), axis=2).mean(
        axis=2
    ) - np.take_along_axis(a[drawn], rng.integers(0, k, (10_000, n, k)), axis=2).mean(axis=2)
    low, high = np.percentile(means.mean(axis=1), [2.5, 97.5])
    return float(low), float(high)


def wilson(hits: int, total: int) -> tuple[float, float]:
    """The 95 % Wilson interval of a proportion."""
    z = 1.959964
    p = hits / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return centre - half, centre + half


def run_scenario(scenario: Scenario, pairs: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng([seed, scenario.questions, scenario.repeats])
    covered = {"one-level": 0, "two-level": 0, "naive two-level": 0}
    widths: dict[str, list[float]] = {name: [] for name in covered}
    shares = []
    for pair in range(pairs):
        a, b = simulate(scenario, rng)
        change = compare_results(records(a), records(b), seed=pair).overall[KEY]
        noise = change.noise
        assert noise is not None and change.ci_low is not None and change.ci_high is not None
        shares.append(noise.judge_share)
        intervals = {
            "one-level": (noise.one_level_ci_low, noise.one_level_ci_high),
            "two-level": (change.ci_low, change.ci_high),
            "naive two-level": naive_interval(a, b, rng),
        }
        for name, (low, high) in intervals.items():
            covered[name] += low <= DELTA <= high
            widths[name].append(high - low)
    return {
        "scenario": scenario.name,
        "questions": scenario.questions,
        "repeats": scenario.repeats,
        "sigma_b": scenario.sigma_b,
        "sigma_w": scenario.sigma_w,
        "pairs": pairs,
        "judge_share": float(np.mean(shares)),
        "intervals": {
            name: {
                "covered": covered[name],
                "coverage": covered[name] / pairs,
                "coverage_95": wilson(covered[name], pairs),
                "mean_width": float(np.mean(widths[name])),
            }
            for name in covered
        },
    }


def timing(repeat: int = 3) -> dict[str, float]:
    """Median seconds of compare_results on 1,000 questions, with and without 3 repeats."""
    rng = np.random.default_rng(7)
    a, b = simulate(Scenario("timing", 1_000, 3, 0.1, 0.3), rng)
    with_repeats = (records(a), records(b))
    without = tuple(
        [{key: value for key, value in row.items() if "_repeats" not in key} for row in run]
        for run in with_repeats
    )
    found = {}
    for name, runs in (("without repeats", without), ("with 3 repeats", with_repeats)):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            compare_results(*runs)
            times.append(time.perf_counter() - start)
        found[name] = sorted(times)[len(times) // 2]
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--timing", action="store_true")
    parser.add_argument("--json", nargs="?", const="-", default=None)
    args = parser.parse_args(argv)
    results = []
    for scenario in SCENARIOS:
        started = time.perf_counter()
        found = run_scenario(scenario, args.pairs, args.seed)
        found["seconds"] = time.perf_counter() - started
        results.append(found)
        print(
            f"{scenario.name} (n={scenario.questions}, k={scenario.repeats}, "
            f"sigma_b={scenario.sigma_b}, sigma_w={scenario.sigma_w}; judge share "
            f"{found['judge_share']:.0%}):",
            file=sys.stderr,
        )
        for name, figures in found["intervals"].items():
            low, high = figures["coverage_95"]
            print(
                f"  {name:16} covers {figures['covered']:4}/{args.pairs} = "
                f"{figures['coverage']:.1%} [{low:.1%}, {high:.1%}], mean width "
                f"{figures['mean_width']:.4f}",
                file=sys.stderr,
            )
    report: dict[str, Any] = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scenarios": results,
    }
    if args.timing:
        report["timing_seconds"] = timing()
        print(f"compare_results, 1,000 questions: {report['timing_seconds']}", file=sys.stderr)
    if args.json == "-":
        print(json.dumps(report, indent=2))
    elif args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
