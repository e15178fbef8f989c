"""Paired benchmark of ``graphrag-eval evaluate`` on files: this tree against another checkout.

The ``bench_run.py`` data (N questions over 50 templates; the reference as JSON, the responses
as JSON Lines, one a line) is written to a directory once (``--data``: kept and reused when
it holds the files already), then ``graphrag-eval evaluate REFERENCE RESPONSES -c CONFIG -o
OUT -q --no-progress`` (default config but ``steps.score_mode``, report included) runs in a
fresh process for each tree in turn, ``--repeat`` pairs, the source of each tree first on
``PYTHONPATH``. Each run is measured by a small launcher of its own (``bench_run.LAUNCHER``):
wall time, CPU time (user + system) and peak RSS of the finished process, as the kernel
accounts them. The other tree may refuse a reference over 256 MiB (before issue 23's
compact limit): ``--raise-base-limit`` raises its document limit to 1 GiB in its measured
process only.

Every pair's outputs are compared byte for byte: ``results.jsonl``, ``aggregates.yaml``,
``checkpoint.json``, and ``run.yaml`` but for its ``elapsed_sec`` line; a difference is
reported and makes the exit code 1. Figures are medians, and the ratio this / base pair by
pair (min–max).

Run from the repository root, with a worktree of the base commit::

    git worktree add --detach ../base 6427fc3
    .venv/bin/python benchmarks/bench_evaluate_pair.py --base ../base --questions 10000 --repeat 5
    .venv/bin/python benchmarks/bench_evaluate_pair.py --base ../base --questions 100000 \\
        --repeat 1 --raise-base-limit --data /tmp/bench100k
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench_run import LAUNCHER, RAISED_LIMIT, generate

OUTPUTS = ("results.jsonl", "aggregates.yaml", "checkpoint.json")
HERE = Path(__file__).resolve().parent.parent


def write_data(folder: Path, questions: int, seed: int, score_mode: str) -> None:
    """The reference, responses and config files, unless ``folder`` has them already."""
    reference, responses = folder / "reference.json", folder / "responses.jsonl"
    config = folder / "config.json"
    if reference.exists() and responses.exists() and config.exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    dataset = generate(questions, seed)
    reference.write_text(json.dumps(dataset.reference), encoding="utf-8")
    with responses.open("w", encoding="utf-8") as stream:
        for item in dataset.responses.values():
            stream.write(json.dumps(item) + "\n")
    config.write_text(json.dumps({"steps": {"score_mode": score_mode}}))


def run_once(tree: Path, data: Path, out: Path, raise_limit: bool) -> dict[str, float]:
    """One ``evaluate`` in a fresh process with ``tree``'s source: wall, CPU, peak RSS."""
    command = [sys.executable, "-m", "graphrag_eval.cli", "evaluate"]
    if raise_limit:
        command[1:3] = ["-c", RAISED_LIMIT]
    command += [str(data / "reference.json"), str(data / "responses.jsonl")]
    command += ["-c", str(data / "config.json"), "-q", "--no-progress", "-o", str(out)]
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed package runs: from bytecode
    log = out.with_suffix(".stderr")
    launched = subprocess.run(
        [sys.executable, "-c", LAUNCHER, str(log), *command],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    run: dict[str, float] = json.loads(launched.stdout)
    if run.pop("exit_code") != 0:
        raise SystemExit(f"evaluate failed in {tree}: {log.read_text(errors='replace')}")
    return run


def differences(base: Path, this: Path) -> list[str]:
    """The outputs that are not byte for byte the same (``run.yaml`` but its time)."""
    found = [name for name in OUTPUTS if (base / name).read_bytes() != (this / name).read_bytes()]

    def untimed(path: Path) -> list[str]:
        lines = path.read_text(encoding="utf-8").splitlines()
        return [line for line in lines if not line.startswith("elapsed_sec:")]

    if untimed(base / "run.yaml") != untimed(this / "run.yaml"):
        found.append("run.yaml")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="checkout of the base commit")
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3, help="pairs of runs")
    parser.add_argument("--score-mode", choices=("last_group", "all_groups"), default="last_group")
    parser.add_argument("--data", type=Path, help="directory for the data files (kept)")
    parser.add_argument(
        "--raise-base-limit",
        action="store_true",
        help="raise the base tree's 256 MiB document limit to 1 GiB in its measured process",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    trees = {"base": args.base.resolve(), "this": HERE}
    with tempfile.TemporaryDirectory() as directory:
        data = args.data or Path(directory) / "data"
        write_data(data, args.questions, args.seed, args.score_mode)
        runs: dict[str, list[dict[str, float]]] = {"base": [], "this": []}
        problems: list[str] = []
        for attempt in range(args.repeat):
            outs = {name: Path(directory) / f"{name}{attempt}" for name in trees}
            order = ("base", "this") if attempt % 2 == 0 else ("this", "base")
            for name in order:
                raise_limit = name == "base" and args.raise_base_limit
                runs[name].append(run_once(trees[name], data, outs[name], raise_limit))
            problems += [f"pair {attempt}: {n} differs" for n in differences(*outs.values())]
        sizes = {
            name: (data / name).stat().st_size / 2**20
            for name in ("reference.json", "responses.jsonl")
        }
    report = summary(runs, args, sizes, problems)
    print_report(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 1 if problems else 0


def summary(
    runs: dict[str, list[dict[str, float]]],
    args: argparse.Namespace,
    sizes: dict[str, float],
    problems: list[str],
) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for key in ("cpu_s", "wall_s", "max_rss_mib"):
        ratios = [
            this[key] / base[key] for base, this in zip(runs["base"], runs["this"], strict=True)
        ]
        figures[key] = {
            "base": statistics.median(run[key] for run in runs["base"]),
            "this": statistics.median(run[key] for run in runs["this"]),
            "ratio_median": statistics.median(ratios),
            "ratio_min": min(ratios),
            "ratio_max": max(ratios),
        }
    return {
        "benchmark": "evaluate_pair",
        "python": platform.python_version(),
        "questions": args.questions,
        "repeat": args.repeat,
        "input_mib": sizes,
        "figures": figures,
        "runs": runs,
        "differences": problems,
    }


def print_report(report: dict[str, Any]) -> None:
    sizes = report["input_mib"]
    print(
        f"{report['questions']:,} questions (reference {sizes['reference.json']:.1f} MiB, "
        f"responses {sizes['responses.jsonl']:.1f} MiB), {report['repeat']} pair(s)"
    )
    for key, label in (("cpu_s", "CPU, s"), ("wall_s", "wall, s"), ("max_rss_mib", "peak, MiB")):
        f = report["figures"][key]
        print(
            f"  {label:10} base {f['base']:9.2f}  this {f['this']:9.2f}  this/base "
            f"{f['ratio_median']:.2f} ({f['ratio_min']:.2f}-{f['ratio_max']:.2f})"
        )
    print(f"  outputs differing: {len(report['differences'])}")
    for problem in report["differences"]:
        print(f"    {problem}")


if __name__ == "__main__":
    sys.exit(main())
