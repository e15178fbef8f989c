"""``evaluate`` with a store (docs/knowledge-graph.md): ``--data``/``--endpoint``, the graph's
identity in run.yaml, a store that cannot be opened (one line, exit 2, nothing written) and
one that became unusable during the run (exit 3, naming it)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import yaml

from graphrag_eval.cli.errors import EXIT_BAD_INPUT, EXIT_INCOMPLETE

from builders import (
    evaluate_cli,
    read_results,
    write_query_run,
)
from judge_server import closed_port_url

pytest.importorskip("pyoxigraph")

EX = "http://example.org/"
QUERY = f"SELECT ?n WHERE {{ <{EX}a> <{EX}name> ?n }}"


def _inputs(folder: Path, questions: int = 2) -> tuple[Path, Path, Path]:
    graph = folder / "graph.ttl"
    graph.write_text(f'<{EX}a> <{EX}name> "A" .\n', encoding="utf-8")
    queries = {f"q{number}": QUERY for number in range(questions)}
    return (graph, *write_query_run(folder, QUERY, queries))


def test_data_scores_by_execution_and_run_yaml_names_the_graph(tmp_path: Path) -> None:
    graph, reference, responses = _inputs(tmp_path)
    out = tmp_path / "out"
    assert evaluate_cli(reference, responses, "--data", graph, "-o", out, "-q") == 0
    results = read_results(out)
    assert {record["steps_score"] for record in results.values()} == {1.0}
    assert results["q0"]["actual_steps"][0]["execution"]["rows"] == 1
    run = yaml.safe_load((out / "run.yaml").read_text(encoding="utf-8"))
    assert run["graph"]["kind"] == "oxigraph"
    assert run["graph"]["triples"] == 1
    assert run["graph"]["label"] == results["q0"]["actual_steps"][0]["execution"]["source"]


def test_without_a_store_run_yaml_has_no_graph(tmp_path: Path) -> None:
    _, reference, responses = _inputs(tmp_path)
    out = tmp_path / "out"
    assert evaluate_cli(reference, responses, "-o", out, "-q") == 0
    assert "graph" not in yaml.safe_load((out / "run.yaml").read_text(encoding="utf-8"))
    record = read_results(out)["q0"]
    assert record["steps_score"] == 0  # no output, nothing to execute it against
    assert "execution" not in record["actual_steps"][0]


def test_a_store_that_cannot_be_opened_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph, reference, responses = _inputs(tmp_path)
    graph.write_text("@prefix ex <x> .\n", encoding="utf-8")
    out = tmp_path / "out"
    assert evaluate_cli(reference, responses, "--data", graph, "-o", out) == EXIT_BAD_INPUT
    [line] = capsys.readouterr().err.strip().splitlines()
    assert str(graph) in line and "line 1" in line
    assert not out.exists()


def test_a_missing_extra_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    graph, reference, responses = _inputs(tmp_path)
    monkeypatch.setitem(sys.modules, "pyoxigraph", None)  # as if the extra were not installed
    out = tmp_path / "out"
    assert evaluate_cli(reference, responses, "--data", graph, "-o", out) == EXIT_BAD_INPUT
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "graphrag-eval[sparql]" in line
    assert not out.exists()


def test_endpoint_and_data_together_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph, reference, responses = _inputs(tmp_path)
    code = evaluate_cli(
        reference, responses, "--data", graph, "--endpoint", "http://127.0.0.1:1/q", "-o", tmp_path
    )
    assert code == EXIT_BAD_INPUT
    assert "either --endpoint or --data" in capsys.readouterr().err


@pytest.mark.skipif(
    importlib.util.find_spec("graphrag_eval.graph.endpoint") is None,
    reason="the endpoint store is not in this build",
)
def test_an_endpoint_that_became_unusable_makes_the_run_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, reference, responses = _inputs(tmp_path, questions=12)
    url = closed_port_url()
    out = tmp_path / "out"
    code = evaluate_cli(reference, responses, "--endpoint", url, "-o", out, "-q")
    assert code == EXIT_INCOMPLETE
    [line] = [line for line in capsys.readouterr().err.splitlines() if "SPARQL store" in line]
    assert url.split("://")[1].split("/")[0] in line and "became unusable" in line
    results = read_results(out)
    assert len(results) == 12  # every item was written: its steps have the store's error
    assert all("error" in record["actual_steps"][0]["execution"] for record in results.values())


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "knowledge-graph"
EXPECTED = {  # by construction (examples/knowledge-graph/make_example.py)
    "substation_transformers_1": 1.0,
    "substation_transformers_2": 1.0,  # other names, the required column only
    "substation_transformers_3": 0.0,  # the filter on the substation is missing
    "substation_capacity_1": 1.0,
    "substation_capacity_2": 0.0,  # MAX instead of SUM
    "substation_neighbours_1": 1.0,
    "substation_neighbours_2": 0.0,  # one direction of the lines only
    "substations_connected_1": 1.0,
    "substations_connected_2": 1.0,
}


def test_the_bundled_example_runs_offline(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = evaluate_cli(
        EXAMPLE / "reference.yaml",
        EXAMPLE / "responses.jsonl",
        "--data",
        EXAMPLE / "graph.ttl",
        "-o",
        out,
        "-q",
    )
    assert code == 0
    results = read_results(out)
    assert {qid: record["steps_score"] for qid, record in results.items()} == EXPECTED
    for record in results.values():
        [actual] = record["actual_steps"]
        assert actual["execution"]["source"].startswith("oxigraph:")
        [[reference_step]] = record["reference_steps"]
        assert "execution" not in reference_step  # it has its output
    run = yaml.safe_load((out / "run.yaml").read_text(encoding="utf-8"))
    assert run["graph"]["triples"] == 108


def test_the_bundled_examples_reference_outputs_are_the_graphs() -> None:
    from graphrag_eval import run_evaluation

    config = {"sparql": {"data": [str(EXAMPLE / "graph.ttl")], "execute": "always"}}
    results = run_evaluation(EXAMPLE / "reference.yaml", EXAMPLE / "responses.jsonl", config)
    assert {record["question_id"]: record["steps_score"] for record in results} == EXPECTED


def test_resume_refuses_a_run_scored_against_another_graph(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The graph's content is part of what a resumed run must share with the run it continues:
    the same file path with other triples is another graph."""
    graph, reference, responses = _inputs(tmp_path)
    out = tmp_path / "out"
    assert evaluate_cli(reference, responses, "--data", graph, "-o", out, "-q") == 0
    assert evaluate_cli(reference, responses, "--data", graph, "-o", out, "--resume", "-q") == 0
    graph.write_text(f'<{EX}a> <{EX}name> "B" .\n', encoding="utf-8")
    capsys.readouterr()
    code = evaluate_cli(reference, responses, "--data", graph, "-o", out, "--resume", "-q")
    assert code == EXIT_BAD_INPUT
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "scoring settings or graph" in line


def test_the_summary_says_what_was_executed_against_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph, reference, responses = _inputs(tmp_path, questions=3)
    out = tmp_path / "out"
    capsys.readouterr()
    assert evaluate_cli(reference, responses, "--data", graph, "-o", out) == 0
    label = yaml.safe_load((out / "run.yaml").read_text(encoding="utf-8"))["graph"]["label"]
    # one query text, on both sides of three questions: executed once for the run (each item
    # asks once for its query), served to the two other items
    expected = f"SPARQL: 1 query executed against {label} (2 more served from those)"
    assert expected in capsys.readouterr().out.splitlines()
