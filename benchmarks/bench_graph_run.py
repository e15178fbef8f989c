"""Benchmark of a whole ``evaluate`` run that executes both sides of every SPARQL step
against the embedded store (docs/knowledge-graph.md, "Execution-based scoring").

The graph is ``bench_graph.py``'s (1,000,000 triples, seeded), and so are the 1,000
questions: each has one ``sparql_query`` reference step and a response with one equivalent
actual step, neither with an output, so ``sparql.execute: missing`` executes both sides
(2,000 queries). The command is run as a process, ``graphrag-eval evaluate REFERENCE
RESPONSES --data GRAPH -o OUT``; measured, its wall and CPU time (children included), the
loading of the graph included, and ``elapsed_sec`` of ``run.yaml`` (from reading the inputs
to the end).

Run from the repository root::

    .venv/bin/python benchmarks/bench_graph_run.py [--triples 1000000] [--questions 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_graph import generate, question


def write_inputs(folder: Path, questions: int, entities: int, seed: int) -> tuple[Path, Path]:
    """The reference (YAML) and the responses (JSON Lines) of ``questions`` questions."""
    rng = random.Random(seed)
    reference_questions, responses = [], []
    for number in range(questions):
        reference, actual = question(number, entities, rng)
        qid = f"q{number}"
        reference_questions.append(
            {
                "template_id": f"t{number % 10}",
                "id": qid,
                "question_text": f"question {number}",
                "reference_steps": [[{"name": "sparql_query", "args": {"query": reference}}]],
            }
        )
        step = {"name": "sparql_query", "args": {"query": actual}, "status": "success"}
        responses.append({"question_id": qid, "actual_answer": "", "actual_steps": [step]})
    reference_path, responses_path = folder / "reference.yaml", folder / "responses.jsonl"
    reference_path.write_text(yaml.safe_dump(_templates(reference_questions)), encoding="utf-8")
    responses_path.write_text("".join(json.dumps(r) + "\n" for r in responses), encoding="utf-8")
    return reference_path, responses_path


def _templates(questions: list[dict[str, object]]) -> list[dict[str, object]]:
    by_template: dict[object, list[dict[str, object]]] = {}
    for item in questions:
        template = item.pop("template_id")
        by_template.setdefault(template, []).append(item)
    return [{"template_id": t, "questions": qs} for t, qs in by_template.items()]


def run(command: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of ``command`` (a child process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"exit {done.returncode}: {done.stderr.strip()}")
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--triples", type=int, default=1_000_000)
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-graph-run-") as work:
        folder = Path(work)
        graph = folder / "graph.nt"
        generate(graph, args.triples, args.seed)
        reference, responses = write_inputs(folder, args.questions, args.triples // 10, args.seed)
        script = Path(sys.executable).with_name("graphrag-eval")
        out = folder / "out"
        command = [str(script), "evaluate", str(reference), str(responses), "--data", str(graph)]
        command += ["-o", str(out), "--overwrite", "--no-report", "-q"]
        print(f"{args.triples:,} triples, {args.questions:,} questions, both sides executed")
        for attempt in range(args.repeat):
            wall, cpu = run(command)
            summary = yaml.safe_load((out / "run.yaml").read_text(encoding="utf-8"))
            scored = sum(
                1
                for line in (out / "results.jsonl").read_text().splitlines()
                if json.loads(line).get("steps_score") == 1
            )
            print(
                f"run {attempt + 1}: wall {wall:6.2f} s, cpu {cpu:6.2f} s, run.yaml elapsed_sec "
                f"{summary['elapsed_sec']:.2f} s, {scored}/{args.questions} full matches, "
                f"{os.cpu_count()} cores",
                flush=True,
            )


if __name__ == "__main__":
    main()
