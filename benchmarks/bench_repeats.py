"""Judge repeats (``llm.repeats``, ``--repeats``): what N repeats cost, and the client's CPU per
judged request with them.

Everything goes through the real command line (``graphrag-eval evaluate`` as a subprocess)
against ``tests/judge_server.py`` in another process, with ``repeat_noise`` (so the repeats
differ, as a judge at a temperature above 0 does) and a fixed latency, on the synthetic
questions of ``bench_llm.py`` (each text distinct). The run scores answer correctness and
factual accuracy (one judge call each per question and repeat), semantic similarity (one
embeddings request per question, embeddings only: computed once) and the deterministic
bookkeeping metrics.

Three runs, each with its own out dir:

* ``N=1``: a fresh cache, ``--repeats 1``;
* ``N=3``: another fresh cache, ``--repeats 3``;
* ``N=3 again``: the same command as ``N=3`` with its cache: every repeat from the cache.

Targets (exit 1 when one is missed): the ``N=3`` run sends exactly 3 x the judge requests of
``N=1`` and the same embeddings requests (the server's counts by path); the re-run sends
none; every question of ``N=3`` has its three repeats; and the command's CPU time (user +
system, from the operating system's accounting of the finished process) per judged request
stays under 1 ms, both as the whole ``N=3`` run's CPU over its requests and as the CPU the
two added repeats cost over the requests they added (``(CPU(N=3) - CPU(N=1)) / (requests(N=3)
- requests(N=1))``: the repeats' scoring, combining and writing included).

Run from the repository root::

    .venv/bin/python benchmarks/bench_repeats.py [--questions 1000] [--latency 0.05]
        [--concurrency 64] [--noise 10] [--keep] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The sibling script, on the path just above.
from bench_llm import TESTS, Workspace, cli_env, generate, read_results, read_run_yaml

CPU_PER_REQUEST_TARGET_S = 0.001
METRICS = ["answer_correctness", "factual_accuracy", "semantic_similarity"]
JUDGED_KEYS = ("answer_f1", "factual_accuracy_percentage")

# The judge server in its own process, with repeat_noise; "stats" on stdin prints the
# requests received so far by path as one JSON line; end of input stops it.
SERVER = """
import json, sys
from collections import Counter
sys.path.insert(0, sys.argv[1])
import judge_server
from judge_server import JudgeServer
options = json.loads(sys.argv[2])
judge_server._Server.request_queue_size = 512
server = JudgeServer(latency_s=options["latency"], repeat_noise=options["noise"]).start()
print(json.dumps({"url": server.url}), flush=True)
for line in sys.stdin:
    if line.strip() == "stats":
        paths = Counter(r.path.rsplit("/", 1)[-1] for r in server.requests)
        print(json.dumps(paths), flush=True)
