"""The judge client under load: a rate-limited endpoint, and the client's CPU per request.

Like ``bench_llm.py`` (whose server process, data and command it uses), everything goes
through the real command line (``graphrag-eval evaluate`` as a subprocess) against
``tests/judge_server.py`` in another process.

Scenarios (``--scenario``, default ``all``):

* ``rate-limit``: a server that answers 429 (``retry-after-ms`` 20) to any request arriving
  while ``--cap`` (8) are being answered, at ``--latency`` (0.1 s); the run has
  ``llm.max_concurrency`` ``--concurrency`` (32) and answer correctness only (1 judge call per
  item, one lane: judge and embedding calls would be two lanes sharing the server's cap).
  Targets: 429s under 5 % of the requests the server got, and the wall time within 1.3 x the
  ideal at the cap (``calls x latency / cap``). The same run at ``max_concurrency`` = cap (no
  429 possible) is shown beside it.
* ``cpu``: ``--cpu-questions`` (2,000) questions at ``--cpu-latency`` (0.05 s) and
  ``max_concurrency`` ``--cpu-concurrency`` (64), a fresh cache: the wall time against the
  ideal ``calls x latency / concurrency`` (target <= 1.5) and the command's CPU time (user +
  system, from the operating system's accounting of the finished process) per request
  (target < 1 ms). The judge and embedding calls are separate lanes of ``max_concurrency``
  slots each, so the ideal is not a hard lower bound.

Prints a table; exits 1 when a target is missed. Run from the repository root::

    .venv/bin/python benchmarks/bench_judge_load.py [--scenario all|rate-limit|cpu]
        [--questions 1500] [--latency 0.1] [--cap 8] [--concurrency 32]
        [--cpu-questions 2000] [--cpu-latency 0.05] [--cpu-concurrency 64] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The sibling script, on the path just above.
from bench_llm import (
    JudgeProcess,
    Run,
    Scenario,
    Workspace,
    emit,
    evaluate,
    generate,
    ran,
    write_config,
)

RATE_LIMIT_SHARE_TARGET = 0.05
RATE_LIMIT_RATIO_TARGET = 1.3
CPU_RATIO_TARGET = 1.5
CPU_PER_REQUEST_TARGET_S = 0.001
BACKLOG = 512


def timed_run(workspace: Workspace, config: Path, out: Path) -> tuple[Run, float]:
    """The command run to its end, and the CPU seconds (user + system) it used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = evaluate(workspace, config, out)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return run, cpu


def capped_run(
    workspace: Workspace, args: argparse.Namespace, concurrency: int, name: str
) -> tuple[Run, dict[str, Any]]:
    """A run at ``concurrency`` against a server capped at ``args.cap`` requests in flight:
    the run and the server's counts."""
    directory = workspace.directory
    faults = {"max_in_flight": args.cap, "retry_after_ms": 20}
    server = JudgeProcess(directory / f"{name}.log", args.latency, BACKLOG, faults)  # type: ignore[arg-type]
    try:
        config = write_config(
            directory / f"{name}.yaml", server.url, directory / f"{name}.sqlite3", concurrency
        )
        settings = yaml.safe_load(config.read_text(encoding="utf-8"))
        settings["answer_relevance"] = {"enabled": False}
        config.write_text(yaml.safe_dump(settings), encoding="utf-8")
        run = evaluate(workspace, config, directory / f"out-{name}")
        return run, server.stats()
    finally:
        server.stop()


def rate_limit(workspace: Workspace, args: argparse.Namespace) -> Scenario:
    scenario = Scenario("rate-limit")
    run, stats = capped_run(workspace, args, args.concurrency, "capped")
    if not ran(scenario, run, "evaluate"):
        return scenario
    at_cap, _ = capped_run(workspace, args, args.cap, "at-cap")
    calls = int(run.llm.get("calls", 0))
    rejected = int(stats["outcomes"].get("over_capacity", 0))
    share = rejected / stats["requests"] if stats["requests"] else 0.0
    ideal = calls * args.latency / args.cap
    scenario.figures = {
        "calls": calls,
        "server_requests": stats["requests"],
        "rate_limited": rejected,
        "rate_limited_share": share,
        "failed_calls": run.llm.get("failed_calls"),
        "wall_s": run.wall_s,
        "ideal_s": ideal,
        "ratio": run.wall_s / ideal,
        "at_cap_wall_s": at_cap.wall_s,
        "at_cap_ratio": at_cap.wall_s / ideal,
    }
    scenario.check(
        f"429s < {RATE_LIMIT_SHARE_TARGET:.0%} of requests",
        share < RATE_LIMIT_SHARE_TARGET,
        f"{rejected} of {stats['requests']} = {share:.1%}",
    )
    scenario.check(
        f"wall / ideal at the cap <= {RATE_LIMIT_RATIO_TARGET}",
        run.wall_s / ideal <= RATE_LIMIT_RATIO_TARGET,
        f"{run.wall_s:.2f} s / {ideal:.2f} s = {run.wall_s / ideal:.2f}",
    )
    return scenario


