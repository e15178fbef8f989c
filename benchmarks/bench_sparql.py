"""Benchmark of the SPARQL results comparison (docs/steps.md) on generated results.

For each case (rows x reference columns x actual columns) a reference SPARQL 1.1 JSON result
is generated with uri, plain literal, xsd:integer and xsd:decimal cells, and three actual
results in which the reference columns are renamed, shuffled among decoy columns (shuffled
copies of reference columns, whose per-column signatures collide with the originals, and
unrelated columns) and whose rows are shuffled; decimals are written in a different lexical
form than in the reference:

* ``match``: the reference rows, expected score 1;
* ``one_cell``: one cell of a reference column changed to a new value, expected score 0;
* ``hard``: one reference column's values swapped between two rows, so every column keeps its
  signature (same set and multiset of values) but the joint rows differ, expected score 0.

Each score is timed as an evaluation run computes it: the reference result is parsed and
prepared once, when the dataset is loaded, and ``compare_sparql_results`` gets the actual
output as JSON *text* (its parsing included). The cold time, with both documents parsed from
text in the call, is shown too. The default mode is used (unordered,
``ignore_duplicates=True``: rows compared as sets).

The seed's brute force (every permutation of every subset of actual columns of the
reference's size, all rows compared for each) is re-implemented here, timed on a sample of
permutations on the ``hard`` actual (no match, so the seed would try every permutation) and
extrapolated to the full count P(n_act, n_ref) = n_act! / (n_act - n_ref)!.

Run from the repository root::

    .venv/bin/python benchmarks/bench_sparql.py [--repeat 15] [--sample 2000] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import math
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from graphrag_eval.steps.sparql import (
    compare_sparql_results,
    parse_sparql_results,
    prepare_reference,
)
from graphrag_eval.steps.sparql_diff import diff_sparql

XSD = "http://www.w3.org/2001/XMLSchema#"
TYPES = ("uri", "literal", "integer", "decimal")
TARGET_S = 0.1
CASES: tuple[tuple[int, int, int], ...] = ((100, 8, 12), (200, 6, 10), (1000, 5, 8), (10000, 4, 4))
VARIANTS: tuple[tuple[str, int], ...] = (("match", 1), ("one_cell", 0), ("hard", 0))


# --------------------------------------------------------------------------------------------
# Generation


@dataclass
class Column:
    kind: str  # one of TYPES
    values: list[str]  # lexical values, one per row


def random_value(rng: random.Random, kind: str, rows: int, tag: str) -> str:
    if kind == "uri":
        return f"http://example.org/resource/{tag}/{rng.randrange(rows)}"
    if kind == "literal":
        return f"{tag} name {rng.randrange(rows)}"
    if kind == "integer":
        return str(rng.randrange(-1_000_000, 1_000_000))
    return f"{rng.uniform(-1000.0, 1000.0):.4f}"


def random_column(rng: random.Random, kind: str, rows: int, tag: str) -> Column:
    return Column(kind, [random_value(rng, kind, rows, tag) for _ in range(rows)])


def fresh_value(kind: str) -> str:
    """A value that no generated column contains."""
    return {
        "uri": "http://example.org/resource/changed",
        "literal": "changed",
        "integer": "123456789",
        "decimal": "98765.4321",
    }[kind]


def term(kind: str, lexical: str, *, actual: bool) -> dict[str, str]:
    if kind == "uri":
        return {"type": "uri", "value": lexical}
    if kind == "literal":
        return {"type": "literal", "value": lexical}
    if kind == "integer":
        return {"type": "literal", "datatype": XSD + "integer", "value": lexical}
    # The actual result writes decimals in another lexical form ("12.5000" -> "12.5").
    value = repr(float(lexical)) if actual else lexical
    return {"type": "literal", "datatype": XSD + "decimal", "value": value}


def to_json(
    names: Sequence[str], columns: Sequence[Column], order: Sequence[int], actual: bool
) -> str:
    bindings = [
        {
            name: term(col.kind, col.values[row], actual=actual)
            for name, col in zip(names, columns, strict=True)
        }
        for row in order
    ]
    return json.dumps({"head": {"vars": list(names)}, "results": {"bindings": bindings}})


@dataclass
class Case:
    rows: int
    n_ref: int
    n_act: int
    reference: str
    actuals: dict[str, str]  # variant -> JSON text
    decoy_copies: int
    decoy_unrelated: int

    @property
    def label(self) -> str:
        return f"{self.rows} rows, {self.n_ref} of {self.n_act} cols"


def make_case(rows: int, n_ref: int, n_act: int, seed: int) -> Case:
    rng = random.Random(f"{seed}-{rows}-{n_ref}-{n_act}")
    ref_names = [f"ref{j}" for j in range(n_ref)]
    ref_cols = [random_column(rng, TYPES[j % len(TYPES)], rows, f"c{j}") for j in range(n_ref)]
    reference = to_json(ref_names, ref_cols, range(rows), actual=False)

    n_decoys = n_act - n_ref
    n_copies = (n_decoys + 1) // 2
    first = rng.randrange(n_ref)
    copy_of = [(first + k) % n_ref for k in range(n_copies)]
    decoys: list[Column] = []
    for j in copy_of:  # same values, permuted across rows: same signature, other joint rows
        values = list(ref_cols[j].values)
        rng.shuffle(values)
        decoys.append(Column(ref_cols[j].kind, values))
    for k in range(n_decoys - n_copies):
        kind = rng.choice(TYPES)
        decoys.append(random_column(rng, kind, rows, f"d{k}"))

    # The reference column the non-matching variants change: the one with the most decoy
    # copies (most candidates, so the search reaches it last), ties to the last index.
    copies = [copy_of.count(j) for j in range(n_ref)]
    target = max(range(n_ref), key=lambda j: (copies[j], j))
    anchor = (target + 1) % n_ref if n_ref > 1 else target

    def variant_columns(variant: str) -> list[Column]:
        cols = [Column(c.kind, list(c.values)) for c in ref_cols]
        if variant == "one_cell":
            row = rng.randrange(rows)
            cols[target].values[row] = fresh_value(cols[target].kind)
        elif variant == "hard":
            values = cols[target].values
            while True:  # two rows that differ on the target column and on another one
                i, j = rng.sample(range(rows), 2)
                if values[i] != values[j] and cols[anchor].values[i] != cols[anchor].values[j]:
                    break
            values[i], values[j] = values[j], values[i]
        return cols

    actuals: dict[str, str] = {}
    for variant, _ in VARIANTS:
        columns = variant_columns(variant) + decoys
        names = [f"v{k}" for k in range(n_act)]
        rng.shuffle(names)  # renamed, and placed among the decoys in random order
        by_name = sorted(zip(names, columns, strict=True), key=lambda pair: pair[0])
        order = list(range(rows))
        rng.shuffle(order)
        actuals[variant] = to_json(
            [name for name, _ in by_name], [col for _, col in by_name], order, actual=True
        )
    return Case(rows, n_ref, n_act, reference, actuals, n_copies, n_decoys - n_copies)


# --------------------------------------------------------------------------------------------
# The seed's brute force


def seed_parse(text: str) -> tuple[list[str], dict[str, list[Any]]]:
    """Columns of plain values; numbers rounded to the seed's 1e-8 precision."""
    document = json.loads(text)
    names = document["head"]["vars"]
    columns: dict[str, list[Any]] = {name: [] for name in names}
    for binding in document["results"]["bindings"]:
        for name in names:
            cell = binding.get(name)
            if cell is None:
                columns[name].append(None)
            elif "datatype" in cell and cell["datatype"] in (XSD + "integer", XSD + "decimal"):
                columns[name].append(round(float(cell["value"]), 8))
            else:
                columns[name].append(cell["value"])
    return names, columns


