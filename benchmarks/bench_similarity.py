"""Local-model benchmark: semantic similarity and BERTScore pairs per second on this CPU.

Both metrics run on the bundled all-MiniLM-L6-v2 (the ``embeddings`` extra), in-process, the
way an evaluation runs them: ``evaluate`` with an engine built by ``build_run_engine`` from
``{"metrics": [METRIC]}``, so every item goes through input validation, the metric and the
engine's batcher. Modes, for each metric:

* ``batched``: the library's normal path, many items in flight (``max_concurrent_items`` at
  its default, 64), so concurrent requests share forward passes; cache disabled.
* ``one at a time``: ``max_concurrent_items=1``: each item's texts get a forward pass of
  their own (what a loop calling a metric per pair does); cache disabled.
* ``fill cache``: as ``batched``, with a fresh cache file that every value is written to.
* ``cached``: the same run again on that cache: nothing is computed.
* ``model, in order`` and ``model, sorted``: for reference, not the library's path: the
  model's own batched method (then BERTScore's greedy matching per pair), with no items,
  engine or batcher. *In order*: one call per pass-full of pairs, in item order, as the
  batcher groups them (each pass is padded to its longest text). *Sorted*: every distinct
  text in one call, which the model sorts by length before cutting it into passes, so
  passes are barely padded. The batch size is the library's (or ``--batch-size``).

The data is N answer/reference pairs (default 1,000), generated deterministically from the
seed: short factoid answers (names, places, numbers, dates; exact, reworded, padded or
wrong) and longer sentences (paraphrased, reordered, partly wrong, hedged or elaborated),
mixed, all distinct. Checked: every pair gets a value (no ``_error``), the batched values
equal the one-at-a-time values (float32 padding noise aside), the cached run computes no text
and gives the values of the run that filled the cache.

Model load is reported separately, measured in fresh processes (``--repeat`` of them): the
imports of torch, transformers and sentence-transformers, then the first embedding (loading
the sentence-transformers model) and the first BERTScore (loading the token model: the same
weights, loaded again through transformers). The timed runs come after both models are
loaded in this process; a warm-up run of 64 pairs per metric is not counted.

Prints a table; exits 1 when a check fails. Run from the repository root::

    .venv/bin/python benchmarks/bench_similarity.py [--pairs 1000] [--repeat 3]
        [--metrics semantic_similarity,bert_score] [--seed 7] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from graphrag_eval.config import BUNDLED_MODEL, BertScoreConfig, EmbeddingConfig
from graphrag_eval.embeddings.bert_score import bert_score_of
from graphrag_eval.embeddings.models import local_model, resolve_model
from graphrag_eval.evaluation.planning import build_run_engine
from graphrag_eval.evaluation.runner import evaluate
from graphrag_eval.metrics.loading import load_config

METRICS = ("semantic_similarity", "bert_score")
MODES = (
    "batched",
    "one at a time",
    "fill cache",
    "cached",
    "model, in order",
    "model, sorted",
)
KEYS = {
    "semantic_similarity": ("semantic_similarity_percentage",),
    "bert_score": ("bert_score_precision", "bert_score_recall", "bert_score_f1"),
}
TOLERANCE = {"semantic_similarity": 0.011, "bert_score": 0.001}
"""Largest difference allowed between batched and one-at-a-time values (percentage points):
padding changes float32 sums slightly; similarity is rounded to 2 decimals."""
WARM_UP_PAIRS = 64

# Timed in a fresh process: imports, then each model's first use.
LOAD_SCRIPT = """
import asyncio, json, time
started = time.perf_counter()
import torch, transformers, sentence_transformers
imported = time.perf_counter()
from graphrag_eval.metrics.loading import load_config
from graphrag_eval.evaluation.services import build_engine
async def main():
    engine = build_engine(load_config({}), use_cache=False, local=True, bert_score=True)
    first = time.perf_counter()
    await engine.embedding.embed(["warm up"], metric="load")
    second = time.perf_counter()
    await engine.bert_scorer.scores([("warm up", "warm")], metric="load")
    third = time.perf_counter()
    await engine.aclose()
    return second - first, third - second
sentence, tokens = asyncio.run(main())
print(json.dumps({"imports_s": imported - started, "sentence_model_s": sentence,
                  "token_model_s": tokens}))
