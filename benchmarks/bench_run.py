"""Whole-run benchmark: ``run_evaluation`` + ``compute_aggregates`` on a generated dataset.

A reference dataset of N questions (default 10,000) over 50 templates is generated, each
template of one of five kinds of reference steps:

* ``sparql``: one ``sparql_query`` step with a SPARQL-JSON result of 5-50 rows x 2-4 columns
  (uri, literal, xsd:integer, xsd:decimal cells; some with ``required_columns``, some
  ``ordered``);
* ``retrieval_sparql``: one group with a ``retrieval`` step (4 id/text contexts) and a
  ``sparql_query`` step;
* ``time_series``: one ``retrieve_time_series`` step (mrid list, limit);
* ``data_points``: one ``retrieve_data_points`` step (external_id, aggregates, granularity,
  relative start/end, limit);
* ``iri_sparql``: two groups, ``[[iri_discovery], [sparql_query]]``.

Responses mix correct steps (renamed and extra columns, shuffled rows, equivalent args),
wrong results (a changed cell, a missing row, a non-JSON output, partial retrieval, other
args), correct steps preceded by extra failed steps, error responses (~2 %) and missing
responses (~0.5 %). Each question's expected ``steps_score`` is known by construction and
every result is checked against it.

Generation is not timed. Timed: ``run_evaluation`` (input validation included),
``compute_aggregates``, and writing the results as JSONL to a temporary file. Memory: the
process max RSS (``resource.getrusage``) before and after the timed run, and the tracemalloc
peak of a second, separate evaluation + aggregation run (tracemalloc slows it down, so its
time is not the one reported as the run time).

With ``--cli``, the data is written to files instead (the reference as JSON, the responses as
JSON Lines, one a line) and timed through the command line, ``graphrag-eval evaluate REFERENCE
RESPONSES -o DIR`` in a child process (report included): its wall time, CPU time and peak RSS
(the operating system's accounting of the finished child), every result checked as above.
Writing the files is not timed. The command line keeps a JSON reference over 64 MiB compact,
and such a reference may be up to 1 GiB (docs/security.md): 100,000 questions (489 MiB) are
read as they are. ``--raise-document-limit`` is for a checkout from before that limit, which
refuses a JSON document over 256 MiB: it raises that limit in the measured process only.

Run from the repository root::

    .venv/bin/python benchmarks/bench_run.py [--questions 10000] [--seed 7] [--json [PATH]]
    .venv/bin/python benchmarks/bench_run.py --cli --questions 50000 --repeat 3
    .venv/bin/python benchmarks/bench_run.py --cli --questions 100000
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from graphrag_eval import compute_aggregates, run_evaluation

XSD = "http://www.w3.org/2001/XMLSchema#"
SPARQL_JSON = "application/sparql-results+json"
KINDS = ("sparql", "retrieval_sparql", "time_series", "data_points", "iri_sparql")
CELL_TYPES = ("uri", "literal", "integer", "decimal")
TEMPLATES = 50
ERROR_SHARE = 0.02
MISSING_SHARE = 0.005
CORRECT_SHARE = 0.62
WRONG_SHARE = 0.20  # the rest: correct steps preceded by extra failed steps


# --------------------------------------------------------------------------------------------
# Generation


@dataclass
class Expected:
    outcome: str  # correct | wrong:<how> | extra_failed | error | missing
    last_group: float | None = None
    all_groups: float | None = None


@dataclass
class Dataset:
    reference: list[dict[str, Any]]
    responses: dict[str, dict[str, Any]]
    expected: dict[str, Expected] = field(default_factory=dict)


def cell(kind: str, lexical: str) -> dict[str, str]:
    if kind == "uri":
        return {"type": "uri", "value": lexical}
    if kind == "literal":
        return {"type": "literal", "value": lexical}
    datatype = XSD + ("integer" if kind == "integer" else "decimal")
    return {"type": "literal", "datatype": datatype, "value": lexical}


def random_lexical(rng: random.Random, kind: str, tag: str) -> str:
    if kind == "uri":
        return f"urn:uuid:{rng.getrandbits(128):032x}"
    if kind == "literal":
        return f"{tag} {rng.randrange(100_000)}"
    if kind == "integer":
        return str(rng.randrange(-100_000, 100_000))
    return f"{rng.uniform(-1000, 1000):.3f}"


def sparql_json(names: Sequence[str], kinds: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    bindings = [
        {name: cell(kind, value) for name, kind, value in zip(names, kinds, row, strict=True)}
        for row in rows
    ]
    return json.dumps({"head": {"vars": list(names)}, "results": {"bindings": bindings}})


def sparql_pair(rng: random.Random, qid: str, how: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A reference sparql_query step and an actual one: correct (``how == "correct"``) or
    wrong by a changed cell, a missing row or a non-JSON output."""
    n_rows, n_cols = rng.randint(5, 50), rng.randint(2, 4)
    names = [f"var{j}" for j in range(n_cols)]
    kinds = [rng.choice(CELL_TYPES) for _ in range(n_cols)]
    kinds[0] = "uri"  # a key column, so rows are distinct
    rows = [[random_lexical(rng, k, n) for n, k in zip(names, kinds, strict=True)]]
    rows += [
        [random_lexical(rng, k, n) for n, k in zip(names, kinds, strict=True)]
        for _ in range(n_rows - 1)
    ]
    ordered = rng.random() < 0.1
    query = f"SELECT {' '.join('?' + n for n in names)} WHERE {{ ?var0 ?p ?o }} # {qid}"
    reference: dict[str, Any] = {
        "name": "sparql_query",
        "args": {"query": query},
        "output": sparql_json(names, kinds, rows),
        "output_media_type": SPARQL_JSON,
    }
    roll = rng.random()
    if roll < 0.3:
        reference["required_columns"] = list(names)
    elif roll < 0.45 and n_cols > 2:
        reference["required_columns"] = names[:-1]
    if ordered:
        reference["ordered"] = True

    # The actual: columns renamed, an extra column, rows shuffled (unless ordered).
    act_rows = [list(row) for row in rows]
    if how == "changed_cell":
        row, col = rng.randrange(n_rows), rng.randrange(n_cols - (1 if n_cols > 2 else 0))
        act_rows[row][col] = "urn:uuid:changed" if kinds[col] == "uri" else "12345678"
    elif how == "missing_row":
        act_rows.pop(rng.randrange(n_rows))
    extra_kind = rng.choice(CELL_TYPES)
    for row in act_rows:
        row.append(random_lexical(rng, extra_kind, "extra"))
    act_names = [f"x{j}" for j in range(n_cols + 1)]
    rng.shuffle(act_names)
    if not ordered:
        rng.shuffle(act_rows)
    if how == "non_json":
        output = "@prefix ex: <http://example.org/> .\nex:a ex:b ex:c ."
    else:
        output = sparql_json(act_names, [*kinds, extra_kind], act_rows)
    actual = {
        "name": "sparql_query",
        "args": {"query": query.replace("?var", "?x")},
        "status": "success",
        "output": output,
    }
    return reference, actual


