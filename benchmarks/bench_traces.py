"""Benchmark of responses read from traces (docs/integrations.md): 10,000 traced agent
runs, each an OTLP JSON trace with 5 tool spans (OpenInference) and an LLM span, made by the
OpenTelemetry SDK and the OTLP exporter's encoder and written as the collector's file
exporter does (one export of 100 traces per line), against the same responses in our own
format (what ``graphrag-eval import`` writes from them).

Each ``graphrag-eval evaluate`` runs in its own process, as a user runs it, ``--repeat``
times (alternating); the figures are each one's median wall time, CPU time (the process's
own, user and system) and peak memory. The target: the traces evaluated in under twice the
time of the same responses in our own format.

Run from the repository root (the ``dev`` extra)::

    .venv/bin/python benchmarks/bench_traces.py [--questions 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import trace_fixtures as fx

TOOLS = 5
PER_LINE = 100


def _calls(i: int) -> list[fx.Call]:
    """5 tool calls, the last of which fails; the first is the one the reference expects."""
    query = f"SELECT ?s WHERE {{ ?s ?p {i} }}"
    calls: list[fx.Call] = [("run_sparql", {"query": query}, fx.SPARQL_OUTPUT, False)]
    calls += [("lookup", {"n": i, "k": k}, json.dumps({"k": k}), False) for k in range(TOOLS - 2)]
    calls.append(("run_sparql", {"query": "SELECT broken"}, "syntax error", True))
    return calls


def write_inputs(folder: Path, questions: int) -> tuple[Path, Path, Path]:
    """The reference (JSON), the traces (OTLP JSON Lines) and the config."""
    reference = [
        {
            "template_id": "t",
            "questions": [
                {
                    "id": f"q{i}",
                    "question_text": "Which s?",
                    "reference_answer": fx.ANSWER,
                    "reference_steps": [
                        [
                            {
                                "name": "sparql_query",
                                "args": {"query": f"SELECT ?s WHERE {{ ?s ?p {i} }}"},
                                "output": fx.SPARQL_OUTPUT,
                            }
                        ]
                    ],
                }
                for i in range(questions)
            ],
        }
    ]
    reference_path = folder / "reference.json"
    reference_path.write_text(json.dumps(reference), encoding="utf-8")
    traces_path = folder / "traces.jsonl"
    with traces_path.open("w", encoding="utf-8") as stream:
        for start in range(0, questions, PER_LINE):
            ids = range(start, min(start + PER_LINE, questions))
            document = _traces([f"q{i}" for i in ids], [_calls(i) for i in ids])
            stream.write(json.dumps(document) + "\n")
    config = folder / "config.yaml"
    config.write_text("traces:\n  tool_names: {run_sparql: sparql_query}\n", encoding="utf-8")
    return reference_path, traces_path, config


def _traces(question_ids: list[str], calls: list[list[fx.Call]]) -> dict[str, object]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    collector = fx._Collector()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(collector))
    tracer = provider.get_tracer("agent")
    for question_id, its_calls in zip(question_ids, calls, strict=True):
        fx._agent_run(tracer, question_id, "openinference", its_calls, fx.ANSWER, "question_id")
    provider.shutdown()
    return fx.encode_otlp_json(collector.spans)


def run(args: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak MiB) of one command, in its own process (its own resource
    usage, from ``wait4``)."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "graphrag_eval.cli", *args],
            stdout=subprocess.DEVNULL,
            stderr=errors,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = code = os.waitstatus_to_exitcode(status)
        if code != 0:
            errors.seek(0)
            raise SystemExit(f"{' '.join(args)} exited {code}: {errors.read().decode()}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        started = time.perf_counter()
        reference, traces, config = write_inputs(folder, options.questions)
        made = time.perf_counter() - started
        native = folder / "responses.jsonl"
        imported = run(["import", "otlp", str(traces), "-c", str(config), "-o", str(native)])
        print(
            f"{options.questions:,} traces of {TOOLS} tool spans made in {made:.1f} s: "
            f"{traces.stat().st_size / 1e6:.1f} MB of OTLP JSON; our own format "
            f"{native.stat().st_size / 1e6:.1f} MB; import {imported[0]:.2f} s wall"
        )
        cases = {
            "our own format": [str(reference), str(native)],
            "OTLP JSON traces": [str(reference), str(traces), "-c", str(config)],
        }
        timings: dict[str, list[tuple[float, float, float]]] = {case: [] for case in cases}
        for repeat in range(options.repeat):
            for case, inputs in cases.items():
                out = folder / f"out-{len(timings[case])}-{repeat}-{case[:3]}"
                timings[case].append(
                    run(["evaluate", *inputs, "-o", str(out), "--no-report", "-q"])
                )
        print("| responses | wall, median | CPU, median | peak memory |")
        print("|---|---:|---:|---:|")
        medians = {}
        for case, runs in timings.items():
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            medians[case] = (wall, cpu)
            print(f"| {case} | {wall:.2f} s | {cpu:.2f} s | {max(r[2] for r in runs):.0f} MiB |")
        (native_wall, native_cpu), (trace_wall, trace_cpu) = medians.values()
        print(f"ratio: {trace_wall / native_wall:.2f} (wall), {trace_cpu / native_cpu:.2f} (CPU)")


if __name__ == "__main__":
    main()
