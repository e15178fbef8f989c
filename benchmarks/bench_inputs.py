"""Benchmark of reading hostile and shared inputs (docs/security.md, "YAML and JSON bombs").

Each case runs ``graphrag-eval validate REFERENCE RESPONSES`` in its own process, as a user
would, and reports its wall time and its peak resident memory (VmHWM, read by the process as
it exits), the median of ``--repeat`` runs:

* ``large-scalar bomb``: a reference with one anchored 1 MB string and 5,000 aliases of it
  (4.66 GiB once expanded; refused in one line);
* ``shared steps``: what ``yaml.safe_dump`` writes for 2,000 questions sharing 20 step
  objects (439,780 nodes added by aliases; read);
* ``deep response``: a YAML responses file of 5,000 responses (8.5 MB) and, in a second
  file, the same with one more response nested 1,100 levels deep (past libyaml's 1,000: it
  is composed item by item, the deep one with PyYAML's own parser).

Run from the repository root::

    .venv/bin/python benchmarks/bench_inputs.py [--repeat 3]
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

import yaml

_MEASURED = """\
import runpy, sys
peak_file = sys.argv.pop(1)
try:
    runpy.run_module("graphrag_eval.cli", run_name="__main__", alter_sys=True)
finally:
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(peak_file, "w") as stream:
        stream.write(peak)
"""
LOOKUP = '{"a": 1}'


def _step(i: int) -> dict[str, object]:
    return {"name": "lookup", "args": {"n": i}, "output": LOOKUP}


def _write_cases(folder: Path) -> dict[str, tuple[Path, Path]]:
    """Each case's reference and responses."""
    small = folder / "small.yaml"
    small.write_text(
        yaml.safe_dump([{"template_id": "t", "questions": [{"id": "q0", "question_text": "Q?"}]}])
    )
    one = folder / "one.jsonl"
    one.write_text(json.dumps({"question_id": "q0", "actual_answer": "a"}) + "\n")
    bomb = folder / "bomb.yaml"
    big = "x" * 1_000_000
    bomb.write_text(
        "- template_id: t\n  questions:\n"
        f"  - {{id: q0, question_text: Q?, reference_answer: &big {big}}}\n"
        + "".join(
            f"  - {{id: q{i}, question_text: Q?, reference_answer: *big}}\n"
            for i in range(1, 5_000)
        )
    )
    steps = [_step(i) for i in range(20)]
    questions = [
        {"id": f"q{i}", "question_text": "Q?", "reference_steps": [steps[:10], steps[10:]]}
        for i in range(2_000)
    ]
    shared = folder / "shared.yaml"
    shared.write_text(yaml.safe_dump([{"template_id": "t", "questions": questions}]))
    records = [
        {"question_id": f"q{i}", "actual_answer": "answer " * 50, "actual_steps": [_step(i)]}
        for i in range(5_000)
    ]
    plain = folder / "responses.yaml"
    plain.write_text(yaml.safe_dump(records))
    deep = folder / "deep.yaml"
    deep.write_text(
        plain.read_text() + "- {question_id: qd, x: " + "[" * 1_100 + "]" * 1_100 + "}\n"
    )
    return {
        "large-scalar bomb": (bomb, one),
        "shared steps": (shared, one),
        "5,000 responses": (small, plain),
        "5,000 responses and a deep one": (small, deep),
    }


def _run(reference: Path, responses: Path, folder: Path) -> tuple[float, float, int]:
    """(wall seconds, peak MiB, exit code) of one ``validate``."""
    peak = folder / "peak"
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, str(peak), "validate", str(reference), str(responses)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    wall = time.perf_counter() - start
    return wall, int(peak.read_text()) / 1024, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        cases = _write_cases(folder)
        print("| case | input | exit | wall, median | peak memory, median |")
        print("|---|---:|---:|---:|---:|")
        for case, (reference, responses) in cases.items():
            runs = [_run(reference, responses, folder) for _ in range(args.repeat)]
            size = max(reference.stat().st_size, responses.stat().st_size) / 1e6
            wall = statistics.median(run[0] for run in runs)
            peak = statistics.median(run[1] for run in runs)
            print(f"| {case} | {size:.1f} MB | {runs[0][2]} | {wall:.2f} s | {peak:.0f} MiB |")


if __name__ == "__main__":
    main()