def contexts(rng: random.Random, prefix: str, count: int) -> list[dict[str, str]]:
    return [
        {
            "id": f"http://example.com/doc/{prefix}/{rng.randrange(10**9)}",
            "text": f"Document {prefix} {i} about substation {rng.randrange(1000)}.",
        }
        for i in range(count)
    ]


def retrieval_pair(rng: random.Random, qid: str, partial: bool) -> tuple[dict, dict]:
    relevant = contexts(rng, qid, 4)
    reference = {
        "name": "retrieval",
        "args": {"query": f"question {qid}", "k": 4},
        "output": json.dumps(relevant),
    }
    if partial:  # 2 relevant among 4 retrieved: recall@4 = 0.5
        retrieved = relevant[:2] + contexts(rng, qid + "-other", 2)
        k = 4
    else:  # all 4 relevant among 5 retrieved: recall@5 = 1
        retrieved = [*relevant, *contexts(rng, qid + "-other", 1)]
        k = 5
    rng.shuffle(retrieved)
    actual = {
        "name": "retrieval",
        "args": {"query": f"question {qid}", "k": k},
        "status": "success",
        "output": json.dumps(retrieved),
    }
    return reference, actual


def time_series_pair(rng: random.Random, wrong: bool) -> tuple[dict, dict]:
    mrids = [f"mrid-{rng.randrange(10**6)}" for _ in range(rng.randint(1, 3))]
    limit = rng.choice((10, 100, 1000))
    reference = {"name": "retrieve_time_series", "args": {"mrid": mrids, "limit": limit}}
    actual_mrid: Any = mrids[0] if len(mrids) == 1 else list(reversed(mrids))
    actual = {
        "name": "retrieve_time_series",
        "args": {"mrid": actual_mrid, "limit": limit * 2 if wrong else limit},
        "status": "success",
        "output": "[]",
    }
    return reference, actual


