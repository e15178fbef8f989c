"""List replies that don't fit: how many values the list metrics keep, and at what cost in
requests, against a judge whose lists do not fit what was asked (docs/llm.md, "Replies that
don't fit").

The judge is ``tests/judge_server.py`` on a free port, in this process, with list-shape
faults (decided per request, deterministically): ``--short`` of the list replies lose their
last entry, ``--reversed`` come in reverse order, and 10 % each repeat their first entry
(verdict flipped) or carry an entry for an item not asked. The data is N generated questions
(default 100), each with a reference answer of 2-4 claims, an answer with one wrong claim
and four retrieved contexts (two stating a claim). The metrics are ``ragas_faithfulness``,
``ragas_context_precision``, ``ragas_context_recall`` and ``answer_relevance``, through
``run_evaluation`` with a fresh cache, then the same run against the fault-free judge.

Printed per metric: the values kept (a number, not ``_error``), those computed over part of
the items (their reason says "judged" or "written"), and the values equal to the fault-free
run's (to float rounding); then the chat requests of both runs. Exits 1 when a list metric
keeps fewer than 99 %.
Run from the repository root::

    .venv/bin/python benchmarks/bench_list_replies.py [--questions 100] [--short 0.3]
        [--reversed 0.3]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from graphrag_eval import run_evaluation  # noqa: E402

from judge_server import Faults, JudgeServer  # noqa: E402

METRICS = (
    "ragas_faithfulness",
    "ragas_context_precision",
    "ragas_context_recall",
    "answer_relevance",
)
TARGET = 0.99
PLACES = ("Oslo", "Bergen", "Alta", "Molde", "Hamar", "Skien", "Larvik")


def generate(questions: int, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(seed)
    items, responses = [], []
    for q in range(questions):
        claims = [f"{rng.choice(PLACES)} T{q}x{k}" for k in range(rng.randint(2, 4))]
        items.append(
            {
                "id": f"q{q}",
                "question_text": f"Which transformers are in region {q}?",
                "reference_answer": ", ".join(claims),
            }
        )
        contexts = [f"Transformer {claim} is installed." for claim in claims[:2]]
        contexts += [f"The weather in region {q} is sunny ({i})." for i in range(2)]
        rng.shuffle(contexts)
        answer = ", ".join([*claims[:-1], f"Narvik X{q}"])
        responses.append(
            {"question_id": f"q{q}", "actual_answer": answer, "retrieved_contexts": contexts}
        )
    return [{"template_id": "regions", "questions": items}], responses


def run(server: JudgeServer, data: tuple[Any, Any], cache: Path) -> list[dict[str, Any]]:
    endpoint = {"provider": "openai-compatible", "base_url": server.url}
    config = {
        "metrics": list(METRICS),
        "llm": {
            "generation": {**endpoint, "model": "gpt-4o-mini"},
            "embedding": {**endpoint, "model": "text-embedding-3-small"},
            "cache": {"path": str(cache)},
        },
    }
    reference, responses = data
    return run_evaluation(reference, responses, config)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--short", type=float, default=0.3, help="share of short lists")
    parser.add_argument("--reversed", type=float, default=0.3, help="share of reversed lists")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args(argv)
    data = generate(args.questions, args.seed)
    faults = Faults(
        short_list=args.short,
        reversed_list=args.reversed,
        duplicate_entry=0.1,
        out_of_range_entry=0.1,
    )
    with tempfile.TemporaryDirectory(prefix="bench-lists-") as directory:
        with JudgeServer(faults=faults) as faulty:
            results = run(faulty, data, Path(directory) / "faulty.sqlite3")
            faulty_requests = faulty.count("chat/completions")
        with JudgeServer() as clean:
            expected = run(clean, data, Path(directory) / "clean.sqlite3")
            clean_requests = clean.count("chat/completions")
    fitting = {result["question_id"]: result for result in expected}
    ok = True
    print(
        f"{args.questions} questions; list replies: {args.short:.0%} short, "
        f"{args.reversed:.0%} reversed, 10 % duplicate entry, 10 % entry not asked"
    )
    for metric in METRICS:
        kept = [r for r in results if isinstance(r.get(metric), float)]
        partial = sum(
            1 for r in kept if str(r.get(f"{metric}_reason", "")).endswith(("judged", "written)"))
        )
        same = sum(
            1
            for r in kept
            if math.isclose(r[metric], fitting[r["question_id"]].get(metric, math.nan))
        )
        share = len(kept) / len(results)
        if metric != "answer_relevance":
            ok = ok and share >= TARGET
        print(
            f"{metric:24} kept {len(kept)}/{len(results)} ({share:.0%}), {partial} over part "
            f"of the items, {same} equal to the fault-free run's"
        )
    print(f"chat requests: {faulty_requests} (fault-free run: {clean_requests})")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