def brute_force(
    reference: str, actual: str, limit: int | None = None
) -> tuple[int | None, int, float, float]:
    """The seed's search: every permutation of every subset of actual columns of the
    reference's size, comparing all rows as sets. Returns (score or None if stopped at
    ``limit``, permutations tried, parse seconds, search seconds)."""
    start = time.perf_counter()
    ref_names, ref_columns = seed_parse(reference)
    act_names, act_columns = seed_parse(actual)
    parsed = time.perf_counter()
    ref_rows = set(zip(*(ref_columns[name] for name in ref_names), strict=True))
    tried = 0
    score: int | None = 0
    for subset in itertools.combinations(act_names, len(ref_names)):
        for permutation in itertools.permutations(subset):
            tried += 1
            rows = set(zip(*(act_columns[name] for name in permutation), strict=True))
            if rows == ref_rows:
                score = 1
                break
            if limit is not None and tried >= limit:
                score = None
                break
        else:
            continue
        break
    end = time.perf_counter()
    return score, tried, parsed - start, end - parsed


# --------------------------------------------------------------------------------------------
# Measurement


def timed(
    function: Callable[[], Any], repeat: int, before: Callable[[], None]
) -> tuple[Any, list[float]]:
    times: list[float] = []
    result = None
    for _ in range(repeat):
        before()
        gc.collect()
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return result, times


