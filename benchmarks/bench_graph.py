"""Benchmark of the embedded store (docs/knowledge-graph.md, "An embedded store") on a
generated graph of 1,000,000 triples (seeded).

The graph: 100,000 entities, each typed with one of 20 classes, with a name, an integer
value and seven links to other entities (predicates ``r0`` to ``r6``): 10 triples each,
written as one N-Triples file. Measured, wall and CPU time (this process):

* ``load``: loading it into an in-memory store, with the file's SHA-256 and the content
  fingerprint (what every run without ``store_directory`` does);
* ``build``: the same into ``store_directory`` (on disk, with its manifest);
* ``reuse``: opening it again from ``store_directory`` (the files unchanged);
* ``questions``: 1,000 questions of 10 templates, both sides executed (2,000 queries through
  ``EmbeddedStore.execute``, concurrently, ``sparql.concurrency`` 8) and their results
  compared with the SPARQL results comparison of docs/steps.md;
* ``test_suite`` (with ``--copies K``): the same 1,000 questions' test-suite accuracy on K
  perturbed copies (the partition of the graph and the copies built as they are needed),
  then ``again`` (all built: the queries alone).

Run from the repository root::

    .venv/bin/python benchmarks/bench_graph.py [--triples 1000000] [--copies 0] [--work DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from graphrag_eval.config.sparql import SparqlConfig, TestSuiteConfig
from graphrag_eval.graph.embedded import EmbeddedStore, load_embedded
from graphrag_eval.graph.perturb import perturbed_copies
from graphrag_eval.graph.query_terms import query_terms
from graphrag_eval.steps.sparql import compare_sparql_results

EX = "http://example.org/"
TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
LINKS = 7
TEMPLATES = 10
T = TypeVar("T")


def generate(path: Path, triples: int, seed: int) -> None:
    """``triples`` triples (rounded down to tens) of ``triples // 10`` entities."""
    rng = random.Random(seed)
    entities = triples // 10
    with path.open("w", encoding="utf-8") as out:
        for i in range(entities):
            s = f"<{EX}e{i}>"
            lines = [
                f"{s} <{TYPE}> <{EX}C{i % 20}> .\n",
                f'{s} <{EX}name> "E{i}" .\n',
                f'{s} <{EX}value> "{rng.randrange(1_000_000)}"^^<{INTEGER}> .\n',
            ]
            lines += [f"{s} <{EX}r{k}> <{EX}e{rng.randrange(entities)}> .\n" for k in range(LINKS)]
            out.write("".join(lines))


def question(number: int, entities: int, rng: random.Random) -> tuple[str, str]:
    """The reference query of a question and the actual one (equivalent, written otherwise:
    other variable names, the patterns in another order)."""
    template = number % TEMPLATES
    entity = f"<{EX}e{rng.randrange(entities)}>"
    link = f"<{EX}r{template % LINKS}>"
    if template < LINKS:
        reference = f"SELECT ?o ?n WHERE {{ {entity} {link} ?o . ?o <{EX}name> ?n }}"
        actual = f"SELECT ?name ?x WHERE {{ ?x <{EX}name> ?name . {entity} {link} ?x }}"
    elif template == LINKS:
        reference = f"SELECT ?c WHERE {{ {entity} <{TYPE}> ?c }}"
        actual = f"SELECT ?class WHERE {{ {entity} a ?class }}"
    else:
        reference = (
            f"SELECT ?o ?v WHERE {{ {entity} ?p ?o . ?o <{EX}value> ?v . ?o a <{EX}C{template}> }}"
        )
        actual = (
            f"SELECT ?v ?o WHERE {{ ?o a <{EX}C{template}> . {entity} ?any ?o . "
            f"?o <{EX}value> ?v }}"
        )
    return reference, actual


def timed(label: str, work: Callable[[], T]) -> tuple[T, dict[str, Any]]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    figures = {
        "wall_s": round(time.perf_counter() - wall, 3),
        "cpu_s": round(time.process_time() - cpu, 3),
    }
    print(
        f"{label:<12} wall {figures['wall_s']:7.3f} s   cpu {figures['cpu_s']:7.3f} s", flush=True
    )
    return result, figures


async def both_sides(store: EmbeddedStore, questions: list[tuple[str, str]]) -> int:
    """Executes both sides of every question concurrently; how many agree."""

    async def one(reference: str, actual: str) -> int:
        ref, act = await asyncio.gather(store.execute(reference), store.execute(actual))
        if ref.results is None or act.results is None:
            raise RuntimeError(ref.error or act.error)
        return compare_sparql_results(ref.results, act.results)

    return sum(await asyncio.gather(*(one(r, a) for r, a in questions)))


async def test_suite(store: EmbeddedStore, questions: list[tuple[str, str]], copies: int) -> float:
    settings = TestSuiteConfig(copies=copies)
    suite = perturbed_copies(store, settings)

    async def one(reference: str, actual: str) -> int:
        terms = query_terms(reference)
        agreed = 0
        for copy in range(copies):
            graphs = await suite.graphs(terms, copy)
            ref, act = await asyncio.gather(
                suite.execute(reference, graphs), suite.execute(actual, graphs)
            )
            assert ref.results is not None and act.results is not None
            agreed += compare_sparql_results(ref.results, act.results)
        return agreed

    agreed = sum(await asyncio.gather(*(one(r, a) for r, a in questions)))
    return agreed / (len(questions) * copies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triples", type=int, default=1_000_000)
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--copies", type=int, default=0, help="also time test-suite accuracy")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, help="where the graph and store go (default: temp)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        data = work / "graph.nt"
        if not data.exists():
            generate(data, args.triples, args.seed)
        print(f"graph: {data} ({data.stat().st_size / 1e6:.1f} MB)")
        figures: dict[str, Any] = {}
        memory = SparqlConfig(data=[str(data)])
        store, figures["load"] = timed("load", lambda: load_embedded(memory))
        print(f"             {store.identity.details['triples']:,} triples, {store.identity.label}")
        shutil.rmtree(work / "store", ignore_errors=True)  # a build, not a reuse
        kept = SparqlConfig(data=[str(data)], store_directory=str(work / "store"))
        _, figures["build"] = timed("build", lambda: load_embedded(kept))
        reused, figures["reuse"] = timed("reuse", lambda: load_embedded(kept))
        assert reused.identity == store.identity
        rng = random.Random(args.seed)
        entities = args.triples // 10
        questions = [question(n, entities, rng) for n in range(args.questions)]
        agreed, figures["questions"] = timed(
            "questions", lambda: asyncio.run(both_sides(store, questions))
        )
        print(f"             {agreed} of {len(questions)} agree")
        if args.copies:
            share, figures["test_suite"] = timed(
                "test_suite", lambda: asyncio.run(test_suite(store, questions, args.copies))
            )
            print(f"             test-suite accuracy {share:.3f} on {args.copies} copies")
            _, figures["test_suite_again"] = timed(
                "again", lambda: asyncio.run(test_suite(store, questions, args.copies))
            )
        if args.json:
            args.json.write_text(json.dumps(figures, indent=1) + "\n", "utf-8")


if __name__ == "__main__":
    sys.exit(main())
