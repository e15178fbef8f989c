"""The floor under ``graphrag-eval evaluate``: what any run on the same files must spend
before it scores anything, with the fastest JSON codecs the package has.

On the ``bench_run.py`` data written to files (``--data``, made by
``bench_evaluate_pair.py``'s ``write_data`` when missing), this times, as CPU seconds of the
process concerned (``time.process_time``; the start-up in child processes, by the kernel's
accounting), the median of ``--repeat`` runs:

- **start-up**: a fresh interpreter, then the same importing ``graphrag_eval.cli.evaluate``
  (what the command imports before it reads the reference; the report's writer and the
  console's tables come later, when used, and are not counted);
- **inputs decoded**: the reference document and every responses line, by msgspec (what the
  package uses, the fastest JSON decoder it has), from bytes already in memory;
- **SPARQL results decoded**: every step ``output`` that is SPARQL results JSON text, on both
  sides (the reference's and the responses' steps), decoded once by msgspec into plain
  objects (scoring needs at least that);
- **results encoded**: the run's ``results.jsonl`` records (from one real run of the
  command, made here unless ``--results`` names one) encoded again as the file has them (the
  ``json`` module's C encoder with its separators), and, as a bound below any format, by
  msgspec's compact encoder;
- **results read back**: ``results.jsonl`` decoded by msgspec, which the HTML report needs
  (it reads the run's results back from the file).

The floor is start-up + inputs decoded + SPARQL results decoded + results encoded (as the file
has them); with the results read back, the floor of a run that also writes its report as it
does now. Printed with the target the caller gives (``--target-s``) and what the target
leaves for everything else per question: matching the steps, comparing the results, making
each result, folding the aggregates, the report. Run from the repository root::

    python benchmarks/bench_evaluate_floor.py --data /tmp/b10k --target-s 2
    python benchmarks/bench_evaluate_floor.py --data /tmp/b100k --questions 100000 \\
        --target-s 20 --repeat 1
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from bench_evaluate_pair import write_data

STARTUP = (
    "import os, subprocess, sys\n"
    "child = subprocess.Popen(sys.argv[1:])\n"
    "_, status, usage = os.wait4(child.pid, 0)\n"
    "assert os.waitstatus_to_exitcode(status) == 0\n"
    "print(usage.ru_utime + usage.ru_stime)\n"
)
"""Runs its arguments as a child process and prints the child's CPU seconds."""


def child_cpu(*command: str) -> float:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed package runs: from bytecode
    done = subprocess.run(
        [sys.executable, "-c", STARTUP, *command],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return float(done.stdout)


def cpu(work: Callable[[], Any]) -> float:
    """CPU seconds of ``work``, the garbage collector paused (the package pauses or tunes it
    too: a floor should not count its passes over the decoded documents)."""
    gc.disable()
    try:
        started = time.process_time()
        work()
        return time.process_time() - started
    finally:
        gc.enable()


def each(work: Callable[[Any], Any], items: list[Any]) -> None:
    """``work`` on each item, its value dropped at once (as a run that streams drops it)."""
    for item in items:
        work(item)


def sparql_texts(steps: Any) -> Iterator[str]:
    """The step outputs in ``steps`` (a list of steps or of groups of steps) that are SPARQL
    results JSON text."""
    for entry in steps or ():
        for step in entry if isinstance(entry, list) else (entry,):
            output = step.get("output") if isinstance(step, dict) else None
            if isinstance(output, str) and output.lstrip().startswith("{"):
                yield output


def all_sparql_texts(reference: Any, responses: list[Any]) -> list[str]:
    texts: list[str] = []
    for template in reference:
        for question in template.get("questions", ()):
            texts.extend(sparql_texts(question.get("reference_steps")))
    for response in responses:
        texts.extend(sparql_texts(response.get("actual_steps")))
    return texts


def results_file(data: Path, given: Path | None, folder: Path) -> Path:
    """``given``, or the ``results.jsonl`` of one run of the command on ``data``."""
    if given is not None:
        return given
    out = folder / "out"
    command = [sys.executable, "-m", "graphrag_eval.cli", "evaluate"]
    command += [str(data / "reference.json"), str(data / "responses.jsonl")]
    command += ["-c", str(data / "config.json"), "-q", "--no-progress", "-o", str(out)]
    subprocess.run(command, check=True)
    return out / "results.jsonl"


def measure(data: Path, results_path: Path) -> dict[str, float]:
    """One of each timing, CPU seconds."""
    reference_bytes = (data / "reference.json").read_bytes()
    response_lines = (data / "responses.jsonl").read_bytes().splitlines()
    result_lines = results_path.read_bytes().splitlines()
    decoder = msgspec.json.Decoder()
    decoded: dict[str, Any] = {}

    def decode_inputs() -> None:
        decoded["reference"] = decoder.decode(reference_bytes)
        decoded["responses"] = [decoder.decode(line) for line in response_lines]

    figures = {"inputs decoded": cpu(decode_inputs)}
    texts = all_sparql_texts(decoded["reference"], decoded["responses"])
    figures["SPARQL results decoded"] = cpu(lambda: each(decoder.decode, texts))
    figures["results read back"] = cpu(lambda: each(decoder.decode, result_lines))
    records = [decoder.decode(line) for line in result_lines]
    as_file = json.JSONEncoder(ensure_ascii=False)  # the separators results.jsonl has
    figures["results encoded (the file's format)"] = cpu(
        lambda: [as_file.encode(record) for record in records]
    )
    compact = msgspec.json.Encoder()
    figures["results encoded (compact, msgspec)"] = cpu(
        lambda: [compact.encode(record) for record in records]
    )
    figures["SPARQL texts"] = len(texts)
    figures["results MB"] = sum(map(len, result_lines)) / 1e6
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="data directory (made if empty)")
    parser.add_argument("--questions", type=int, default=10_000, help="when making the data")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--results", type=Path, help="results.jsonl of a run on that data")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--target-s", type=float, default=2.0, help="the target to compare")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    write_data(args.data, args.questions, args.seed, "last_group")
    reference = msgspec.json.decode((args.data / "reference.json").read_bytes())
    questions = sum(len(template.get("questions", ())) for template in reference)
    del reference
    with tempfile.TemporaryDirectory() as folder:
        results_path = results_file(args.data, args.results, Path(folder))
        runs = [measure(args.data, results_path) for _ in range(args.repeat)]
        startup = [child_cpu(sys.executable, "-c", "pass") for _ in range(args.repeat)]
        imports = [
            child_cpu(sys.executable, "-c", "import graphrag_eval.cli.evaluate")
            for _ in range(args.repeat)
        ]
    figures = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    figures["interpreter start"] = statistics.median(startup)
    figures["start-up (interpreter and imports)"] = statistics.median(imports)
    floor = (
        figures["start-up (interpreter and imports)"]
        + figures["inputs decoded"]
        + figures["SPARQL results decoded"]
        + figures["results encoded (the file's format)"]
    )
    figures["floor"] = floor
    figures["floor, the results read back too"] = floor + figures["results read back"]
    figures["questions"] = questions
    figures["target s"] = args.target_s
    left = args.target_s - figures["floor, the results read back too"]
    figures["left for the rest, s"] = left
    figures["left per question, us"] = 1e6 * left / questions
    for key, value in figures.items():
        shown = f"{value:,.0f}" if key in ("questions", "SPARQL texts") else f"{value:.3f}"
        print(f"{key:40} {shown}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