@dataclass
class Row:
    case: str
    rows: int
    n_ref: int
    n_act: int
    variant: str
    expected: int
    score: int
    min_s: float
    median_s: float
    max_s: float
    cold_median_s: float
    parse_median_s: float
    search_median_s: float
    explain_median_s: float | None
    """The mismatch explanation (``diff_sparql``) once both are parsed; non-matching only."""
    under_target: bool


@dataclass
class BruteRow:
    case: str
    permutations: int
    sampled: int
    exhaustive: bool
    per_permutation_s: float
    parse_s: float
    estimated_s: float
    ours_median_s: float
    speedup: float


def nothing() -> None:
    pass


def run_case(case: Case, repeat: int, sample: int) -> tuple[list[Row], BruteRow]:
    rows: list[Row] = []
    for variant, expected in VARIANTS:
        actual = case.actuals[variant]
        # As in an evaluation run: the reference was parsed and prepared when the dataset
        # was loaded; scoring a step parses its actual output (text) and compares.
        reference = parse_sparql_results(case.reference)
        prepare_reference(reference)
        score, totals = timed(
            lambda actual=actual, reference=reference: compare_sparql_results(reference, actual),
            repeat,
            nothing,
        )
        cold_score, cold = timed(
            lambda actual=actual: compare_sparql_results(case.reference, actual), repeat, nothing
        )
        parsed, parse_times = timed(
            lambda actual=actual: parse_sparql_results(actual), repeat, nothing
        )
        _, search_times = timed(
            lambda parsed=parsed, reference=reference: compare_sparql_results(reference, parsed),
            repeat,
            nothing,
        )
        explain_times: list[float] = []
        if expected == 0:  # a run explains only the steps below a full match
            _, explain_times = timed(
                lambda parsed=parsed, reference=reference: diff_sparql(reference, parsed),
                repeat,
                nothing,
            )
        if score != expected or cold_score != expected:
            raise AssertionError(f"{case.label}, {variant}: score {score}, expected {expected}")
        median = statistics.median(totals)
        rows.append(
            Row(
                case=case.label,
                rows=case.rows,
                n_ref=case.n_ref,
                n_act=case.n_act,
                variant=variant,
                expected=expected,
                score=score,
                min_s=min(totals),
                median_s=median,
                max_s=max(totals),
                cold_median_s=statistics.median(cold),
                parse_median_s=statistics.median(parse_times),
                search_median_s=statistics.median(search_times),
                explain_median_s=statistics.median(explain_times) if explain_times else None,
                under_target=median < TARGET_S,
            )
        )

    total = math.perm(case.n_act, case.n_ref)
    exhaustive = total <= sample
    score, tried, parse_s, search_s = brute_force(
        case.reference, case.actuals["hard"], None if exhaustive else sample
    )
    if exhaustive and score != 0:
        raise AssertionError(f"{case.label}: brute force scored {score} on 'hard', expected 0")
    per_permutation = search_s / tried
    estimated = parse_s + per_permutation * total
    ours = next(row.median_s for row in rows if row.variant == "hard")
    brute = BruteRow(
        case=case.label,
        permutations=total,
        sampled=tried,
        exhaustive=exhaustive,
        per_permutation_s=per_permutation,
        parse_s=parse_s,
        estimated_s=estimated,
        ours_median_s=ours,
        speedup=estimated / ours,
    )
    if exhaustive:  # cross-check the generated data: the seed's answer on every variant
        for variant, expected in VARIANTS:
            seed_score = brute_force(case.reference, case.actuals[variant])[0]
            if seed_score != expected:
                raise AssertionError(
                    f"{case.label}, {variant}: brute force scored {seed_score}, expected {expected}"
                )
    return rows, brute