"""


# --------------------------------------------------------------------------------------------
# Data

FIRST = ("Anna", "Boris", "Chiara", "Dmitri", "Elena", "Farid", "Grete", "Hiro", "Ines", "Jonas")
LAST = ("Novak", "Ivanova", "Rossi", "Petrov", "Larsen", "Haddad", "Moreau", "Tanaka", "Silva")
CITIES = (
    "Oslo", "Sofia", "Lyon", "Porto", "Graz", "Bergen", "Plovdiv", "Turin", "Gdansk", "Ghent",
    "Malmo", "Brno", "Cork", "Varna", "Basel", "Tartu",
)  # fmt: skip
RIVERS = ("Danube", "Rhine", "Vistula", "Elbe", "Loire", "Tagus", "Maritsa", "Glomma")
THINGS = (
    ("bridge", "spans", "metres"),
    ("dam", "holds", "million cubic metres of water"),
    ("tunnel", "runs for", "kilometres"),
    ("library", "holds", "thousand volumes"),
    ("substation", "feeds", "thousand households"),
    ("wind farm", "has", "turbines"),
)
PLANTS = (
    ("Erica vagans", "Cornish heath"),
    ("Calluna vulgaris", "common heather"),
    ("Quercus robur", "English oak"),
    ("Fagus sylvatica", "European beech"),
    ("Bellis perennis", "common daisy"),
    ("Taraxacum officinale", "common dandelion"),
    ("Digitalis purpurea", "common foxglove"),
    ("Hedera helix", "common ivy"),
)
MONTHS = ("January", "March", "April", "June", "August", "September", "October", "December")
HEDGES = ("I think", "As far as I know,", "Probably", "It seems that")
FILLERS = (
    "This is well documented in the regional archives.",
    "Local newspapers covered the event at the time.",
    "The figure comes from the operator's annual report.",
    "Several sources agree on this point.",
)


@dataclass(frozen=True, slots=True)
class Pair:
    reference: str
    answer: str
    kind: str


def person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def short_pair(rng: random.Random, index: int) -> Pair:
    """A factoid: a name, place, number or date, answered exactly, reworded, padded or
    wrongly."""
    topic = rng.choice(("plant", "person", "number", "date", "list"))
    if topic == "plant":
        latin, common = rng.choice(PLANTS)
        reference = f"{common} ({latin}, specimen {index})"
        right = f"{common}, specimen {index}"
        wrong = f"{rng.choice(PLANTS)[1]}, specimen {index + 1}"
    elif topic == "person":
        name = f"{person(rng)} {index}"
        reference = name
        right = f"It was {name}."
        wrong = f"{person(rng)} {index + 7}"
    elif topic == "number":
        value = rng.randint(2, 9000) + index
        reference = f"{value:,}"
        right = f"{value}"
        wrong = f"about {value * 2:,}"
    elif topic == "date":
        year = 1850 + (index * 7) % 170
        reference = f"{rng.randint(1, 28)} {rng.choice(MONTHS)} {year}"
        right = f"In {year}"
        wrong = f"{year + rng.randint(1, 30)}"
    else:
        cities = rng.sample(CITIES, 3)
        reference = f"{', '.join(cities)} (route {index})"
        right = f"{cities[1]}, {cities[0]} and {cities[2]}, route {index}"
        wrong = f"{cities[0]} only, route {index}"
    how = rng.choice(("exact", "reworded", "padded", "wrong"))
    answer = {
        "exact": reference,
        "reworded": right,
        "padded": f"{rng.choice(HEDGES)} the answer is {reference}. {rng.choice(FILLERS)}",
        "wrong": wrong,
    }[how]
    return Pair(reference, answer, f"short/{how}")


def long_pair(rng: random.Random, index: int) -> Pair:
    """A sentence about a structure, answered with a paraphrase, reordered, partly wrong,
    hedged or elaborated sentence."""
    thing, verb, unit = rng.choice(THINGS)
    city = rng.choice(CITIES)
    river = rng.choice(RIVERS)
    year = 1870 + (index * 13) % 150
    size = 20 + (index * 37) % 4000
    builder = person(rng)
    name = f"{builder.split()[1]} {thing.title()} No. {index}"
    reference = (
        f"The {name} in {city} was completed in {year}; it {verb} {size} {unit} and was "
        f"designed by {builder}."
    )
    how = rng.choice(("paraphrase", "reordered", "partly wrong", "hedged", "elaborated"))
    if how == "paraphrase":
        answer = (
            f"{builder} designed the {name}, which was finished in {year} in {city} and "
            f"{verb} {size} {unit}."
        )
    elif how == "reordered":
        answer = f"It {verb} {size} {unit}. Built in {city} by {builder}, done in {year}."
    elif how == "partly wrong":
        answer = (
            f"The {name} in {rng.choice(CITIES)} opened in {year + rng.randint(3, 40)}; it "
            f"{verb} {size + rng.randint(5, 500)} {unit}."
        )
    elif how == "hedged":
        answer = f"{rng.choice(HEDGES)} the {name} dates from around {year}, near the {river}."
    else:
        answer = (
            f"The {name} stands on the {river} side of {city}. Designed by {builder}, it was "
            f"completed in {year} after several years of work, and today it {verb} {size} "
            f"{unit}. {rng.choice(FILLERS)} {rng.choice(FILLERS)}"
        )
    return Pair(reference, answer, f"long/{how}")


def generate(count: int, seed: int) -> list[Pair]:
    """``count`` distinct pairs, about half short and half long."""
    rng = random.Random(seed)
    pairs: list[Pair] = []
    seen: set[tuple[str, str]] = set()
    index = 0
    while len(pairs) < count:
        pair = short_pair(rng, index) if rng.random() < 0.5 else long_pair(rng, index)
        index += 1
        if (pair.reference, pair.answer) not in seen:
            seen.add((pair.reference, pair.answer))
            pairs.append(pair)
    return pairs


def inputs(pairs: Sequence[Pair]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    questions = [
        {"id": f"p{i}", "question_text": f"Question {i}?", "reference_answer": pair.reference}
        for i, pair in enumerate(pairs)
    ]
    responses = [
        {"question_id": f"p{i}", "actual_answer": pair.answer} for i, pair in enumerate(pairs)
    ]
    return [{"template_id": "t", "questions": questions}], responses


# --------------------------------------------------------------------------------------------
# Runs


@dataclass(slots=True)
class Timed:
    seconds: float
    passes: int
    """Forward-pass batches the engine's batcher ran."""
    texts: int
    """Texts run through the model (``local_texts``)."""
    cache_hits: int
    values: list[tuple[float, ...]]
    errors: list[str]
    others_cpu_s: float | None
    """CPU time the rest of the machine used during the run (Linux ``/proc/stat`` minus this
    process): other work competing for the cores; ``None`` where it cannot be read."""