def data_points_pair(rng: random.Random, wrong: bool) -> tuple[dict, dict]:
    external_id = f"ts-{rng.randrange(10**6)}"
    days = rng.choice((1, 7, 30))
    reference = {
        "name": "retrieve_data_points",
        "args": {
            "external_id": [external_id],
            "aggregates": ["average", "max"],
            "granularity": "1h",
            "start": f"{days}d-ago",
            "end": "now",
            "limit": 500,
        },
    }
    executed = datetime(2025, 3, 1, tzinfo=UTC) + timedelta(seconds=rng.randrange(10**7))
    actual = {
        "name": "retrieve_data_points",
        "args": {
            "external_id": external_id,
            "aggregates": ["max", "average"],
            "granularity": "15min" if wrong else "1hour",
            "start": (executed - timedelta(days=days, seconds=-12)).isoformat(),
            "end": (executed - timedelta(seconds=5)).isoformat(),
            "limit": 500,
        },
        "status": "success",
        "output": "[]",
        "execution_timestamp": executed.isoformat(),
    }
    return reference, actual


def iri_pair(rng: random.Random, wrong: bool) -> tuple[dict, dict]:
    iri = f"urn:uuid:{rng.getrandbits(128):032x}"
    found = f"urn:uuid:{rng.getrandbits(128):032x}" if wrong else iri
    reference = {"name": "iri_discovery", "output": f"<{iri}>"}
    actual = {
        "name": "autocomplete_search",
        "args": {"query": "OSLO", "result_class": "cim:Substation"},
        "status": "success",
        "output": sparql_json(
            ["iri", "name", "rank"],
            ["uri", "literal", "decimal"],
            [
                [found, "OSLO", "0.01185"],
                [f"urn:uuid:{rng.getrandbits(128):032x}", "OSLO2", "0.002"],
            ],
        ),
    }
    return reference, actual


def failed_step(rng: random.Random, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "args": {"query": "SELECT * WHERE { ?s ?p ?o } LIMIT"},
        "status": "error",
        "error": "Error: ValueError('Expected end of text')\n Please fix your mistakes.",
    }


def question_steps(
    rng: random.Random, kind: str, qid: str, outcome: str
) -> tuple[list[list[dict]], list[dict], str, float, float]:
    """Reference step groups, actual steps, the outcome label and the expected steps_score
    in the last_group and all_groups modes."""
    wrong = outcome == "wrong"
    if kind == "sparql":
        how = rng.choice(("changed_cell", "missing_row", "non_json")) if wrong else "correct"
        ref, act = sparql_pair(rng, qid, how)
        score = 0.0 if wrong else 1.0
        return [[ref]], [act], how, score, score
    if kind == "retrieval_sparql":
        how = rng.choice(("wrong_sparql", "partial_retrieval")) if wrong else "correct"
        sparql_how = (
            rng.choice(("changed_cell", "non_json")) if how == "wrong_sparql" else "correct"
        )
        ref_r, act_r = retrieval_pair(rng, qid, partial=how == "partial_retrieval")
        ref_s, act_s = sparql_pair(rng, qid, sparql_how)
        score = {"correct": 1.0, "wrong_sparql": 0.5, "partial_retrieval": 0.75}[how]
        return [[ref_r, ref_s]], [act_r, act_s], how, score, score
    if kind == "time_series":
        ref, act = time_series_pair(rng, wrong)
        score = 0.0 if wrong else 1.0
        return [[ref]], [act], "other_limit" if wrong else "correct", score, score
    if kind == "data_points":
        ref, act = data_points_pair(rng, wrong)
        score = 0.0 if wrong else 1.0
        return [[ref]], [act], "other_granularity" if wrong else "correct", score, score
    # iri_sparql: [[iri_discovery], [sparql_query]]
    how = rng.choice(("wrong_sparql", "wrong_iri")) if wrong else "correct"
    ref_i, act_i = iri_pair(rng, wrong=how == "wrong_iri")
    ref_s, act_s = sparql_pair(rng, qid, "changed_cell" if how == "wrong_sparql" else "correct")
    last, every = {"correct": (1.0, 1.0), "wrong_sparql": (0.0, 0.0), "wrong_iri": (1.0, 0.5)}[how]
    return [[ref_i], [ref_s]], [act_i, act_s], how, last, every