def cpu(workspace: Workspace, args: argparse.Namespace) -> Scenario:
    scenario = Scenario("cpu")
    directory = workspace.directory
    server = JudgeProcess(directory / "cpu.log", args.cpu_latency, BACKLOG)
    try:
        config = write_config(
            directory / "cpu.yaml", server.url, directory / "cpu.sqlite3", args.cpu_concurrency
        )
        run, cpu_s = timed_run(workspace, config, directory / "out-cpu")
    finally:
        server.stop()
    if not ran(scenario, run, "evaluate"):
        return scenario
    requests = int(run.llm.get("requests", 0))
    ideal = int(run.llm.get("calls", 0)) * args.cpu_latency / args.cpu_concurrency
    per_request = cpu_s / requests if requests else 0.0
    scenario.figures = {
        "calls": run.llm.get("calls"),
        "requests": requests,
        "wall_s": run.wall_s,
        "in_command_s": run.run_yaml.get("elapsed_sec"),
        "cpu_s": cpu_s,
        "cpu_per_request_ms": per_request * 1000,
        "ideal_s": ideal,
        "ratio": run.wall_s / ideal,
    }
    scenario.check(
        f"wall / ideal <= {CPU_RATIO_TARGET}",
        run.wall_s / ideal <= CPU_RATIO_TARGET,
        f"{run.wall_s:.2f} s / {ideal:.2f} s = {run.wall_s / ideal:.2f}",
    )
    scenario.check(
        f"CPU per request < {CPU_PER_REQUEST_TARGET_S * 1000:g} ms",
        per_request < CPU_PER_REQUEST_TARGET_S,
        f"{cpu_s:.2f} s / {requests} requests = {per_request * 1000:.2f} ms",
    )
    return scenario


def render(scenarios: Sequence[Scenario], args: argparse.Namespace) -> str:
    lines = [f"Python {platform.python_version()}, {os.cpu_count()} CPUs; server backlog {BACKLOG}"]
    for scenario in scenarios:
        f = scenario.figures
        if scenario.name == "rate-limit" and f:
            lines.append(
                f"rate-limit: {args.questions} questions, latency {args.latency:g} s, server cap "
                f"{args.cap}, max_concurrency {args.concurrency}: {f['calls']} calls, the "
                f"server got {f['server_requests']} requests, {f['rate_limited']} of them 429 "
                f"({f['rate_limited_share']:.1%}); {f['wall_s']:.2f} s, ideal at the cap "
                f"{f['ideal_s']:.2f} s, ratio {f['ratio']:.2f} (at max_concurrency "
                f"{args.cap}: {f['at_cap_wall_s']:.2f} s, ratio {f['at_cap_ratio']:.2f})"
            )
        elif scenario.name == "cpu" and f:
            lines.append(
                f"cpu: {args.cpu_questions} questions, latency {args.cpu_latency:g} s, "
                f"max_concurrency {args.cpu_concurrency}: {f['calls']} calls ({f['requests']} "
                f"requests) in {f['wall_s']:.2f} s (in the command {f['in_command_s']} s), "
                f"ideal {f['ideal_s']:.2f} s, ratio {f['ratio']:.2f}; CPU {f['cpu_s']:.2f} s, "
                f"{f['cpu_per_request_ms']:.2f} ms per request"
            )
        for check in scenario.checks:
            lines.append(f"  {'ok  ' if check.ok else 'MISS'} {check.name}: {check.detail}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=("all", "rate-limit", "cpu"), default="all")
    parser.add_argument("--questions", type=int, default=1500)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--cap", type=int, default=8, help="the server's requests in flight")
    parser.add_argument("--concurrency", type=int, default=32, help="llm.max_concurrency")
    parser.add_argument("--cpu-questions", type=int, default=2000)
    parser.add_argument("--cpu-latency", type=float, default=0.05)
    parser.add_argument("--cpu-concurrency", type=int, default=64)
    parser.add_argument("--seed", type=int, default=7, help="random seed of the data")
    parser.add_argument("--json", nargs="?", const="-", metavar="PATH")
    args = parser.parse_args(argv)

    scenarios: list[Scenario] = []
    directory = Path(tempfile.mkdtemp(prefix="bench-judge-load-"))
    try:
        if args.scenario in ("all", "rate-limit"):
            (directory / "rate-limit").mkdir()
            workspace = generate(directory / "rate-limit", args.questions, args.seed)
            scenarios.append(rate_limit(workspace, args))
        if args.scenario in ("all", "cpu"):
            (directory / "cpu").mkdir()
            workspace = generate(directory / "cpu", args.cpu_questions, args.seed)
            scenarios.append(cpu(workspace, args))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    report = {
        "benchmark": "judge-load",
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    return emit(report, scenarios, args, render(scenarios, args))


if __name__ == "__main__":
    raise SystemExit(main())
