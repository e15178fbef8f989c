"""The garbage collector settings a run uses (docs/benchmarks.md, "Garbage collection"):
raised during a run and restored after it, and a process's own settings left alone."""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval import compute_aggregates, run_evaluation
from graphrag_eval.collector import (
    RUN_THRESHOLD,
    collection_paused,
    fewer_collections,
    input_reading,
    inputs_frozen,
    reading_for_run,
)
from graphrag_eval.evaluation.runner import evaluate, prepare_reference
from graphrag_eval.inputs.responses import load_responses

from builders import dataset, question, response

REFERENCE = dataset(question("a", answer="Paris"), question("b", answer="Rome"))
RESPONSES = [response("a", actual_answer="Paris"), response("b", actual_answer="Rome")]


@pytest.fixture(autouse=True)
def default_collector() -> Iterator[None]:
    """Each test starts from CPython's defaults and leaves them as they were."""
    before, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(700, 10, 10)
    gc.enable()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)
    (gc.enable if enabled else gc.disable)()


def test_a_run_raises_the_threshold_while_it_scores_and_restores_it() -> None:
    seen: list[int] = []

    def on_item(record: dict[str, Any]) -> None:
        seen.append(gc.get_threshold()[0])

    run = asyncio.run(evaluate(REFERENCE, RESPONSES, on_item=on_item))

    assert len(run.items) == 2
    assert seen == [RUN_THRESHOLD, RUN_THRESHOLD]
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.isenabled()


def test_a_failed_run_restores_the_threshold_too() -> None:
    def on_item(record: dict[str, Any]) -> None:
        raise RuntimeError("the callback broke")

    with pytest.raises(RuntimeError):
        asyncio.run(evaluate(REFERENCE, RESPONSES, on_item=on_item))

    assert gc.get_threshold() == (700, 10, 10)


def test_a_process_that_tuned_or_disabled_the_collector_keeps_its_settings() -> None:
    gc.set_threshold(50_000, 5, 5)
    with fewer_collections():
        assert gc.get_threshold() == (50_000, 5, 5)
    gc.set_threshold(700, 10, 10)
    gc.disable()
    with fewer_collections():
        assert gc.get_threshold() == (700, 10, 10)
    results = run_evaluation(REFERENCE, RESPONSES)
    compute_aggregates(results)
    assert not gc.isenabled()
    assert gc.get_threshold() == (700, 10, 10)


def test_nested_and_changed_settings_are_not_undone() -> None:
    with fewer_collections():
        with fewer_collections():
            assert gc.get_threshold()[0] == RUN_THRESHOLD
        assert gc.get_threshold()[0] == RUN_THRESHOLD  # the inner one changed nothing
        gc.set_threshold(2_000, 10, 10)  # the process changes it meanwhile
    assert gc.get_threshold() == (2_000, 10, 10)


def test_reading_pauses_collection_and_turns_it_back_on() -> None:
    with collection_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    with collection_paused():
        pass
    assert not gc.isenabled()  # it was off before: it stays off


def _write_inputs(folder: Path) -> tuple[Path, Path]:
    reference, responses = folder / "reference.json", folder / "responses.jsonl"
    reference.write_text(json.dumps(REFERENCE), encoding="utf-8")
    responses.write_text("".join(json.dumps(r) + "\n" for r in RESPONSES), encoding="utf-8")
    return reference, responses


def test_a_command_s_inputs_are_read_without_collection_then_left_out_of_it_until_its_run_ends(
    tmp_path: Path,
) -> None:
    reference, responses = _write_inputs(tmp_path)
    enabled: list[bool] = []
    gc.callbacks.append(collecting := lambda phase, info: enabled.append(gc.isenabled()))
    try:
        with reading_for_run():
            with input_reading():
                assert not gc.isenabled()
                garbage = [[object()] for _ in range(5_000)]  # would trigger passes when on
                del garbage
            assert gc.isenabled()
            assert gc.get_freeze_count() > 0  # what existed is out of the passes
            questions = prepare_reference(reference)
            response_set = load_responses(responses)
            assert gc.isenabled()
            assert gc.get_freeze_count() > 0
            seen: list[int] = []
            run = asyncio.run(
                evaluate(
                    questions, response_set, on_item=lambda _: seen.append(gc.get_freeze_count())
                )
            )
            assert gc.get_freeze_count() == 0  # given back when the run ends
    finally:
        gc.callbacks.remove(collecting)
    assert len(run.items) == 2
    assert all(count > 0 for count in seen)  # frozen while the run scores
    assert gc.get_freeze_count() == 0
    assert all(enabled)  # no automatic pass ran while the collector was off


def test_inputs_read_outside_a_command_keep_nothing_out_of_the_collector(tmp_path: Path) -> None:
    """A long-lived process that only reads inputs (a library call, again and again) keeps
    no object out of the collector's passes: its cyclic garbage is still freed."""
    reference, responses = _write_inputs(tmp_path)
    for _ in range(3):
        prepare_reference(reference)
        load_responses(responses)
        with input_reading():
            pass
        assert gc.get_freeze_count() == 0
    assert gc.isenabled()


def test_reading_for_run_gives_back_what_it_froze_when_no_run_follows(tmp_path: Path) -> None:
    reference, _ = _write_inputs(tmp_path)
    with reading_for_run():
        prepare_reference(reference)  # then a dry run, or an error: nothing is run
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_objects_the_process_froze_itself_stay_frozen(tmp_path: Path) -> None:
    """An application that froze its own objects (before forking workers, say) finds them
    frozen after a run, and no more: the run neither unfreezes nor adds to them. Frozen
    objects that die leave the count, so it may only fall a little: frozen inputs (2,000
    questions and responses, tens of thousands of objects) would raise it, an unfreeze would
    drop it to 0."""
    count = 2_000
    reference, responses = tmp_path / "reference.json", tmp_path / "responses.jsonl"
    names = [f"q{index}" for index in range(count)]
    reference.write_text(
        json.dumps(dataset(*(question(name, answer="Paris") for name in names))),
        encoding="utf-8",
    )
    responses.write_text(
        "".join(json.dumps(response(name, actual_answer="Paris")) + "\n" for name in names),
        encoding="utf-8",
    )
    gc.freeze()
    frozen = gc.get_freeze_count()
    assert frozen > 0

    def unchanged() -> bool:
        return frozen // 2 < gc.get_freeze_count() <= frozen

    with reading_for_run():
        questions = prepare_reference(reference)
        response_set = load_responses(responses)
        assert unchanged()
        run = asyncio.run(evaluate(questions, response_set))
        assert unchanged()
    assert len(run.items) == count
    assert unchanged()
    run_evaluation(str(reference), str(responses))
    assert unchanged()


def test_reading_and_a_run_leave_a_disabled_collector_alone() -> None:
    gc.disable()
    with input_reading():
        pass
    with inputs_frozen():
        assert gc.get_freeze_count() == 0
    assert not gc.isenabled()
    assert gc.get_freeze_count() == 0