def generate(questions: int, seed: int) -> Dataset:
    rng = random.Random(seed)
    templates = [
        {"template_id": f"template_{t:02d}_{KINDS[t % len(KINDS)]}", "questions": []}
        for t in range(min(TEMPLATES, questions))
    ]
    dataset = Dataset(reference=templates, responses={})
    for q in range(questions):
        t = q % len(templates)
        kind = KINDS[t % len(KINDS)]
        qid = f"q{q:06d}"
        roll = rng.random()
        if roll < ERROR_SHARE:
            outcome = "error"
        elif roll < ERROR_SHARE + MISSING_SHARE:
            outcome = "missing"
        elif roll < ERROR_SHARE + MISSING_SHARE + CORRECT_SHARE:
            outcome = "correct"
        elif roll < ERROR_SHARE + MISSING_SHARE + CORRECT_SHARE + WRONG_SHARE:
            outcome = "wrong"
        else:
            outcome = "extra_failed"
        groups, steps, how, last, every = question_steps(
            rng, kind, qid, "wrong" if outcome == "wrong" else "correct"
        )
        templates[t]["questions"].append(
            {"id": qid, "question_text": f"Question {q} of {kind}", "reference_steps": groups}
        )
        if outcome == "missing":
            dataset.expected[qid] = Expected("missing")
            continue
        if outcome == "error":
            dataset.responses[qid] = {
                "question_id": qid,
                "status": "error",
                "error": "Error: the agent timed out",
            }
            dataset.expected[qid] = Expected("error")
            continue
        if outcome == "extra_failed":  # failed retries before the steps that work
            failed = [failed_step(rng, steps[-1]["name"]) for _ in range(rng.randint(1, 2))]
            steps = steps[:-1] + failed + steps[-1:]
            how = "extra_failed"
        for index, step in enumerate(steps):
            step["id"] = f"call_{qid}_{index}"
        input_tokens = rng.randrange(1000, 300_000)
        output_tokens = rng.randrange(20, 2000)
        dataset.responses[qid] = {
            "question_id": qid,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
            "elapsed_sec": round(rng.uniform(1, 60), 3),
            "actual_steps": steps,
        }
        label = "correct" if how == "correct" else how if how == "extra_failed" else f"wrong:{how}"
        dataset.expected[qid] = Expected(label, last, every)
    return dataset


# --------------------------------------------------------------------------------------------
# Checking


def check(results: list[dict[str, Any]], dataset: Dataset, mode: str) -> list[str]:
    """Messages for every result that differs from its expected outcome."""
    problems: list[str] = []
    for result in results:
        qid = result["question_id"]
        expected = dataset.expected[qid]
        if expected.outcome in ("error", "missing"):
            if result.get("status") != "error" or (
                expected.outcome == "missing" and not result.get("missing_response")
            ):
                problems.append(
                    f"{qid}: expected {expected.outcome}, got status {result.get('status')}"
                )
            continue
        want = expected.last_group if mode == "last_group" else expected.all_groups
        got = result.get("steps_score")
        if result.get("status") != "success" or got is None or abs(got - want) > 1e-9:
            problems.append(
                f"{qid} ({expected.outcome}): steps_score {got!r}, expected {want}"
                + (f", input_errors {result['input_errors']}" if "input_errors" in result else "")
            )
    return problems