async def timed_run(
    metric: str,
    pairs: Sequence[Pair],
    *,
    cache: Path | None,
    max_concurrent_items: int | None = None,
    batch_size: int | None = None,
) -> Timed:
    config: dict[str, Any] = {"metrics": [metric], "llm": {}}
    if cache is not None:
        config["llm"]["cache"] = {"path": str(cache)}
    if batch_size is not None:
        config["llm"]["embedding"] = {"provider": "local", "batch_size": batch_size}
        config["bert_score"] = {"batch_size": batch_size}
    settings = load_config(config)
    engine = build_run_engine(settings, use_cache=cache is not None)
    assert engine is not None
    scorer = engine.bert_scorer if metric == "bert_score" else engine.embedding
    batcher = scorer.batcher  # type: ignore[union-attr]
    reference, responses = inputs(pairs)
    try:
        clock = OthersClock()
        started = time.perf_counter()
        run = await evaluate(
            reference,
            responses,
            settings,
            engine=engine,
            max_concurrent_items=max_concurrent_items,
        )
        seconds = time.perf_counter() - started
        others = clock.others_s()
    finally:
        await engine.aclose()
    keys = KEYS[metric]
    values, errors = [], []
    for result in run.results:
        if f"{metric}_error" in result or keys[0] not in result:
            errors.append(str(result.get(f"{metric}_error", "no value")))
            values.append(())
        else:
            values.append(tuple(float(result[key]) for key in keys))
    return Timed(
        seconds,
        batcher.batches,
        engine.stats.local_texts,
        engine.stats.cache_hits,
        values,
        errors,
        others,
    )


class OthersClock:
    """CPU time used by everything but this process since creation (Linux only)."""

    def __init__(self) -> None:
        self.machine = machine_busy_s()
        self.own = time.process_time()

    def others_s(self) -> float | None:
        machine = machine_busy_s()
        if machine is None or self.machine is None:
            return None
        return max(0.0, (machine - self.machine) - (time.process_time() - self.own))


