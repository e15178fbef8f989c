"""LLM judge engine benchmark: throughput, cache, faults, and kill-and-resume of a real run.

Everything goes through the real command line (``graphrag-eval evaluate``, run as a
subprocess) against the OpenAI-compatible test server ``tests/judge_server.py``, which runs
in another process (so it does not share the client's GIL) on a free port, with a fixed
latency per request and deterministic fault injection. A small wrapper around it reports how
many requests it received (and with which outcome), so "no calls" is checked on the server
side too, not only in ``run.yaml``.

The data is synthetic: N questions (default 200) in 10 templates, each with a distinct
question, ``reference_answer`` (1-4 comma-separated claims) and ``actual_answer`` (correct,
partial, padded or wrong), so every judge and embedding call is distinct. No reference
steps, so the LLM metrics that run are answer correctness (1 judge call per item) and answer
relevance (1 judge call + 1 embeddings call per item): 3 N calls in all.

Scenarios (``--scenario``, default ``all``):

* ``throughput``: a fresh cache, latency 0.2 s, ``llm.max_concurrency`` 16. The wall time
  of the command, from process start (interpreter and imports included, about 0.5 s here)
  to exit, against the ideal ``calls x latency / concurrency``; target ratio <= 1.25. The
  time the command measures itself (run.yaml ``elapsed_sec``) is shown too. (Judge and
  embedding calls are separate lanes of ``max_concurrency`` slots each, so this ideal is
  not a hard lower bound: the server sees up to ~25 requests at once. With much fewer
  questions than the default, the fixed start-up time dominates and the ratio is missed.)
* ``cached``: the same command again, same cache and server: ``llm.calls`` and
  ``llm.requests`` in run.yaml and the server's request count must not move, it must take
  < 5 s, and the results must be those of the first run.
* ``faults``: a server with 10 % rate limits (429), 5 % server errors (500), 5 % malformed
  replies and 2 % hung requests; ``llm.timeout_s`` 2, ``backoff_initial_s`` 0.2, a fresh
  cache. Every item must be in results.jsonl exactly once and >= 98 % of the metric values
  (``answer_f1``, ``answer_relevance``) computed rather than ``_error``.
* ``resume``: the command is started with a fresh cache and out dir and killed (SIGKILL)
  once results.jsonl has ~40 % of the items; the lines that survived are counted; then
  ``--resume``. Every item must be there exactly once, with results equal (per question id)
  to those of an uninterrupted run against the same deterministic server, and run.yaml
  ``resumed.kept`` must equal the surviving lines. The calls the resumed run made are
  reported against a full run's.

* ``first-result``: how soon each command writes its first result (it streams): with a
  fresh cache, ``graphrag-eval evaluate`` and ``answer-correctness`` (on the same questions,
  as a TSV) are started and watched: the time from process start to the server's first
  judge request, to the first complete result in the output file (``results.jsonl``, or a
  row of the TSV), and to exit. The first result must come before half the run's wall time.

The server's listen backlog is raised from http.server's 5 to 128 (``--backlog``): with 5,
the burst of connections a run opens overflows it and some connection attempts wait for a
TCP retransmit (1 s) or fail and are retried, which is the test server's limit, not the
engine's.

Prints a table; exits 1 when any target is missed. The default run takes about 30 s.
Run from the repository root::

    .venv/bin/python benchmarks/bench_llm.py [--questions 200] [--latency 0.2]
        [--concurrency 16] [--scenario all|throughput|cached|faults|resume|first-result]
        [--backlog 128] [--seed 7] [--keep] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
TEMPLATES = 10
KILL_AT = 0.4
"""Share of the items in results.jsonl when the resume scenario kills the run."""
FAULTS = {"rate_limit": 0.10, "server_error": 0.05, "malformed": 0.05, "hang": 0.02}
FAULT_LLM = {"timeout_s": 2.0, "backoff_initial_s": 0.2}
THROUGHPUT_TARGET = 1.25
CACHED_TARGET_S = 5.0
COMPUTED_TARGET = 0.98
METRICS = (("answer_f1", "answer_eval_error"), ("answer_relevance", "answer_relevance_error"))

# The judge server in its own process, with the listen backlog given (see the module
# docstring). It reads commands on stdin: "stats" prints the requests received so far (by
# outcome) as one JSON line; end of input stops it.
SERVER_WRAPPER = """
import json, sys
from collections import Counter
sys.path.insert(0, sys.argv[1])
import judge_server
from judge_server import Faults, JudgeServer
options = json.loads(sys.argv[2])
judge_server._Server.request_queue_size = options["backlog"]
server = JudgeServer(
    latency_s=options["latency"], faults=Faults(**options["faults"]), seed=options["seed"]
).start()
print(json.dumps({"url": server.url}), flush=True)
for line in sys.stdin:
    if line.strip() == "stats":
        requests = server.requests
        print(json.dumps({
            "requests": len(requests),
            "outcomes": Counter(r.outcome for r in requests),
            "max_in_flight": server.max_in_flight,
        }), flush=True)