class CountingHandler(logging.Handler):
    """Counts the library's log records instead of printing them."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        self.counts[record.levelname] += 1


# --------------------------------------------------------------------------------------------
# Measurement


CLOCK = [time.perf_counter]
"""What the timed runs read: wall time, or with ``--clock cpu`` this process's CPU time (less
disturbed by other processes on a shared machine)."""


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def timed_run(dataset: Dataset, config: dict[str, Any]) -> dict[str, Any]:
    gc.collect()
    start = CLOCK[0]()
    results = run_evaluation(dataset.reference, dataset.responses, config)
    evaluated = CLOCK[0]()
    aggregates = compute_aggregates(results, config)
    aggregated = CLOCK[0]()
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "results.jsonl"
        written = CLOCK[0]()
        with path.open("w", encoding="utf-8") as stream:
            for result in results:
                stream.write(json.dumps(result, ensure_ascii=False))
                stream.write("\n")
        done = CLOCK[0]()
        size = path.stat().st_size
    return {
        "results": results,
        "aggregates": aggregates,
        "evaluation_s": evaluated - start,
        "aggregation_s": aggregated - evaluated,
        "write_jsonl_s": done - written,
        "jsonl_bytes": size,
    }


def traced_run(dataset: Dataset, config: dict[str, Any]) -> dict[str, float]:
    gc.collect()
    tracemalloc.start()
    start = time.perf_counter()
    results = run_evaluation(dataset.reference, dataset.responses, config)
    _, evaluation_peak = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    compute_aggregates(results, config)
    _, aggregation_peak = tracemalloc.get_traced_memory()
    elapsed = time.perf_counter() - start
    tracemalloc.stop()
    return {
        "evaluation_peak_mib": evaluation_peak / 2**20,
        "aggregation_peak_mib": aggregation_peak / 2**20,
        "traced_run_s": elapsed,
    }


RAISED_LIMIT = (
    "import sys; import graphrag_eval.files.bounded as bounded; "
    "bounded.MAX_DOCUMENT_BYTES = 2**30; from graphrag_eval.cli import main; "
    "sys.exit(main(sys.argv[1:]))"
)
"""``graphrag-eval evaluate`` with the 256 MiB limit on a JSON document raised to 1 GiB, in
the measured process only (``--raise-document-limit``): a 100,000-question reference is
489 MiB."""


LAUNCHER = (
    "import json, os, subprocess, sys, time\n"
    "start = time.perf_counter()\n"
    "with open(sys.argv[1], 'wb') as err:\n"
    "    child = subprocess.Popen(sys.argv[2:], stderr=err)\n"
    "    _, status, usage = os.wait4(child.pid, 0)\n"
    "print(json.dumps({'exit_code': os.waitstatus_to_exitcode(status),\n"
    "    'wall_s': time.perf_counter() - start, 'cpu_s': usage.ru_utime + usage.ru_stime,\n"
    "    'max_rss_mib': usage.ru_maxrss / 1024}))\n"
)
"""Runs the measured command (its arguments after the stderr file's path) and prints its wall
time, CPU time and peak RSS (KiB on Linux) as JSON: a small process of its own, because
Linux counts in a child's peak RSS the memory of the process it was started from, which here
holds the whole generated dataset (2.2 GB counted for a 0.75 GB run at 100,000 questions)."""


def cli_runs(dataset: Dataset, args: argparse.Namespace) -> dict[str, Any]:
    """``graphrag-eval evaluate`` on the data written to files, ``args.repeat`` times, each in
    a child process: its wall, CPU and peak RSS; the last run's results checked."""
    runs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        reference, responses = folder / "reference.json", folder / "responses.jsonl"
        reference.write_text(json.dumps(dataset.reference), encoding="utf-8")
        with responses.open("w", encoding="utf-8") as stream:
            for item in dataset.responses.values():
                stream.write(json.dumps(item) + "\n")
        config = folder / "config.json"
        config.write_text(json.dumps({"steps": {"score_mode": args.score_mode}}))
        command = [sys.executable, "-m", "graphrag_eval.cli", "evaluate", str(reference)]
        if args.raise_document_limit:  # this measurement only: 100,000 questions need it
            command[1:3] = ["-c", RAISED_LIMIT]
        command += [str(responses), "-c", str(config), "-q", "--no-progress"]
        for attempt in range(args.repeat):
            out, log = folder / f"out{attempt}", folder / f"stderr{attempt}.txt"
            launched = subprocess.run(
                [sys.executable, "-c", LAUNCHER, str(log), *command, "-o", str(out)],
                capture_output=True,
                text=True,
                check=True,
            )
            run = json.loads(launched.stdout)
            if run.pop("exit_code") != 0:
                raise SystemExit(f"evaluate failed: {log.read_text(errors='replace')}")
            runs.append(run)
        results = [
            json.loads(line)
            for line in (folder / f"out{args.repeat - 1}" / "results.jsonl").open(encoding="utf-8")
        ]
        input_mib = {
            "reference_json": reference.stat().st_size / 2**20,
            "responses_jsonl": responses.stat().st_size / 2**20,
        }
    problems = check(results, dataset, args.score_mode)
    return {"runs": runs, "problems": problems, "input_mib": input_mib}


def cli_main(dataset: Dataset, args: argparse.Namespace) -> int:
    measured = cli_runs(dataset, args)
    runs = measured["runs"]

    def stat(key: str) -> dict[str, float]:
        values = [run[key] for run in runs]
        return {"min": min(values), "median": statistics.median(values), "max": max(values)}

    report = {
        "benchmark": "run_cli",
        "python": platform.python_version(),
        "questions": args.questions,
        "seed": args.seed,
        "score_mode": args.score_mode,
        "repeat": args.repeat,
        "input_mib": measured["input_mib"],
        "wall_s": stat("wall_s"),
        "cpu_s": stat("cpu_s"),
        "max_rss_mib": stat("max_rss_mib"),
        "mismatches": len(measured["problems"]),
        "first_mismatches": measured["problems"][:10],
    }
    if args.json == "-":
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        rows = [
            ("questions", f"{args.questions:,}"),
            (
                "input files",
                f"reference {report['input_mib']['reference_json']:.1f} MiB (JSON), responses "
                f"{report['input_mib']['responses_jsonl']:.1f} MiB (JSON Lines)",
            ),
        ]
        for key, label, unit in (
            ("wall_s", "evaluate, wall", "s"),
            ("cpu_s", "evaluate, CPU", "s"),
            ("max_rss_mib", "evaluate, peak RSS", "MiB"),
        ):
            value = report[key]
            spread = f"min {value['min']:.2f}, max {value['max']:.2f}"
            rows.append((label, f"{value['median']:.2f} {unit} ({spread})"))
        rows.append(("scores differing from expected", str(report["mismatches"])))
        width = max(len(label) for label, _ in rows)
        print("\n".join(f"{label.ljust(width)}  {value}" for label, value in rows))
        for problem in report["first_mismatches"]:
            print(f"  MISMATCH {problem}")
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 1 if measured["problems"] else 0


def size_mib(value: Any) -> float:
    return len(json.dumps(value)) / 2**20


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=10_000, help="number of questions")
    parser.add_argument("--seed", type=int, default=7, help="random seed of the generator")
    parser.add_argument("--repeat", type=int, default=1, help="timed runs (min and median)")
    parser.add_argument("--score-mode", choices=("last_group", "all_groups"), default="last_group")
    parser.add_argument(
        "--no-tracemalloc", action="store_true", help="skip the tracemalloc peak-memory run"
    )
    parser.add_argument(
        "--cli",
        action="store_true",
        help="write the data to files and time graphrag-eval evaluate on them (wall, CPU, RSS)",
    )
    parser.add_argument(
        "--raise-document-limit",
        action="store_true",
        help="with --cli: raise the 256 MiB limit on a JSON document to 1 GiB in the measured "
        "process (for a checkout from before the compact reference's 1 GiB limit: 100,000 "
        "questions make a 489 MiB reference)",
    )
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="time the runs by the wall clock or by this process's CPU time",
    )
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="PATH",
        help="write the results as JSON to PATH (or to stdout, instead of the table)",
    )
    args = parser.parse_args(argv)
    if args.clock == "cpu":
        CLOCK[0] = time.process_time

    library_log = logging.getLogger("graphrag_eval")
    counter = CountingHandler()
    library_log.addHandler(counter)
    library_log.propagate = False

    start = time.perf_counter()
    dataset = generate(args.questions, args.seed)
    generation_s = time.perf_counter() - start
    if args.cli:
        return cli_main(dataset, args)
    outcomes = Counter(e.outcome.split(":")[0] for e in dataset.expected.values())
    config = {"steps": {"score_mode": args.score_mode}}
    rss_before = max_rss_mib()

    runs = []
    for _ in range(args.repeat):
        if runs:
            runs[-1].pop("results")
            runs[-1].pop("aggregates")
        counter.counts.clear()
        runs.append(timed_run(dataset, config))
    rss_after = max_rss_mib()
    log_records = dict(counter.counts)  # of one run
    last = runs[-1]
    results, aggregates = last.pop("results"), last.pop("aggregates")
    problems = check(results, dataset, args.score_mode)
    micro = aggregates["micro"]
    steps_mean = micro.get("steps_score", {}).get("mean")
    expected_scores = [
        e.last_group if args.score_mode == "last_group" else e.all_groups
        for e in dataset.expected.values()
        if e.last_group is not None
    ]
    del results, aggregates
    traced = {} if args.no_tracemalloc else traced_run(dataset, config)

    def stat(key: str) -> dict[str, float]:
        values = [run[key] for run in runs]
        return {"min": min(values), "median": statistics.median(values)}

    total = [r["evaluation_s"] + r["aggregation_s"] for r in runs]
    report = {
        "benchmark": "run",
        "python": platform.python_version(),
        "questions": args.questions,
        "templates": len(dataset.reference),
        "seed": args.seed,
        "score_mode": args.score_mode,
        "repeat": args.repeat,
        "clock": args.clock,
        "outcomes": dict(outcomes),
        "input_mib": {
            "reference_json": size_mib(dataset.reference),
            "responses_json": size_mib(dataset.responses),
        },
        "generation_s": generation_s,
        "evaluation_s": stat("evaluation_s"),
        "aggregation_s": stat("aggregation_s"),
        "total_s": {"min": min(total), "median": statistics.median(total)},
        "write_jsonl_s": stat("write_jsonl_s"),
        "jsonl_mib": last["jsonl_bytes"] / 2**20,
        "max_rss_mib": {"after_generation": rss_before, "after_timed_runs": rss_after},
        "tracemalloc": traced,
        "log_records": log_records,
        "checks": {
            "mismatches": len(problems),
            "first_mismatches": problems[:10],
            "micro_steps_score_mean": steps_mean,
            "expected_steps_score_mean": statistics.fmean(expected_scores),
            "number_of_success_samples": micro.get("number_of_success_samples"),
            "number_of_error_samples": micro.get("number_of_error_samples"),
            "number_of_missing_samples": micro.get("number_of_missing_samples"),
        },
    }
    if args.json == "-":
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(render(report))
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 1 if problems else 0


