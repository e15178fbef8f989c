"""Test-suite accuracy in a whole run (docs/knowledge-graph.md, "Test-suite accuracy"): the
command line on the bundled knowledge-graph example, where the run's store is shared between
its steps' executions and the metric."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from graphrag_eval.cli import main

pytest.importorskip("pyoxigraph")
pytest.importorskip("rdflib")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "knowledge-graph"
KEY = "sparql_test_suite_accuracy"


def _run(tmp_path: Path, section: dict[str, object]) -> tuple[int, Path]:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"metrics": [KEY], **section}), encoding="utf-8")
    out = tmp_path / "out"
    code = main(
        [
            "evaluate",
            str(EXAMPLE / "reference.yaml"),
            str(EXAMPLE / "responses.jsonl"),
            "-c",
            str(config),
            "-o",
            str(out),
            "-q",
        ]
    )
    return code, out


def test_a_query_that_agrees_by_accident_is_found_in_a_run(tmp_path: Path) -> None:
    sparql = {"data": [str(EXAMPLE / "graph.ttl")], "test_suite": {"copies": 3}}
    code, out = _run(tmp_path, {"sparql": sparql})
    assert code == 0
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert all(KEY in record for record in records)  # every question was scored
    by_accident = [r for r in records if r["steps_score"] == pytest.approx(1) and r[KEY] < 1]
    assert by_accident  # the example has a response right today, wrong on the copies
    wrong = [r for r in records if r["steps_score"] == pytest.approx(0)]
    assert wrong and all(r[KEY] == pytest.approx(0) for r in wrong)
    aggregates = yaml.safe_load((out / "aggregates.yaml").read_text())
    assert 0 < aggregates["micro"][KEY]["mean"] < aggregates["micro"]["steps_score"]["mean"]


def test_listed_without_copies_or_without_a_store_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = _run(tmp_path, {})
    assert code == 2
    assert "sparql.test_suite.copies is 0" in capsys.readouterr().err
    code, _ = _run(tmp_path, {"sparql": {"test_suite": {"copies": 2}}})
    assert code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert f"metric '{KEY}' needs a SPARQL store" in line