# --------------------------------------------------------------------------------------------
# Output


def table(headers: Sequence[str], body: Sequence[Sequence[str]], right: set[int]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in body)])


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.1f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def render(rows: list[Row], brutes: list[BruteRow], repeat: int) -> str:
    ours = table(
        [
            "case",
            "actual",
            "score",
            "min ms",
            "median ms",
            "max ms",
            "< 0.1 s",
            "parse ms",
            "search ms",
            "cold ms",
            "explain ms",
        ],
        [
            [
                r.case,
                r.variant,
                f"{r.score} (exp {r.expected})",
                ms(r.min_s),
                ms(r.median_s),
                ms(r.max_s),
                "yes" if r.under_target else "NO",
                ms(r.parse_median_s),
                ms(r.search_median_s),
                ms(r.cold_median_s),
                "-" if r.explain_median_s is None else ms(r.explain_median_s),
            ]
            for r in rows
        ],
        right={3, 4, 5, 7, 8, 9, 10},
    )
    seed = table(
        [
            "case",
            "P(n_act, n_ref)",
            "timed",
            "per perm",
            "seed brute force",
            "ours (hard)",
            "ratio",
        ],
        [
            [
                b.case,
                f"{b.permutations:,}",
                "all" if b.exhaustive else f"{b.sampled:,}",
                f"{b.per_permutation_s * 1e6:.1f} us",
                ("" if b.exhaustive else "~") + duration(b.estimated_s),
                duration(b.ours_median_s),
                f"{b.speedup:,.0f}x",
            ]
            for b in brutes
        ],
        right={1, 2, 3, 4, 5, 6},
    )
    return (
        f"Scoring one actual step as in a run, {repeat} repetitions: compare_sparql_results"
        " on the actual output as JSON text against the reference parsed and prepared at load"
        " ('< 0.1 s' = median under 0.1 s). parse = the actual document alone; search = the"
        " comparison once both are parsed; cold = both documents parsed from text in the"
        " call; explain = why a non-matching actual differs (mismatch_reason), once both are"
        " parsed.\n\n"
        f"{ours}\n\n"
        "Seed brute force on the 'hard' actual (no match: every permutation is tried);"
        " '~' = extrapolated from the timed sample\n\n"
        f"{seed}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15, help="repetitions per measurement")
    parser.add_argument(
        "--sample", type=int, default=2000, help="brute-force permutations to time per case"
    )
    parser.add_argument("--seed", type=int, default=20240601, help="random seed")
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="PATH",
        help="write the results as JSON to PATH (or to stdout, instead of the tables)",
    )
    args = parser.parse_args(argv)

    rows: list[Row] = []
    brutes: list[BruteRow] = []
    for n_rows, n_ref, n_act in CASES:
        case = make_case(n_rows, n_ref, n_act, args.seed)
        case_rows, brute = run_case(case, args.repeat, args.sample)
        rows.extend(case_rows)
        brutes.append(brute)

    report = {
        "benchmark": "sparql",
        "python": platform.python_version(),
        "repeat": args.repeat,
        "seed": args.seed,
        "target_s": TARGET_S,
        "all_under_target": all(r.under_target for r in rows),
        "cases": [asdict(r) for r in rows],
        "brute_force": [asdict(b) for b in brutes],
    }
    if args.json == "-":
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(render(rows, brutes, args.repeat))
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0 if report["all_under_target"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