server.stop()
"""


class Server:
    """``tests/judge_server.py`` with ``repeat_noise`` in a child process, on a free port."""

    def __init__(self, latency: float, noise: int) -> None:
        options = json.dumps({"latency": latency, "noise": noise})
        self.process = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(TESTS), options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.url: str = self._read()["url"]

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the judge server exited ({self.process.wait()})")
        read: dict[str, Any] = json.loads(line)
        return read

    def counts(self) -> dict[str, int]:
        """Requests so far: ``completions`` (judge) and ``embeddings``."""
        assert self.process.stdin is not None
        self.process.stdin.write("stats\n")
        self.process.stdin.flush()
        return {key: int(value) for key, value in self._read().items()}

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


@dataclass
class Measured:
    name: str
    wall_s: float
    cpu_s: float
    returncode: int
    judge_requests: int
    embedding_requests: int
    run_yaml: dict[str, Any] = field(default_factory=dict)


def measured(
    name: str, workspace: Workspace, config: Path, out: Path, server: Server, repeats: int
) -> Measured:
    """One run of the command to its end: its wall and CPU time and the requests it sent."""
    before_counts = server.counts()
    command = workspace.evaluate_args(config, out, "--repeats", str(repeats), "--no-report")
    usage_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=cli_env(), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    usage_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (usage_after.ru_utime - usage_before.ru_utime) + (
        usage_after.ru_stime - usage_before.ru_stime
    )
    after_counts = server.counts()
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
    return Measured(
        name,
        wall,
        cpu,
        done.returncode,
        after_counts.get("completions", 0) - before_counts.get("completions", 0),
        after_counts.get("embeddings", 0) - before_counts.get("embeddings", 0),
        read_run_yaml(out),
    )


def write_config(path: Path, url: str, cache: Path, concurrency: int) -> Path:
    endpoint = {"provider": "openai-compatible", "base_url": url}
    config = {
        "metrics": METRICS,
        "llm": {
            "generation": {**endpoint, "model": "gpt-4o-mini", "temperature": 0.7},
            "embedding": {**endpoint, "model": "text-embedding-3-small"},
            "max_concurrency": concurrency,
            "cache": {"path": str(cache)},
        },
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--noise", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--json", nargs="?", const="-", default=None)
    args = parser.parse_args(argv)
    directory = Path(tempfile.mkdtemp(prefix="bench-repeats-"))
    try:
        return _bench(directory, args)
    finally:
        if args.keep:
            print(f"work directory: {directory}", file=sys.stderr)
        else:
            shutil.rmtree(directory, ignore_errors=True)


def _bench(directory: Path, args: argparse.Namespace) -> int:
    workspace = generate(directory, args.questions, args.seed)
    server = Server(args.latency, args.noise)
    try:
        once_config = write_config(
            directory / "once.yaml", server.url, directory / "once.sqlite3", args.concurrency
        )
        thrice_config = write_config(
            directory / "thrice.yaml", server.url, directory / "thrice.sqlite3", args.concurrency
        )
        once = measured("N=1", workspace, once_config, directory / "out-1", server, 1)
        thrice = measured("N=3", workspace, thrice_config, directory / "out-3", server, 3)
        again = measured("N=3 again", workspace, thrice_config, directory / "out-3b", server, 3)
    finally:
        server.stop()
    results = read_results(directory / "out-3")
    complete = sum(
        all(len(record.get(f"{key}_repeats") or ()) == 3 for key in JUDGED_KEYS)
        for record in results
    )
    requests = thrice.judge_requests + thrice.embedding_requests
    added = requests - (once.judge_requests + once.embedding_requests)
    per_request = thrice.cpu_s / requests if requests else float("inf")
    per_added = (thrice.cpu_s - once.cpu_s) / added if added else float("inf")
    checks = {
        "every run exits 0": all(m.returncode == 0 for m in (once, thrice, again)),
        "N=3 sends 3x the judge requests": thrice.judge_requests == 3 * once.judge_requests,
        "N=3 sends the same embeddings requests": (
            thrice.embedding_requests == once.embedding_requests
        ),
        "the re-run sends nothing": again.judge_requests + again.embedding_requests == 0,
        "every question has its 3 repeats": complete == args.questions,
        "CPU per request (N=3) < 1 ms": per_request < CPU_PER_REQUEST_TARGET_S,
        "CPU per added request < 1 ms": per_added < CPU_PER_REQUEST_TARGET_S,
    }
    report = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "questions": args.questions,
        "latency_s": args.latency,
        "concurrency": args.concurrency,
        "runs": [
            {k: v for k, v in asdict(m).items() if k != "run_yaml"} for m in (once, thrice, again)
        ],
        "cpu_per_request_ms": per_request * 1000,
        "cpu_per_added_request_ms": per_added * 1000,
        "questions_with_3_repeats": complete,
        "checks": checks,
    }
    if args.json == "-":
        print(json.dumps(report, indent=2))
    else:
        print(_table(once, thrice, again, per_request, per_added, checks, args))
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0 if all(checks.values()) else 1


def _table(
    once: Measured,
    thrice: Measured,
    again: Measured,
    per_request: float,
    per_added: float,
    checks: dict[str, bool],
    args: argparse.Namespace,
) -> str:
    lines = [
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs; {args.questions} questions, "
        f"latency {args.latency} s, max_concurrency {args.concurrency}",
        "",
        "| run | judge requests | embeddings requests | wall | CPU |",
        "|---|---:|---:|---:|---:|",
    ]
    for m in (once, thrice, again):
        lines.append(
            f"| {m.name} | {m.judge_requests:,} | {m.embedding_requests:,} | "
            f"{m.wall_s:.2f} s | {m.cpu_s:.2f} s |"
        )
    lines += [
        "",
        f"CPU per request, N=3: {per_request * 1000:.3f} ms; "
        f"per request the repeats added: {per_added * 1000:.3f} ms",
        "",
        *(f"{'ok  ' if ok else 'MISS'} {name}" for name, ok in checks.items()),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
