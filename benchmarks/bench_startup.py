"""Paired benchmark of the command line's start-up: this tree against another checkout.

Three measures, each a fresh process per tree in turn (``--repeat`` pairs), the source of
each tree first on ``PYTHONPATH``, its CPU time (user + system) as the kernel accounts it
for the finished process:

- ``import``: ``python -c "import graphrag_eval.cli.app"``;
- ``help``: ``graphrag-eval --help`` (the console script beside this interpreter);
- ``evaluate``: ``graphrag-eval evaluate REFERENCE RESPONSES -c CONFIG -o OUT -q
  --no-progress`` up to its first opening of the reference: an audit hook ends the process
  there (``os._exit``), so the figure is the start-up before the run reads anything.

``graphrag-eval --help`` and ``graphrag-eval evaluate --help`` must print the same in both
trees: a difference is reported and makes the exit code 1. Figures are medians (and the
ratio this / base, pair by pair, min-max).

Run from the repository root, with a worktree of the base commit and the data of
``bench_evaluate_pair.py`` (``--data``)::

    git worktree add --detach ../base 3104361
    .venv/bin/python benchmarks/bench_startup.py --base ../base --data /tmp/b10k --repeat 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "graphrag-eval"

STOP_AT_REFERENCE = """\
import os, sys
reference = os.path.abspath(sys.argv[1])

def stop(event, args):
    if event == "open" and isinstance(args[0], str) and os.path.abspath(args[0]) == reference:
        os._exit(0)

sys.addaudithook(stop)
sys.argv = ["graphrag-eval", "evaluate", *sys.argv[1:]]
from graphrag_eval.cli import main
sys.exit(main())
"""


def cpu_of(command: list[str], tree: Path) -> tuple[float, str]:
    """The CPU seconds (user + system) of ``command`` run with ``tree``'s source, and its
    standard output."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        printed = out.read().decode()
    if process.returncode != 0:
        raise SystemExit(f"{command} in {tree} exited {process.returncode}")
    return usage.ru_utime + usage.ru_stime, printed


def commands(data: Path, out: Path) -> dict[str, list[str]]:
    evaluate = [
        *(str(data / name) for name in ("reference.json", "responses.jsonl")),
        *("-c", str(data / "config.json"), "-o", str(out), "-q", "--no-progress"),
    ]
    return {
        "import": [sys.executable, "-c", "import graphrag_eval.cli.app"],
        "help": [sys.executable, str(SCRIPT), "--help"],
        "evaluate": [sys.executable, "-c", STOP_AT_REFERENCE, *evaluate],
    }


def same_help(base: Path) -> bool:
    """Whether both trees print the same ``--help`` (the group's and evaluate's)."""
    same = True
    for args in (["--help"], ["evaluate", "--help"]):
        printed = [cpu_of([sys.executable, str(SCRIPT), *args], tree)[1] for tree in (HERE, base)]
        if printed[0] != printed[1]:
            print(f"DIFFERENT: graphrag-eval {' '.join(args)}")
            same = False
    return same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--data", type=Path, required=True, help="bench_evaluate_pair's data")
    parser.add_argument("--repeat", type=int, default=5, help="pairs per measure")
    args = parser.parse_args()
    base = args.base.resolve()
    same = same_help(base)
    with tempfile.TemporaryDirectory() as folder:
        for name, command in commands(args.data.resolve(), Path(folder) / "out").items():
            this, other = [], []
            for _ in range(args.repeat):
                this.append(cpu_of(command, HERE)[0])
                other.append(cpu_of(command, base)[0])
            ratios = [a / b for a, b in zip(this, other, strict=True)]
            print(
                f"{name:9} this {statistics.median(this):.3f} s  base "
                f"{statistics.median(other):.3f} s  ratio {statistics.median(ratios):.2f} "
                f"({min(ratios):.2f}-{max(ratios):.2f})"
            )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
