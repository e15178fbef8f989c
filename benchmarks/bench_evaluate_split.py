"""How much of ``graphrag-eval evaluate``'s CPU a process pool over items could take over.

Runs the command in this process (``graphrag-eval evaluate ARGS...``, the arguments given
as they are) with timers around the per-item work a worker process could do instead of the
parent: scoring an item (``evaluate_item``, the compact question's ``load`` included), making
its record (``to_record``) and encoding its ``results.jsonl`` line. Everything else (reading
and validating the inputs, writing the lines in reference order, folding the aggregates, the
checkpoint, the report, start-up) stays in the parent. Prints each part's CPU seconds
(``time.process_time``), the process's CPU (user + system) and the bound on the speed-up
with two cores that follows (Amdahl: the parallel part halved, nothing paid for sending
the items and their lines between processes), as JSON on standard error::

    python benchmarks/bench_evaluate_split.py evaluate REFERENCE RESPONSES -c CONFIG \\
        -o OUT -q --no-progress
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import sys
import time
from collections.abc import Callable
from typing import Any

from graphrag_eval.evaluation import items
from graphrag_eval.inputs.reference import CompactQuestion
from graphrag_eval.results import results_log

spent = {"evaluate_item": 0.0, "compact_load": 0.0, "to_record": 0.0, "encode_line": 0.0}


def _timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[name] += time.process_time() - started

    return timed


def _timed_async(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    async def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()  # a run without services: nothing else runs meanwhile
        try:
            return await function(*args, **kwargs)
        finally:
            spent[name] += time.process_time() - started

    return timed


def _report() -> None:
    times = os.times()
    process = times.user + times.system
    parallel = sum(spent.values())
    bound = process / (process - parallel / 2) if process > parallel / 2 else float("inf")
    figures = {name: round(value, 3) for name, value in spent.items()}
    figures |= {
        "per_item_total": round(parallel, 3),
        "process_cpu": round(process, 3),
        "two_core_bound": round(bound, 3),
    }
    print(json.dumps(figures), file=sys.stderr)


def main() -> None:
    items.evaluate_item = _timed_async("evaluate_item", items.evaluate_item)  # type: ignore[attr-defined]
    items.to_record = _timed("to_record", items.to_record)  # type: ignore[attr-defined]
    results_log.results_jsonl_text = _timed("encode_line", results_log.results_jsonl_text)  # type: ignore[attr-defined]
    CompactQuestion.load = _timed("compact_load", CompactQuestion.load)  # type: ignore[method-assign]
    atexit.register(_report)
    sys.argv = ["graphrag-eval", *sys.argv[1:]]
    runpy.run_module("graphrag_eval.cli", run_name="__main__")


if __name__ == "__main__":
    main()
