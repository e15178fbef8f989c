"""``evaluate`` keeps no result: it writes the results files in reference order as the
results come and folds the aggregates in (docs/architecture.md, "The data flow"). Its files
are, byte for byte, those :func:`write_run` writes from a run that kept every result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from graphrag_eval.cli import main
from graphrag_eval.evaluation.runner import evaluate, run_sync
from graphrag_eval.results.write_run import (
    AGGREGATES_YAML,
    RESULTS_JSON,
    RESULTS_JSONL,
    RESULTS_YAML,
    RunSummary,
    write_run,
)

from builders import dataset, question, response, sparql, sparql_ref, step

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _inputs(folder: Path) -> tuple[Path, Path]:
    """Two templates; matched, unmatched, unreadable and error responses, one missing, text
    that is not ASCII, a number that JSON cannot hold exactly."""
    first = dataset(
        *(question(f"a{i}", [[sparql_ref(sparql(["x"], [[f"v{i}"]]))]]) for i in range(6)),
        template_id="t1",
    )
    second = dataset(
        *(question(f"b{i}", [[sparql_ref(sparql(["y"], [["é"], ["ü"]]))]]) for i in range(5)),
        template_id="t2",
    )
    reference = folder / "reference.json"
    reference.write_text(json.dumps(first + second), encoding="utf-8")
    lines = [
        response("a0", [step("sparql_query", sparql(["x"], [["v0"]]), "s")], input_tokens=3),
        response("a1", [step("sparql_query", sparql(["x"], [["no"]]), "s")], elapsed_sec=0.1),
        {"question_id": "a2", "status": "error", "error": "timed out"},
        response("a3", [step("sparql_query", "not json", "s")], input_tokens=10**20),
        response("b0", [step("sparql_query", sparql(["z"], [["ü"], ["é"]]), "s")]),
        response("b1", [step("sparql_query", sparql(["z"], [["é"]]), "s")], elapsed_sec=2.5),
        response("b2", [step("sparql_query", sparql(["y"], [["é"], ["ü"]]), "s")]),
        {"question_id": "b3", "status": "error"},
        response("a4", [step("sparql_query", sparql(["x"], [["v4"]]), "s")], input_tokens=7),
        response("a5", [], actual_answer="none"),
    ]  # b4: no response
    responses = folder / "responses.jsonl"
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    responses.write_text(text, encoding="utf-8")
    return reference, responses


def _kept_run(reference: Path, responses: Path, config: Path | None, out: Path) -> None:
    """The files a run that kept its results writes (the library's way)."""
    run = run_sync(lambda: evaluate(reference, responses, config))
    summary = RunSummary.of(run, reference=reference, responses=responses)
    write_run(out, run, summary, ["yaml", "json"])


@pytest.mark.parametrize("with_config", [False, True], ids=["defaults", "examples_config"])
def test_streamed_files_are_those_of_a_run_that_kept_its_results(
    tmp_path: Path, with_config: bool
) -> None:
    reference, responses = _inputs(tmp_path)
    config = EXAMPLES / "config.yaml" if with_config else None
    kept, streamed = tmp_path / "kept", tmp_path / "streamed"
    _kept_run(reference, responses, config, kept)
    options = ["-c", str(config)] if config else []
    args = ["evaluate", str(reference), str(responses), "-q", "--no-report", *options]
    assert main([*args, "-o", str(streamed), "--format", "json", "--yaml"]) == 0
    for name in (RESULTS_JSONL, RESULTS_JSON, RESULTS_YAML, AGGREGATES_YAML):
        assert (streamed / name).read_bytes() == (kept / name).read_bytes(), name
    records = [json.loads(line) for line in (streamed / RESULTS_JSONL).read_text().splitlines()]
    assert [r["question_id"] for r in records] == [
        *(f"a{i}" for i in range(6)),
        *(f"b{i}" for i in range(5)),
    ]
    assert json.loads((streamed / RESULTS_JSON).read_text()) == records
    assert yaml.safe_load((streamed / RESULTS_YAML).read_text()) == records
    assert not [path.name for path in streamed.iterdir() if path.name.endswith(".tmp")]


def test_examples_stream_to_the_same_files_and_report(tmp_path: Path) -> None:
    args = [str(EXAMPLES / "reference.yaml"), str(EXAMPLES / "responses.jsonl")]
    config = EXAMPLES / "config.yaml"
    kept, streamed = tmp_path / "kept", tmp_path / "streamed"
    _kept_run(Path(args[0]), Path(args[1]), config, kept)
    assert main(["evaluate", *args, "-c", str(config), "-q", "-o", str(streamed)]) == 0
    for name in (RESULTS_JSONL, AGGREGATES_YAML):
        assert (streamed / name).read_bytes() == (kept / name).read_bytes(), name
    report = (streamed / "report.html").read_text()
    assert "graphrag-eval report" in report


def test_a_resumed_run_streams_its_kept_items_in_reference_order(tmp_path: Path) -> None:
    reference, responses = _inputs(tmp_path)
    whole, out = tmp_path / "whole", tmp_path / "out"
    args = ["evaluate", str(reference), str(responses), "-q", "--no-report"]
    assert main([*args, "-o", str(whole)]) == 0
    lines = (whole / RESULTS_JSONL).read_text().splitlines(keepends=True)
    assert main([*args, "-o", str(out)]) == 0
    # An interrupted run's checkpoint: some items, in finishing order, no final files.
    (out / RESULTS_JSONL).write_text("".join([lines[7], lines[2], lines[9]]))
    (out / AGGREGATES_YAML).unlink()
    assert main([*args, "-o", str(out), "--resume"]) == 0
    assert (out / RESULTS_JSONL).read_bytes() == (whole / RESULTS_JSONL).read_bytes()
    assert (out / AGGREGATES_YAML).read_bytes() == (whole / AGGREGATES_YAML).read_bytes()
