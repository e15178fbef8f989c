"""Benchmark of the query diagnosis (docs/knowledge-graph.md, "Why a query is wrong:
``query_diagnosis``"): the cost of one reference/actual pair of SPARQL queries, both parsed by
rdflib's SPARQL 1.1 parser, translated to its algebra and compared.

Cases:

* ``example``: the bundled example's longest query (538 characters, GraphDB-style undeclared
  prefixes) against the same query with one predicate changed;
* ``typical``: a 300-character query with prefixes, OPTIONAL, FILTER, ORDER BY and LIMIT
  against a variant with renamed variables, another predicate and another LIMIT;
* ``aggregate``: a GROUP BY / COUNT query against a SUM variant;
* ``worst``: a query at the length cap made of one long FILTER disjunction (the grammar rdflib
  parses slowest), against itself with one value changed.

Also the one-time import of rdflib's SPARQL parser (in a fresh process).

Run from the repository root::

    .venv/bin/python benchmarks/bench_query_diagnosis.py [--repeat 30]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from graphrag_eval.graph.diagnosis import diagnose_queries
from graphrag_eval.graph.query_shape import MAX_QUERY_CHARACTERS

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EX = "PREFIX ex: <http://example.org/>\nPREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"


def _example_query() -> str:
    longest = ""
    for line in (EXAMPLES / "responses.jsonl").read_text(encoding="utf-8").splitlines():
        for step in json.loads(line).get("actual_steps") or ():
            query = (step.get("args") or {}).get("query") if isinstance(step, dict) else None
            if isinstance(query, str) and len(query) > len(longest):
                longest = query
    return longest


def cases() -> dict[str, tuple[str, str]]:
    example = _example_query()
    typical = (
        EX + "SELECT ?person ?name ?age WHERE {\n  ?person a ex:Person ; rdfs:label ?name ;\n"
        "          ex:age ?age .\n  OPTIONAL { ?person ex:email ?mail }\n"
        "  FILTER(?age > 30 && lang(?name) = 'en')\n} ORDER BY DESC(?age) LIMIT 10"
    )
    variant = typical.replace("?person", "?p").replace("ex:age", "ex:height").replace("10", "5")
    aggregate = (
        EX + "SELECT ?org (COUNT(?member) AS ?n) WHERE { ?org a ex:Org ; ex:member ?member }"
        " GROUP BY ?org HAVING (COUNT(?member) > 2) ORDER BY DESC(?n)"
    )
    disjunction, n = "", 0
    while True:
        longer = (
            EX
            + "SELECT ?x WHERE { ?x ex:v ?v FILTER("
            + " || ".join(f"?v = {i}" for i in range(n + 1))
            + ") }"
        )
        if len(longer) > MAX_QUERY_CHARACTERS:
            break
        disjunction, n = longer, n + 1
    return {
        "example": (example, example.replace("cim:Line", "cim:ACLineSegment", 1)),
        "typical": (typical, variant),
        "aggregate": (aggregate, aggregate.replace("COUNT(?member) AS", "SUM(?member) AS")),
        "worst": (disjunction, disjunction.replace("?v = 0 ", "?v = 9 ", 1)),
    }


def import_seconds() -> float:
    code = (
        "import time; t = time.perf_counter(); "
        "import rdflib.plugins.sparql.parser, rdflib.plugins.sparql.algebra; "
        "print(time.perf_counter() - t)"
    )
    return float(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    print(f"import of rdflib's SPARQL parser (once per process): {import_seconds():.2f} s")
    for name, (reference, actual) in cases().items():
        diagnosed = diagnose_queries(reference, actual)
        labels = [f.label.value for f in diagnosed[0]] if diagnosed else None
        repeat = args.repeat if name != "worst" else max(3, args.repeat // 10)
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            diagnose_queries(reference, actual)
            times.append(time.perf_counter() - started)
        print(
            f"{name:10} {len(reference):5} / {len(actual):5} chars: median "
            f"{statistics.median(times) * 1000:7.1f} ms per pair, min {min(times) * 1000:7.1f} ms"
            f"  labels {labels}"
        )


if __name__ == "__main__":
    main()