def machine_busy_s() -> float | None:
    """Busy CPU time of the whole machine (all cores) since boot, from ``/proc/stat``."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
    except OSError:
        return None
    # user nice system idle iowait irq softirq steal ...: everything but idle and iowait
    ticks = [int(value) for value in fields[1:9]]
    busy = sum(ticks) - ticks[3] - ticks[4]
    return busy / os.sysconf("SC_CLK_TCK")


def model_alone(
    metric: str, pairs: Sequence[Pair], batch_size: int | None, *, in_order: bool
) -> Timed:
    """The model's own batched method, without items, engine or batcher (see the module
    docstring): every distinct text in one call, or calls of the pairs that fill one pass,
    in item order."""
    model = local_model(*resolve_model(BUNDLED_MODEL, "model"))
    semantic = metric == "semantic_similarity"
    settings = BertScoreConfig()
    default = EmbeddingConfig(provider="local").batch_size if semantic else settings.batch_size
    batch = batch_size or default
    # The batcher's passes hold batch // 2 pairs (two texts each).
    chunk = max(1, batch // 2) if in_order else len(pairs)
    passes = texts_computed = 0
    clock = OthersClock()
    started = time.perf_counter()
    for start in range(0, len(pairs), chunk):
        group = pairs[start : start + chunk]
        texts = list(
            dict.fromkeys(text for pair in group for text in (pair.answer, pair.reference))
        )
        passes += -(-len(texts) // batch)
        texts_computed += len(texts)
        if semantic:
            model.sentence_embeddings(texts, batch)
        else:
            vectors = model.token_embeddings(texts, batch, settings.layer, settings.max_length)
            of = dict(zip(texts, vectors, strict=True))
            for pair in group:
                bert_score_of(of[pair.answer], of[pair.reference])
    seconds = time.perf_counter() - started
    return Timed(seconds, passes, texts_computed, 0, [], [], clock.others_s())


def measure_load(repeat: int) -> list[dict[str, float]]:
    """Imports and first use of each model, in ``repeat`` fresh processes."""
    loads = []
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-c", LOAD_SCRIPT],
            capture_output=True,
            text=True,
            check=True,
        )
        loads.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return loads


@dataclass(slots=True)
class Series:
    """The repeats of one metric and mode."""

    runs: list[Timed] = field(default_factory=list)

    def seconds(self) -> list[float]:
        return [run.seconds for run in self.runs]


def largest_difference(a: Sequence[tuple[float, ...]], b: Sequence[tuple[float, ...]]) -> float:
    return max(
        (
            abs(x - y)
            for left, right in zip(a, b, strict=True)
            for x, y in zip(left, right, strict=True)
        ),
        default=0.0,
    )


async def benchmark(
    metrics: Sequence[str],
    pairs: Sequence[Pair],
    repeat: int,
    folder: Path,
    batch_size: int | None,
) -> dict[str, dict[str, Series]]:
    series = {metric: {mode: Series() for mode in MODES} for metric in metrics}
    for metric in metrics:  # load each model and warm up, untimed
        await timed_run(metric, pairs[:WARM_UP_PAIRS], cache=None)
    for attempt in range(repeat):
        for metric in metrics:
            runs = series[metric]
            options: dict[str, Any] = {"batch_size": batch_size}
            runs["batched"].runs.append(await timed_run(metric, pairs, cache=None, **options))
            runs["one at a time"].runs.append(
                await timed_run(metric, pairs, cache=None, max_concurrent_items=1, **options)
            )
            cache = folder / f"{metric}-{attempt}.sqlite3"
            runs["fill cache"].runs.append(await timed_run(metric, pairs, cache=cache, **options))
            runs["cached"].runs.append(await timed_run(metric, pairs, cache=cache, **options))
            runs["model, in order"].runs.append(
                model_alone(metric, pairs, batch_size, in_order=True)
            )
            runs["model, sorted"].runs.append(
                model_alone(metric, pairs, batch_size, in_order=False)
            )
    return series


def check(metric: str, runs: dict[str, Series], pairs: int) -> list[str]:
    problems = []
    for mode, mode_series in runs.items():
        for run in mode_series.runs:
            if run.errors:
                problems.append(f"{metric} {mode}: {len(run.errors)} errors, e.g. {run.errors[0]}")
    for batched, alone in zip(runs["batched"].runs, runs["one at a time"].runs, strict=True):
        difference = largest_difference(batched.values, alone.values)
        if difference > TOLERANCE[metric]:
            problems.append(f"{metric}: batched and one-at-a-time values differ by {difference}")
        if alone.passes != pairs:
            problems.append(f"{metric}: one at a time made {alone.passes} passes for {pairs}")
    for filled, cached in zip(runs["fill cache"].runs, runs["cached"].runs, strict=True):
        if cached.texts != 0:
            problems.append(f"{metric}: the cached run computed {cached.texts} texts")
        if cached.values != filled.values:
            problems.append(f"{metric}: the cached run's values differ")
    return problems


# --------------------------------------------------------------------------------------------
# Report


def machine() -> dict[str, Any]:
    import torch

    model = platform.processor() or "?"
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        for line in lscpu.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return {
        "cpu": model,
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": metadata.version("transformers"),
        "sentence_transformers": metadata.version("sentence-transformers"),
    }


def summary(mode_series: Series, pairs: int) -> dict[str, Any]:
    seconds = mode_series.seconds()
    last = mode_series.runs[-1]
    return {
        "seconds": seconds,
        "min_s": min(seconds),
        "median_s": statistics.median(seconds),
        "max_s": max(seconds),
        "pairs_per_s_median": pairs / statistics.median(seconds),
        "pairs_per_s_best": pairs / min(seconds),
        "passes": last.passes,
        "texts": last.texts,
        "cache_hits": last.cache_hits,
        "others_cpu_s": [run.others_cpu_s for run in mode_series.runs],
    }


def others(row: dict[str, Any]) -> str:
    values = [value for value in row["others_cpu_s"] if value is not None]
    return f"{max(values):7.1f}" if values else f"{'?':>7}"


def render(report: dict[str, Any]) -> str:
    info = report["machine"]
    lines = [
        f"{report['pairs']:,} pairs ({report['kinds']}), seed {report['seed']}, "
        f"{report['repeat']} repeat(s), batch size {report['batch_size'] or 'default'}; "
        f"{info['cpu']}, {info['cpus']} CPUs, torch "
        f"{info['torch']} ({info['torch_threads']} threads), Python {info['python']}",
        "",
    ]
    load = report["load"]
    for key, label in (
        ("imports_s", "import torch, transformers, sentence-transformers"),
        ("sentence_model_s", "load the sentence model (first embedding)"),
        ("token_model_s", "load the token model (first BERTScore)"),
    ):
        values = [entry[key] for entry in load]
        lines.append(
            f"{label:<52} min {min(values):6.2f} s  median {statistics.median(values):6.2f} s"
        )
    lines.append("")
    header = (
        f"{'metric':<20} {'mode':<16} {'min s':>8} {'median s':>9} {'max s':>8} "
        f"{'pairs/s':>9} {'passes':>7} {'texts':>6} {'hits':>6} {'others':>7}"
    )
    lines += [header, "-" * len(header)]
    for metric, modes in report["metrics"].items():
        for mode, row in modes.items():
            lines.append(
                f"{metric:<20} {mode:<16} {row['min_s']:8.2f} {row['median_s']:9.2f} "
                f"{row['max_s']:8.2f} {row['pairs_per_s_median']:9.0f} {row['passes']:7,} "
                f"{row['texts']:6,} {row['cache_hits']:6,} {others(row)}"
            )
        batched = modes["batched"]["median_s"]
        alone = modes["one at a time"]["median_s"]
        lines.append(f"{'':<20} batched is {alone / batched:.1f}x one at a time (medians)")
    lines.append("")
    lines.append(
        "pairs/s from the median time; passes, texts and hits of the last repeat; others: "
        "the most CPU seconds other processes used during one run of the row (contention)"
    )
    for problem in report["problems"]:
        lines.append(f"PROBLEM {problem}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=1000, help="answer/reference pairs")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each mode")
    parser.add_argument(
        "--metrics",
        default=",".join(METRICS),
        help="comma-separated: semantic_similarity, bert_score",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="llm.embedding.batch_size and bert_score.batch_size (default: the library's)",
    )
    parser.add_argument("--seed", type=int, default=7, help="random seed of the data")
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="PATH",
        help="write the figures as JSON to PATH (or to stdout, instead of the table)",
    )
    args = parser.parse_args(argv)
    metrics = [name.strip() for name in args.metrics.split(",") if name.strip()]
    unknown = sorted(set(metrics) - set(METRICS))
    if unknown:
        parser.error(f"unknown metric(s): {', '.join(unknown)}")

    pairs = generate(args.pairs, args.seed)
    kinds: dict[str, int] = {}
    for pair in pairs:
        kinds[pair.kind.split("/")[0]] = kinds.get(pair.kind.split("/")[0], 0) + 1
    load = measure_load(args.repeat)
    with tempfile.TemporaryDirectory(prefix="bench-similarity-") as folder:
        series = asyncio.run(benchmark(metrics, pairs, args.repeat, Path(folder), args.batch_size))
    problems = [
        problem for metric in metrics for problem in check(metric, series[metric], len(pairs))
    ]
    report = {
        "benchmark": "similarity",
        "machine": machine(),
        "pairs": len(pairs),
        "kinds": ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items())),
        "seed": args.seed,
        "repeat": args.repeat,
        "batch_size": args.batch_size,
        "load": load,
        "metrics": {
            metric: {mode: summary(series[metric][mode], len(pairs)) for mode in MODES}
            for metric in metrics
        },
        "problems": problems,
    }
    if args.json == "-":
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(render(report))
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