def render(report: dict[str, Any]) -> str:
    def seconds(stat: dict[str, float]) -> str:
        if report["repeat"] == 1:
            return f"{stat['min']:.2f} s"
        return f"{stat['min']:.2f} s (median {stat['median']:.2f} s)"

    per_question_ms = report["total_s"]["median"] / report["questions"] * 1000
    traced = report["tracemalloc"]
    checks = report["checks"]
    lines = [
        ("questions / templates", f"{report['questions']:,} / {report['templates']}"),
        ("score mode", report["score_mode"]),
        ("clock of the timed runs", report["clock"]),
        ("outcomes", ", ".join(f"{k} {v:,}" for k, v in sorted(report["outcomes"].items()))),
        (
            "input size (as JSON)",
            f"reference {report['input_mib']['reference_json']:.1f} MiB, "
            f"responses {report['input_mib']['responses_json']:.1f} MiB",
        ),
        ("generation (not counted)", f"{report['generation_s']:.2f} s"),
        ("run_evaluation", seconds(report["evaluation_s"])),
        ("compute_aggregates", seconds(report["aggregation_s"])),
        ("total", seconds(report["total_s"]) + f"  ({per_question_ms:.2f} ms per question)"),
        (
            "write results JSONL",
            seconds(report["write_jsonl_s"]) + f"  ({report['jsonl_mib']:.1f} MiB)",
        ),
        (
            "max RSS",
            f"{report['max_rss_mib']['after_generation']:.0f} MiB after generation, "
            f"{report['max_rss_mib']['after_timed_runs']:.0f} MiB after the run",
        ),
    ]
    if traced:
        lines += [
            ("tracemalloc peak, evaluation", f"{traced['evaluation_peak_mib']:.0f} MiB"),
            ("tracemalloc peak, aggregation", f"{traced['aggregation_peak_mib']:.0f} MiB"),
            ("traced run (slowed down)", f"{traced['traced_run_s']:.2f} s"),
        ]
    lines += [
        ("log records", ", ".join(f"{k} {v}" for k, v in report["log_records"].items()) or "none"),
        (
            "micro steps_score mean",
            f"{checks['micro_steps_score_mean']:.4f} (expected "
            f"{checks['expected_steps_score_mean']:.4f})",
        ),
        (
            "samples success / error / missing",
            f"{checks['number_of_success_samples']} / {checks['number_of_error_samples']} / "
            f"{checks['number_of_missing_samples']}",
        ),
        ("scores differing from expected", str(checks["mismatches"])),
    ]
    width = max(len(label) for label, _ in lines)
    text = "\n".join(f"{label.ljust(width)}  {value}" for label, value in lines)
    for problem in checks["first_mismatches"]:
        text += f"\n  MISMATCH {problem}"
    return text


if __name__ == "__main__":
    raise SystemExit(main())