server.stop()
"""


# --------------------------------------------------------------------------------------------
# The server and the command


class JudgeProcess:
    """``tests/judge_server.py`` in a child process, on a free port. Its standard error (the
    resets of connections a killed client leaves behind, say) goes to ``log``."""

    def __init__(
        self, log: Path, latency: float, backlog: int, faults: dict[str, float] | None = None
    ):
        options = {"latency": latency, "faults": faults or {}, "seed": 0, "backlog": backlog}
        self.log = log
        with log.open("w", encoding="utf-8") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-c", SERVER_WRAPPER, str(TESTS), json.dumps(options)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self.url = self._read()["url"]

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            tail = self.log.read_text(encoding="utf-8").strip().splitlines()[-3:]
            raise RuntimeError(f"the judge server exited ({self.process.wait()}): {tail}")
        result: dict[str, Any] = json.loads(line)
        return result

    def stats(self) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write("stats\n")
        self.process.stdin.flush()
        return self._read()

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


@contextmanager
def judge_server(
    log: Path, args: argparse.Namespace, faults: dict[str, float] | None = None
) -> Iterator[JudgeProcess]:
    server = JudgeProcess(log, args.latency, args.backlog, faults)
    try:
        yield server
    finally:
        server.stop()


def cli_command(*args: str | Path) -> list[str]:
    """The ``graphrag-eval`` console script, run by this interpreter."""
    entry = "import sys; from graphrag_eval.cli import main; sys.exit(main())"
    return [sys.executable, "-c", entry, *map(str, args)]


def cli_env() -> dict[str, str]:
    """No real API key reaches the test server, and no user cache is touched."""
    hidden = ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "GRAPHRAG_EVAL_CACHE")
    return {key: value for key, value in os.environ.items() if key not in hidden}


@dataclass
class Workspace:
    """The generated inputs of a run; each scenario gets its own cache and out dir."""

    directory: Path
    reference: Path
    responses: Path
    questions: int
    answers_tsv: Path
    """The same questions and answers as ``answer-correctness`` input."""

    def evaluate_args(self, config: Path, out_dir: Path, *extra: str) -> list[str]:
        return cli_command(
            "evaluate", self.reference, self.responses, "-c", config, "-o", out_dir, "-q", *extra
        )


@dataclass
class Run:
    wall_s: float
    returncode: int
    stderr: str
    run_yaml: dict[str, Any] = field(default_factory=dict)

    @property
    def llm(self) -> dict[str, Any]:
        return self.run_yaml.get("llm") or {}


def evaluate(workspace: Workspace, config: Path, out_dir: Path, *extra: str) -> Run:
    """Run the command to its end; the wall time is from process start to exit."""
    start = time.perf_counter()
    done = subprocess.run(
        workspace.evaluate_args(config, out_dir, *extra),
        env=cli_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    return Run(wall, done.returncode, done.stderr.strip(), read_run_yaml(out_dir))


def read_run_yaml(out_dir: Path) -> dict[str, Any]:
    path = out_dir / "run.yaml"
    if not path.exists():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def read_results(out_dir: Path) -> list[dict[str, Any]]:
    """The complete lines of results.jsonl (a line cut short by a kill is not counted)."""
    path = out_dir / "results.jsonl"
    if not path.exists():
        return []
    results = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if not line.endswith("\n"):
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            results.append(value)
    return results


def write_config(path: Path, url: str, cache: Path, concurrency: int, **llm: Any) -> Path:
    endpoint = {"provider": "openai-compatible", "base_url": url}
    config = {
        "llm": {
            "generation": {**endpoint, "model": "gpt-4o-mini"},
            "embedding": {**endpoint, "model": "text-embedding-3-small"},
            "max_concurrency": concurrency,
            "cache": {"path": str(cache)},
            **llm,
        }
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------
# Data

PLACES = (
    *("Oslo", "Arendal", "Bergen", "Stavanger", "Kristiansand", "Feda", "Kvilldal"),
    *("Sandefjord", "Tromso", "Narvik", "Bodo", "Alta", "Hamar", "Lillehammer", "Molde"),
    *("Kongsberg", "Halden", "Drammen", "Skien", "Larvik"),
)
KINDS = ("transformer", "breaker", "line", "busbar", "generator", "substation")


def generate(directory: Path, questions: int, seed: int) -> Workspace:
    """A reference YAML and a responses JSONL in which every text is distinct."""
    rng = random.Random(seed)
    templates: list[dict[str, Any]] = [
        {"template_id": f"list_{KINDS[t % len(KINDS)]}s_in_region_{t}", "questions": []}
        for t in range(min(TEMPLATES, questions))
    ]
    responses = []
    for q in range(questions):
        template = templates[q % len(templates)]
        kind = KINDS[(q % len(templates)) % len(KINDS)]
        place = rng.choice(PLACES)
        claims = [f"{place} {kind[0].upper()}{q}x{k}" for k in range(rng.randint(1, 4))]
        qid = f"q{q:05d}"
        template["questions"].append(
            {
                "id": qid,
                "question_text": f"Which {kind}s are in region {place} number {q}?",
                "reference_answer": ", ".join(claims),
            }
        )
        style = rng.random()
        if style < 0.5:  # correct, in another order
            actual = ", ".join(rng.sample(claims, len(claims)))
        elif style < 0.7:  # partial
            actual = ", ".join(claims[: max(1, len(claims) // 2)])
        elif style < 0.85:  # correct plus something extra
            actual = ", ".join([*claims, f"{rng.choice(PLACES)} extra {q}"])
        else:  # wrong
            actual = f"{rng.choice(PLACES)} {kind} {q + 100000}"
        responses.append({"question_id": qid, "actual_answer": actual})
    reference = directory / "reference.yaml"
    reference.write_text(yaml.safe_dump(templates, sort_keys=False), encoding="utf-8")
    responses_path = directory / "responses.jsonl"
    responses_path.write_text(
        "".join(json.dumps(response) + "\n" for response in responses), encoding="utf-8"
    )
    questions_by_id = {item["id"]: item for template in templates for item in template["questions"]}
    tsv = directory / "answers.tsv"
    with tsv.open("w", encoding="utf-8", newline="") as stream:
        writer = csv.writer(stream, delimiter="\t", lineterminator="\n")
        writer.writerow(["Question", "Reference answer", "Actual answer"])
        for response in responses:
            item = questions_by_id[response["question_id"]]
            writer.writerow(
                [item["question_text"], item["reference_answer"], response["actual_answer"]]
            )
    return Workspace(directory, reference, responses_path, questions, tsv)


# --------------------------------------------------------------------------------------------
# Scenarios


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class Scenario:
    name: str
    figures: dict[str, Any] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)

    def check(self, name: str, ok: bool, detail: str) -> bool:
        self.checks.append(Check(name, bool(ok), detail))
        return bool(ok)

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)


def ran(scenario: Scenario, run: Run, what: str) -> bool:
    """The command exited 0 and wrote run.yaml; otherwise a failed check with its stderr."""
    if run.returncode == 0 and run.run_yaml:
        return True
    tail = run.stderr.splitlines()[-3:]
    scenario.check(f"{what} ran", False, f"exit {run.returncode}: {' | '.join(tail)}")
    return False


def by_id(results: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {result["question_id"]: result for result in results}


def differences(got: Sequence[dict[str, Any]], expected: Sequence[dict[str, Any]]) -> list[str]:
    """Question ids whose result differs (or is missing on one side)."""
    mine, theirs = by_id(got), by_id(expected)
    return sorted(qid for qid in mine.keys() | theirs.keys() if mine.get(qid) != theirs.get(qid))


def check_complete(scenario: Scenario, results: Sequence[dict[str, Any]], questions: int) -> None:
    ids = [result.get("question_id") for result in results]
    scenario.check(
        "every item once",
        len(ids) == questions and len(set(ids)) == questions,
        f"{len(ids)} lines, {len(set(ids))} distinct ids of {questions}",
    )


@dataclass
class Uninterrupted:
    """What a whole run against the fault-free server gave: the results to compare with."""

    results: list[dict[str, Any]]
    calls: int


def throughput(
    workspace: Workspace, server: JudgeProcess, args: argparse.Namespace
) -> tuple[Scenario, Path, Path]:
    scenario = Scenario("throughput")
    out = workspace.directory / "out-throughput"
    config = write_config(
        workspace.directory / "throughput.yaml",
        server.url,
        workspace.directory / "throughput-cache.sqlite3",
        args.concurrency,
    )
    before = server.stats()["requests"]
    run = evaluate(workspace, config, out)
    if not ran(scenario, run, "evaluate"):
        return scenario, config, out
    stats = server.stats()
    calls = int(run.llm.get("calls", 0))
    ideal = calls * args.latency / args.concurrency
    ratio = run.wall_s / ideal if ideal else None  # no latency: nothing to compare with
    scenario.figures = {
        "wall_s": run.wall_s,
        "in_command_s": run.run_yaml.get("elapsed_sec"),
        "calls": calls,
        "requests": run.llm.get("requests"),
        "retries": run.llm.get("retries"),
        "failed_calls": run.llm.get("failed_calls"),
        "server_requests": stats["requests"] - before,
        "server_max_in_flight": stats["max_in_flight"],
        "ideal_s": ideal,
        "ratio": ratio,
    }
    scenario.check(
        "calls = 3 per item",
        calls == 3 * workspace.questions,
        f"{calls} calls for {workspace.questions} items",
    )
    if ratio is not None:
        scenario.check(
            f"wall / ideal <= {THROUGHPUT_TARGET}",
            ratio <= THROUGHPUT_TARGET,
            f"{run.wall_s:.2f} s / {ideal:.2f} s = {ratio:.2f}",
        )
    check_complete(scenario, read_results(out), workspace.questions)
    return scenario, config, out


def cached(workspace: Workspace, server: JudgeProcess, config: Path, out: Path) -> Scenario:
    scenario = Scenario("cached")
    first = read_results(out)
    before = server.stats()["requests"]
    # The same output directory: evaluate refuses to write over a run's results without it.
    run = evaluate(workspace, config, out, "--overwrite")
    if not ran(scenario, run, "evaluate"):
        return scenario
    server_requests = server.stats()["requests"] - before
    scenario.figures = {
        "wall_s": run.wall_s,
        "in_command_s": run.run_yaml.get("elapsed_sec"),
        "calls": run.llm.get("calls"),
        "requests": run.llm.get("requests"),
        "cache_hits": run.llm.get("cache_hits"),
        "server_requests": server_requests,
    }
    scenario.check(
        "no calls",
        run.llm.get("calls") == 0 and run.llm.get("requests") == 0 and server_requests == 0,
        f"run.yaml calls {run.llm.get('calls')}, requests {run.llm.get('requests')}; "
        f"server received {server_requests}",
    )
    scenario.check(
        f"under {CACHED_TARGET_S:g} s", run.wall_s < CACHED_TARGET_S, f"{run.wall_s:.2f} s"
    )
    changed = differences(read_results(out), first)
    scenario.check(
        "same results as the first run",
        not changed,
        f"{len(changed)} differ" + (f" (first: {changed[0]})" if changed else ""),
    )
    return scenario


def faults(
    workspace: Workspace, args: argparse.Namespace, uninterrupted: Uninterrupted | None
) -> Scenario:
    scenario = Scenario("faults")
    out = workspace.directory / "out-faults"
    with judge_server(workspace.directory / "server-faults.log", args, FAULTS) as server:
        config = write_config(
            workspace.directory / "faults.yaml",
            server.url,
            workspace.directory / "faults-cache.sqlite3",
            args.concurrency,
            **FAULT_LLM,
        )
        run = evaluate(workspace, config, out)
        stats = server.stats()
    if not ran(scenario, run, "evaluate"):
        return scenario
    results = read_results(out)
    slots = len(results) * len(METRICS)
    computed = sum(1 for result in results for key, _ in METRICS if key in result)
    errors: dict[str, int] = {}
    for result in results:
        for _, error_key in METRICS:
            if error_key in result:
                message = str(result[error_key])
                errors[message[:70]] = errors.get(message[:70], 0) + 1
    share = computed / slots if slots else 0.0
    scenario.figures = {
        "wall_s": run.wall_s,
        "in_command_s": run.run_yaml.get("elapsed_sec"),
        "calls": run.llm.get("calls"),
        "requests": run.llm.get("requests"),
        "retries": run.llm.get("retries"),
        "failed_calls": run.llm.get("failed_calls"),
        "server_outcomes": stats["outcomes"],
        "computed": computed,
        "metric_values": slots,
        "computed_share": share,
        "errors": errors,
    }
    check_complete(scenario, results, workspace.questions)
    scenario.check(
        f">= {COMPUTED_TARGET:.0%} computed",
        share >= COMPUTED_TARGET,
        f"{computed}/{slots} = {share:.2%}",
    )
    if uninterrupted is not None:  # retries and re-asks must not change a score
        clean = by_id(uninterrupted.results)
        compared = changed = 0
        for result in results:
            for key, _ in METRICS:
                if key in result:
                    compared += 1
                    changed += clean.get(result["question_id"], {}).get(key) != result[key]
        scenario.check(
            "values = fault-free run",
            not changed,
            f"{changed} of {compared} computed values differ",
        )
    return scenario


def count_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def resume(
    workspace: Workspace,
    server: JudgeProcess,
    args: argparse.Namespace,
    uninterrupted: Uninterrupted | None,
) -> Scenario:
    scenario = Scenario("resume")
    if uninterrupted is None:  # no throughput run to compare with: make one
        reference_out = workspace.directory / "out-reference"
        config = write_config(
            workspace.directory / "reference-run.yaml",
            server.url,
            workspace.directory / "reference-cache.sqlite3",
            args.concurrency,
        )
        run = evaluate(workspace, config, reference_out)
        if not ran(scenario, run, "uninterrupted run"):
            return scenario
        uninterrupted = Uninterrupted(read_results(reference_out), int(run.llm.get("calls", 0)))

    out = workspace.directory / "out-resume"
    config = write_config(
        workspace.directory / "resume.yaml",
        server.url,
        workspace.directory / "resume-cache.sqlite3",
        args.concurrency,
    )
    results_path = out / "results.jsonl"
    threshold = max(1, round(KILL_AT * workspace.questions))
    before = server.stats()["requests"]
    start = time.perf_counter()
    process = subprocess.Popen(
        workspace.evaluate_args(config, out),
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while process.poll() is None and count_lines(results_path) < threshold:
            time.sleep(0.01)
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        process.wait()
    killed_after = time.perf_counter() - start
    killed_requests = server.stats()["requests"] - before
    if process.returncode != -signal.SIGKILL:
        scenario.check("killed mid-run", False, f"the run ended first (exit {process.returncode})")
        return scenario
    survived = len(read_results(out))
    lines_at_kill = count_lines(results_path)

    run = evaluate(workspace, config, out, "--resume")
    if not ran(scenario, run, "evaluate --resume"):
        return scenario
    results = read_results(out)
    kept = (run.run_yaml.get("resumed") or {}).get("kept")
    changed = differences(results, uninterrupted.results)
    scenario.figures = {
        "killed_after_s": killed_after,
        "killed_run_requests": killed_requests,
        "lines_at_kill": lines_at_kill,
        "survived": survived,
        "kept": kept,
        "resume_wall_s": run.wall_s,
        "resume_calls": run.llm.get("calls"),
        "resume_requests": run.llm.get("requests"),
        "resume_retries": run.llm.get("retries"),
        "resume_cache_hits": run.llm.get("cache_hits"),
        "full_run_calls": uninterrupted.calls,
    }
    check_complete(scenario, results, workspace.questions)
    scenario.check(
        "results = uninterrupted run",
        not changed and len(uninterrupted.results) == workspace.questions,
        f"{len(changed)} of {workspace.questions} differ"
        + (f" (first: {changed[0]})" if changed else ""),
    )
    scenario.check("resumed.kept = surviving lines", kept == survived, f"{kept} vs {survived}")
    return scenario


def first_result(workspace: Workspace, server: JudgeProcess, args: argparse.Namespace) -> Scenario:
    """How soon each command writes its first result (see the module docstring)."""
    scenario = Scenario("first-result")
    directory = workspace.directory
    for name in ("evaluate", "answer-correctness"):
        config = write_config(
            directory / f"first-{name}.yaml",
            server.url,
            directory / f"first-{name}-cache.sqlite3",
            args.concurrency,
        )
        if name == "evaluate":
            out = directory / "out-first"
            command, results, header = (
                workspace.evaluate_args(config, out),
                out / "results.jsonl",
                0,
            )
        else:
            results = directory / "first-judged.tsv"
            entry = "import sys; from graphrag_eval.cli import answer_correctness_main as m; "
            command = [sys.executable, "-c", entry + "sys.exit(m())"]
            command += ["-i", str(workspace.answers_tsv), "-o", str(results), "-c", str(config)]
            header = 1
        timings = watch(command, results, header, server)
        if timings is None:
            scenario.check(f"{name} ran", False, "no result before the command ended")
            continue
        scenario.figures[name] = timings
        scenario.check(
            f"{name}: first result before half the run",
            timings["first_result_s"] < timings["wall_s"] / 2,
            f"{timings['first_result_s']:.2f} s of {timings['wall_s']:.2f} s",
        )
    return scenario


def watch(
    command: list[str], results: Path, header: int, server: JudgeProcess
) -> dict[str, float] | None:
    """Run ``command`` to its end, noting when the server got its first request and when
    ``results`` had its first complete result (after ``header`` lines)."""
    before = server.stats()["requests"]
    start = time.perf_counter()
    process = subprocess.Popen(
        command, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    first_request = first_result = None
    while process.poll() is None and first_result is None:
        now = time.perf_counter() - start
        if first_request is None and server.stats()["requests"] > before:
            first_request = now
        if count_lines(results) > header:
            first_result = now
        time.sleep(0.005)
    process.wait()
    wall = time.perf_counter() - start
    if first_result is None or process.returncode != 0:
        return None
    return {
        "first_request_s": first_request if first_request is not None else first_result,
        "first_result_s": first_result,
        "wall_s": wall,
    }


# --------------------------------------------------------------------------------------------
# Report


def render(scenarios: Sequence[Scenario], args: argparse.Namespace) -> str:
    def seconds(value: Any) -> str:
        return f"{value:.2f} s" if isinstance(value, int | float) else "-"

    rows: list[tuple[str, str]] = []
    for scenario in scenarios:
        f = scenario.figures
        if not f:
            pass
        elif scenario.name == "throughput":
            ratio = "-" if f["ratio"] is None else f"{f['ratio']:.2f}"
            rows.append(
                (
                    "throughput",
                    f"{f['calls']} calls ({f['requests']} requests, {f['retries']} retries, "
                    f"{f['failed_calls']} failed; the server got {f['server_requests']}) in "
                    f"{seconds(f['wall_s'])} "
                    f"(in the command {seconds(f['in_command_s'])}); ideal "
                    f"{f['calls']} x {args.latency:g} s / {args.concurrency} = "
                    f"{seconds(f['ideal_s'])}; ratio {ratio}; server max in flight "
                    f"{f['server_max_in_flight']}",
                )
            )
        elif scenario.name == "cached":
            rows.append(
                (
                    "cached re-run",
                    f"{seconds(f['wall_s'])} (in the command {seconds(f['in_command_s'])}); "
                    f"calls {f['calls']}, requests {f['requests']}, cache hits "
                    f"{f['cache_hits']}, server requests {f['server_requests']}",
                )
            )
        elif scenario.name == "faults":
            outcomes = ", ".join(f"{k} {v}" for k, v in sorted(f["server_outcomes"].items()))
            rows.append(
                (
                    "faults",
                    f"{seconds(f['wall_s'])}; {f['calls']} calls, {f['requests']} requests, "
                    f"{f['retries']} retries, {f['failed_calls']} failed calls; computed "
                    f"{f['computed']}/{f['metric_values']} ({f['computed_share']:.2%})",
                )
            )
            rows.append(("  server outcomes", outcomes))
            for message, count in sorted(f["errors"].items(), key=lambda item: -item[1]):
                rows.append(("  metric error", f"{count} x {message}"))
        elif scenario.name == "first-result":
            for name, t in f.items():
                rows.append(
                    (
                        f"first result: {name}",
                        f"first judge request {seconds(t['first_request_s'])}, first result "
                        f"{seconds(t['first_result_s'])}, exit {seconds(t['wall_s'])} "
                        "(from process start)",
                    )
                )
        elif scenario.name == "resume":
            rows.append(
                (
                    "kill and resume",
                    f"killed after {seconds(f['killed_after_s'])} and "
                    f"{f['killed_run_requests']} requests, with {f['lines_at_kill']} lines "
                    f"({f['survived']} complete); the resumed run kept {f['kept']} and made "
                    f"{f['resume_calls']} calls ({f['resume_requests']} requests, "
                    f"{f['resume_retries']} retries, {f['resume_cache_hits']} cache hits) in "
                    f"{seconds(f['resume_wall_s'])}; a full run makes {f['full_run_calls']}",
                )
            )
        for check in scenario.checks:
            rows.append((f"  {'ok  ' if check.ok else 'MISS'} {check.name}", check.detail))
    width = max(len(label) for label, _ in rows) if rows else 0
    header = (
        f"{args.questions} questions, latency {args.latency:g} s, max_concurrency "
        f"{args.concurrency}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"server listen backlog {args.backlog}"
    )
    return "\n".join([header, *(f"{label.ljust(width)}  {value}" for label, value in rows)])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=200, help="number of questions")
    parser.add_argument("--latency", type=float, default=0.2, help="server latency, seconds")
    parser.add_argument("--concurrency", type=int, default=16, help="llm.max_concurrency")
    parser.add_argument(
        "--scenario",
        choices=("all", "throughput", "cached", "faults", "resume", "first-result"),
        default="all",
    )
    parser.add_argument(
        "--backlog",
        type=int,
        default=128,
        help="listen backlog of the judge server (http.server's default is 5)",
    )
    parser.add_argument("--seed", type=int, default=7, help="random seed of the data")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="PATH",
        help="write the figures as JSON to PATH (or to stdout, instead of the table)",
    )
    args = parser.parse_args(argv)
    wanted = (
        {"throughput", "cached", "faults", "resume", "first-result"}
        if args.scenario == "all"
        else {args.scenario}
    )

    scenarios: list[Scenario] = []
    directory = Path(tempfile.mkdtemp(prefix="bench-llm-"))
    try:
        workspace = generate(directory, args.questions, args.seed)
        uninterrupted: Uninterrupted | None = None
        if wanted & {"throughput", "cached", "resume", "first-result"}:
            with judge_server(directory / "server.log", args) as server:
                if wanted & {"throughput", "cached"}:
                    scenario, config, out = throughput(workspace, server, args)
                    if "throughput" in wanted:
                        scenarios.append(scenario)
                    if scenario.figures:
                        uninterrupted = Uninterrupted(read_results(out), scenario.figures["calls"])
                    if "cached" in wanted:
                        scenarios.append(cached(workspace, server, config, out))
                if "resume" in wanted:
                    scenarios.append(resume(workspace, server, args, uninterrupted))
                if "first-result" in wanted:
                    scenarios.append(first_result(workspace, server, args))
        if "faults" in wanted:
            scenarios.append(faults(workspace, args, uninterrupted))
    finally:
        if args.keep:
            print(f"kept {directory}", file=sys.stderr)
        else:
            shutil.rmtree(directory, ignore_errors=True)

    report = {
        "benchmark": "llm",
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "questions": args.questions,
        "latency_s": args.latency,
        "max_concurrency": args.concurrency,
        "server_backlog": args.backlog,
    }
    return emit(report, scenarios, args, render(scenarios, args))


def emit(
    report: dict[str, Any], scenarios: Sequence[Scenario], args: argparse.Namespace, table: str
) -> int:
    """Add the scenarios to ``report``; print it as JSON (``--json -``) or ``table`` (and
    write the JSON to ``--json PATH``); the exit code: 0 when every check held."""
    report["scenarios"] = {
        s.name: {"figures": s.figures, "checks": [asdict(c) for c in s.checks]} for s in scenarios
    }
    report["ok"] = all(s.ok for s in scenarios)
    if args.json == "-":
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(table)
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
