"""Batch mode benchmark (docs/benchmarks.md, "Batch mode"): a judged run of N questions
(default 2,000) in batch mode against the test server's OpenAI Files and Batches routes,
against the same run made synchronously.

Everything goes through the real command line (``graphrag-eval evaluate``, a subprocess);
the test server (``tests/judge_server.py``, with ``tests/batch_api.py``) runs in this
process and counts what it receives. The metrics are ``answer_correctness`` (one judge call
per item) and ``ragas_faithfulness`` (claims, then their verdicts: two calls in sequence), so
3 N judge requests in all.

1. The synchronous run (``--no-cache``): its wall time, judge requests and cost.
2. The batch run (``--batch``, a fresh cache): the server holds its batches ``in_progress``;
   once the first batch has been polled the process is killed (SIGKILL); the server releases
   the batches and ``--resume`` finishes the run.

Checked (exit 1 when one is missed): the batch runs made 0 synchronous judge calls; every
custom id was submitted exactly once (none twice across the kill); the values equal the
synchronous run's (per question id, without the timing keys and the ``_cost`` keys, which
are at the batch price in batch mode); the batch run's cost is 50%
of the synchronous run's (at the batch prices of the price table, where it has them: run.yaml
``llm.batch_prices``; else the tokens are compared, which the cost is proportional to).

Run from the repository root::

    .venv/bin/python benchmarks/bench_batch.py [--questions 2000] [--poll 0.2] [--keep]
        [--json [PATH]]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from judge_server import JudgeServer  # noqa: E402

METRICS = ["answer_correctness", "ragas_faithfulness"]


def write_inputs(folder: Path, count: int) -> tuple[Path, Path]:
    """N distinct questions with reference answers, answers and one retrieved context."""
    questions = [
        {
            "id": f"q{i}",
            "question_text": f"Which transformers are in substation S{i}?",
            "reference_answer": ", ".join(f"T{i}{c}" for c in "abcd"[: 1 + i % 4]),
        }
        for i in range(count)
    ]
    reference = folder / "reference.yaml"
    templates = [
        {"template_id": f"t{t}", "questions": questions[t::10]} for t in range(min(10, count))
    ]
    reference.write_text(yaml.safe_dump(templates))
    responses = folder / "responses.jsonl"
    lines = [
        json.dumps(
            {
                "question_id": f"q{i}",
                "actual_answer": f"Substation S{i} has T{i}a, and T{i}x.",
                "retrieved_contexts": [f"Substation S{i} holds transformer T{i}a."],
            }
        )
        for i in range(count)
    ]
    responses.write_text("\n".join(lines) + "\n")
    return reference, responses


def write_config(folder: Path, url: str, poll_s: float) -> Path:
    llm = {
        "generation": {"provider": "openai-compatible", "base_url": url, "model": "gpt-4o-mini"},
        "batch_provider": "openai",
        "batch_poll_s": poll_s,
        "max_concurrency": 64,
        "cache": {"path": str(folder / "cache.sqlite3")},
    }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump({"metrics": METRICS, "llm": llm}))
    return path


def command(reference: Path, responses: Path, config: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "graphrag_eval.cli",
        "evaluate",
        str(reference),
        str(responses),
        "-c",
        str(config),
        "-o",
        str(out),
        "-q",
        "--no-progress",
        *extra,
    ]


def environment() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    source = str(ROOT / "src")
    return {
        **os.environ,
        "PYTHONPATH": f"{source}{os.pathsep}{path}" if path else source,
        "OPENAI_API_KEY": "sk-bench-not-a-real-key",
        "PYTHONUNBUFFERED": "1",
    }


def results(out: Path) -> dict[str, dict[str, Any]]:
    """Each question's values, without the timing keys and each metric's ``_cost`` (at the
    batch price in batch mode: compared apart)."""
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return {
        record["question_id"]: {
            k: v for k, v in record.items() if "elapsed" not in k and not k.endswith("_cost")
        }
        for record in records
    }


def item_costs(out: Path) -> float:
    """The sum of the items' ``<metric>_cost`` values."""
    total = 0.0
    for line in (out / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        total += sum(v for k, v in record.items() if k.endswith("_cost") and v is not None)
    return total


def llm_of(out: Path) -> dict[str, Any]:
    info: dict[str, Any] = yaml.safe_load((out / "run.yaml").read_text())["llm"]
    return info


def run(argv: list[str], **kwargs: Any) -> tuple[int, float]:
    started = time.perf_counter()
    code = subprocess.run(argv, env=environment(), check=False, **kwargs).returncode
    return code, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--poll", type=float, default=0.2, help="llm.batch_poll_s")
    parser.add_argument("--keep", action="store_true", help="keep the working directory")
    parser.add_argument("--json", nargs="?", const="-", help="also write the figures as JSON")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    try:
        return bench(work, args)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def bench(work: Path, args: argparse.Namespace) -> int:
    reference, responses = write_inputs(work, args.questions)
    with JudgeServer() as server:
        (work / "sync").mkdir()
        config = write_config(work / "sync", server.url, args.poll)
        code, sync_s = run(command(reference, responses, config, work / "sync-out", "--no-cache"))
        assert code == 0, f"the synchronous run exited {code}"
        sync_calls = server.count("/chat/completions")
        server.reset()

        api = server.batch_api
        api.hold = True
        (work / "batch").mkdir()
        config = write_config(work / "batch", server.url, args.poll)
        out = work / "batch-out"
        argv = command(reference, responses, config, out, "--batch")
        started = time.perf_counter()
        process = subprocess.Popen(argv, env=environment())
        polled = api.wait_for(lambda state: state.polls >= 1, timeout_s=600)
        submitted_before_kill = sum(api.submitted.values())
        process.send_signal(signal.SIGKILL)
        process.wait()
        killed_s = time.perf_counter() - started
        assert polled, "the batch run never polled a batch"
        api.release()
        code, resume_s = run([*argv, "--resume"])
        assert code == 0, f"the resumed batch run exited {code}"
        batch_sync_calls = server.count("/chat/completions")
        submitted = dict(api.submitted)
        batches = [len(ids) for ids in api.batches]

    sync_llm, batch_llm = llm_of(work / "sync-out"), llm_of(out)
    same = results(work / "sync-out") == results(out)
    tokens = ("input_tokens", "output_tokens")
    same_tokens = all(sync_llm[key] == batch_llm[key] for key in tokens)
    share = batch_llm["cost_usd"] / sync_llm["cost_usd"] if sync_llm["cost_usd"] else None
    sync_items, batch_items = item_costs(work / "sync-out"), item_costs(out)
    item_share = batch_items / sync_items if sync_items else None
    priced = bool(batch_llm.get("batch_prices"))
    figures = {
        "questions": args.questions,
        "sync": {
            "wall_s": round(sync_s, 2),
            "judge_requests": sync_calls,
            "cost_usd": sync_llm["cost_usd"],
            **{key: sync_llm[key] for key in tokens},
        },
        "batch": {
            "wall_s_until_kill": round(killed_s, 2),
            "requests_submitted_before_kill": submitted_before_kill,
            "wall_s_resume": round(resume_s, 2),
            "synchronous_judge_calls": batch_sync_calls,
            "batches": batches,
            "custom_ids": len(submitted),
            "submitted_more_than_once": sum(1 for n in submitted.values() if n > 1),
            "cost_usd": batch_llm["cost_usd"],
            "batch_prices": batch_llm.get("batch_prices"),
            **{key: batch_llm[key] for key in tokens},
        },
        "same_results": same,
        "cost_share": None if share is None else round(share, 4),
        "item_cost_share": None if item_share is None else round(item_share, 4),
    }
    checks = {
        "0 synchronous judge calls in batch mode": batch_sync_calls == 0,
        "every custom id submitted once": figures["batch"]["submitted_more_than_once"] == 0,
        "every judge request in a batch": len(submitted) == sync_calls,
        "same values as the synchronous run (costs apart)": same,
        "same tokens as the synchronous run": same_tokens,
    }
    if priced:
        checks["cost 50% of the synchronous run's"] = share is not None and abs(share - 0.5) < 1e-3
        checks["items' costs 50% of the synchronous run's"] = (
            item_share is not None and abs(item_share - 0.5) < 1e-3
        )
    report(figures, checks, priced)
    if args.json:
        text = json.dumps({"figures": figures, "checks": checks}, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n")
    return 0 if all(checks.values()) else 1


def report(figures: dict[str, Any], checks: dict[str, bool], priced: bool) -> None:
    sync, batch = figures["sync"], figures["batch"]
    print(f"{figures['questions']:,} questions, metrics {', '.join(METRICS)}")
    print(
        f"synchronous: {sync['judge_requests']:,} judge requests, {sync['wall_s']} s, "
        f"${sync['cost_usd']:.4f} ({sync['input_tokens']:,} + {sync['output_tokens']:,} tokens)"
    )
    print(
        f"batch: killed after {batch['wall_s_until_kill']} s with "
        f"{batch['requests_submitted_before_kill']:,} requests submitted; --resume "
        f"{batch['wall_s_resume']} s; batches {batch['batches']}; "
        f"{batch['synchronous_judge_calls']} synchronous judge calls; "
        f"${batch['cost_usd']:.4f} ({batch['input_tokens']:,} + {batch['output_tokens']:,} "
        "tokens)"
    )
    if priced:
        print(
            f"cost: {figures['cost_share']:.1%} of the synchronous run's (the items' "
            f"<metric>_cost: {figures['item_cost_share']:.1%})"
        )
    else:
        print("cost: no batch prices in this build's price table; the tokens are compared")
    for name, passed in checks.items():
        print(f"  [{'ok' if passed else 'MISSED'}] {name}")


if __name__ == "__main__":
    sys.exit(main())
