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
* ``mixed-faults``: ``--fault-questions`` (500) questions (answer correctness and relevance:
  3 calls each) at ``--fault-latency`` (0.1 s) against a server that answers 10 % of requests
  with a 429 (``retry-after-ms`` 20), 5 % with a 500, 5 % with a malformed reply and lets 2 %
  hang (30 s), with ``llm.max_concurrency`` ``--fault-concurrency`` (16) and the default
  timeouts, retries and backoff. Target: the wall time within 3 x the ideal
  (``calls x latency / concurrency``), and >= 98 % of the metric values computed.
* ``random-429``: the same with 429s alone (10 %, at random whatever the load): the wall
  time against the same ideal (target 1.5 x).
* ``cpu``: ``--cpu-questions`` (2,000) questions at ``--cpu-latency`` (0.05 s) and
  ``max_concurrency`` ``--cpu-concurrency`` (64), a fresh cache: the wall time against the
  ideal ``calls x latency / concurrency`` (target <= 1.5) and the command's CPU time (user +
  system, from the operating system's accounting of the finished process) per request
  (target < 1 ms). The judge and embedding calls are separate lanes of ``max_concurrency``
  slots each, so the ideal is not a hard lower bound.

Prints a table; exits 1 when a target is missed. Run from the repository root::

    .venv/bin/python benchmarks/bench_judge_load.py [--scenario all|rate-limit|cpu]
        [--questions 1500] [--latency 0.1] [--cap 8] [--concurrency 32]
        [--cpu-questions 2000] [--cpu-latency 0.05] [--cpu-concurrency 64]
        [--fault-questions 500] [--fault-latency 0.1] [--fault-concurrency 16] [--json [PATH]]

A short rate-capped run (the cap's 429s while the limit is still finding it) is
``--scenario rate-limit --questions 400``.
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
    METRICS,
    JudgeProcess,
    Run,
    Scenario,
    Workspace,
    emit,
    evaluate,
    generate,
    ran,
    read_results,
    write_config,
)

RATE_LIMIT_SHARE_TARGET = 0.05
RATE_LIMIT_RATIO_TARGET = 1.3
CPU_RATIO_TARGET = 1.5
CPU_PER_REQUEST_TARGET_S = 0.001
BACKLOG = 512
FAULT_RATIO_TARGETS = {"mixed-faults": 3.0, "random-429": 1.5}
FAULT_COMPUTED_TARGET = 0.98
FAULT_MIXES: dict[str, dict[str, float]] = {
    "mixed-faults": {"rate_limit": 0.10, "server_error": 0.05, "malformed": 0.05, "hang": 0.02},
    "random-429": {"rate_limit": 0.10},
}


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


def judge_faults(workspace: Workspace, args: argparse.Namespace, name: str) -> Scenario:
    """A run against a server that fails a share of requests each way (``FAULT_MIXES``),
    with the default timeouts, retries and backoff."""
    scenario = Scenario(name)
    directory = workspace.directory
    mix = FAULT_MIXES[name]
    server = JudgeProcess(directory / f"{name}.log", args.fault_latency, BACKLOG, mix)
    try:
        config = write_config(
            directory / f"{name}.yaml",
            server.url,
            directory / f"{name}.sqlite3",
            args.fault_concurrency,
        )
        run = evaluate(workspace, config, directory / f"out-{name}")
        stats = server.stats()
    finally:
        server.stop()
    if not ran(scenario, run, "evaluate"):
        return scenario
    results = read_results(directory / f"out-{name}")
    slots = len(results) * len(METRICS)
    computed = sum(1 for result in results for key, _ in METRICS if key in result)
    calls = int(run.llm.get("calls", 0))
    ideal = calls * args.fault_latency / args.fault_concurrency
    scenario.figures = {
        "calls": calls,
        "requests": run.llm.get("requests"),
        "retries": run.llm.get("retries"),
        "failed_calls": run.llm.get("failed_calls"),
        "server_outcomes": stats["outcomes"],
        "computed": computed,
        "metric_values": slots,
        "wall_s": run.wall_s,
        "ideal_s": ideal,
        "ratio": run.wall_s / ideal if ideal else 0.0,
    }
    target = FAULT_RATIO_TARGETS[name]
    scenario.check(
        f"wall / ideal <= {target:g}",
        run.wall_s <= target * ideal,
        f"{run.wall_s:.2f} s / {ideal:.2f} s = {scenario.figures['ratio']:.2f}",
    )
    scenario.check(
        f">= {FAULT_COMPUTED_TARGET:.0%} of the metric values computed",
        slots > 0 and computed >= FAULT_COMPUTED_TARGET * slots,
        f"{computed}/{slots}",
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
        elif scenario.name in FAULT_MIXES and f:
            lines.append(
                f"{scenario.name}: {args.fault_questions} questions, latency "
                f"{args.fault_latency:g} s, max_concurrency {args.fault_concurrency}, faults "
                f"{FAULT_MIXES[scenario.name]}: {f['calls']} calls, {f['requests']} requests, "
                f"{f['retries']} retries, {f['failed_calls']} failed; server "
                f"{dict(f['server_outcomes'])}; {f['computed']}/{f['metric_values']} values; "
                f"{f['wall_s']:.2f} s, ideal {f['ideal_s']:.2f} s, ratio {f['ratio']:.2f}"
            )
        for check in scenario.checks:
            lines.append(f"  {'ok  ' if check.ok else 'MISS'} {check.name}: {check.detail}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scenario",
        choices=("all", "rate-limit", "mixed-faults", "random-429", "cpu"),
        default="all",
    )
    parser.add_argument("--questions", type=int, default=1500)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--cap", type=int, default=8, help="the server's requests in flight")
    parser.add_argument("--concurrency", type=int, default=32, help="llm.max_concurrency")
    parser.add_argument("--cpu-questions", type=int, default=2000)
    parser.add_argument("--cpu-latency", type=float, default=0.05)
    parser.add_argument("--cpu-concurrency", type=int, default=64)
    parser.add_argument("--fault-questions", type=int, default=500)
    parser.add_argument("--fault-latency", type=float, default=0.1)
    parser.add_argument("--fault-concurrency", type=int, default=16)
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
        for name in FAULT_MIXES:
            if args.scenario in ("all", name):
                (directory / name).mkdir()
                workspace = generate(directory / name, args.fault_questions, args.seed)
                scenarios.append(judge_faults(workspace, args, name))
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
