"""``compare`` and the graph's identity (docs/knowledge-graph.md, "The graph's identity"): it
warns when the runs were scored against different graphs (or one against none), and tells a
question whose reference changed from one whose response changed. The runs are real
``evaluate`` runs against embedded stores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval import compare_results
from graphrag_eval.cli import main
from graphrag_eval.comparison.graph_identity import graph_difference

from builders import evaluate_cli, write_query_run

pytest.importorskip("pyoxigraph")

EX = "http://example.org/"
QUERY = f"SELECT ?t WHERE {{ <{EX}oslo> <{EX}contains> ?t }}"
OTHER = f"SELECT ?t WHERE {{ <{EX}bergen> <{EX}contains> ?t }}"
GRAPH = f"<{EX}oslo> <{EX}contains> <{EX}t1> .\n<{EX}bergen> <{EX}contains> <{EX}t9> .\n"
GROWN = GRAPH + f"<{EX}oslo> <{EX}contains> <{EX}t2> .\n"


def test_graphs_agree_by_fingerprint_else_by_everything_but_the_label() -> None:
    first = {"kind": "oxigraph", "label": "oxigraph:a", "files": ["a.ttl"], "fingerprint": "f1"}
    moved = {**first, "label": "oxigraph:b", "files": ["copy/a.ttl"]}
    assert graph_difference(None, None) is None
    assert graph_difference(first, moved) is None  # the same content, elsewhere
    changed = graph_difference(first, {**first, "fingerprint": "f2"})
    assert changed is not None and "different graphs" in changed
    endpoint = {"kind": "endpoint", "label": "http://host/q", "endpoint": "http://host/q"}
    assert graph_difference(endpoint, dict(endpoint)) is None
    other = graph_difference(endpoint, {**endpoint, "endpoint": "http://other/q"})
    assert other is not None
    one_sided = graph_difference(None, {**first, "triples": 1200})
    assert one_sided is not None
    assert "A: no store" in one_sided and "1,200 triples" in one_sided


def _write(folder: Path, graph: str, queries: dict[str, str]) -> tuple[Path, Path, Path]:
    """A graph (one file per content), a reference whose steps have no outputs (the run
    executes them), and responses that log ``queries`` (question id -> query) without
    outputs."""
    folder.mkdir()
    data = folder.parent / f"graph-{len(graph)}.nt"
    data.write_text(graph, encoding="utf-8")
    return (data, *write_query_run(folder, QUERY, queries))


def _run(tmp_path: Path, name: str, graph: str, queries: dict[str, str], store: bool) -> Path:
    data, reference, responses = _write(tmp_path / f"{name}-inputs", graph, queries)
    out = tmp_path / name
    options = ["--data", data] if store else []
    assert evaluate_cli(reference, responses, *options, "-o", out, "-q") == 0
    return out


def _compare(first: Path, second: Path, capsys: pytest.CaptureFixture[str], *extra: Any) -> Any:
    capsys.readouterr()
    assert main(["compare", str(first), str(second), *map(str, extra)]) == 0
    return capsys.readouterr().out


def test_a_grown_graph_is_warned_of_and_its_questions_changed_by_the_reference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = {"same": QUERY, "other": OTHER}
    before = _run(tmp_path, "before", GRAPH, queries, store=True)
    after = _run(tmp_path, "after", GROWN, queries, store=True)

    compared = json.loads(_compare(before, after, capsys, "--json"))
    assert "different graphs" in compared["graph_warning"]
    assert compared["reference_changed"] == ["same", "other"]  # the executed outputs moved
    assert compared["response_changed"] == []  # the same queries: the responses did not

    text = _compare(before, after, capsys)
    assert "warning: the runs were scored against different graphs" in text
    assert "reference changed on 2 questions" in text

    page = tmp_path / "comparison.html"
    _compare(before, after, capsys, "--html", page)
    html = page.read_text(encoding="utf-8")
    assert "different graphs" in html and "reference changed on 2 questions" in html


def test_the_same_graph_and_other_responses_change_the_responses_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _run(tmp_path, "before", GRAPH, {"q": QUERY, "r": QUERY}, store=True)
    after = _run(tmp_path, "after", GRAPH, {"q": OTHER, "r": QUERY}, store=True)

    compared = json.loads(_compare(before, after, capsys, "--json"))
    assert compared["graph_warning"] is None
    assert compared["reference_changed"] == []
    assert compared["response_changed"] == ["q"]
    assert compared["metrics"]["steps_score"]["worse_items"][0]["question_id"] == "q"

    text = _compare(before, after, capsys)
    assert "warning" not in text
    assert "q (t1): 1.000 -> 0.000 (response changed)" in text

    page = tmp_path / "comparison.html"
    _compare(before, after, capsys, "--html", page)
    assert "q &middot; response changed" in page.read_text(encoding="utf-8")


def test_one_run_with_a_store_and_one_without_is_warned_of(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    without = _run(tmp_path, "without", GRAPH, {"q": QUERY}, store=False)
    with_store = _run(tmp_path, "with", GRAPH, {"q": QUERY}, store=True)
    compared = json.loads(_compare(without, with_store, capsys, "--json"))
    assert "A: no store" in compared["graph_warning"]
    assert compared["reference_changed"] == ["q"]  # executed in B only
    assert compared["response_changed"] == []  # B executed its query: the same response


def _record(reference_output: str, **fields: Any) -> dict[str, Any]:
    step = {"name": "sparql_query", "args": {"query": QUERY}, "output": reference_output}
    return {
        "template_id": "t1",
        "question_id": "q",
        "status": "success",
        "reference_steps": [[{**step, **fields}]],
        "steps_score": 1.0,
    }


def test_the_same_rows_written_otherwise_are_the_same_reference() -> None:
    rows = [{"t": {"type": "uri", "value": f"{EX}t1"}}, {"t": {"type": "uri", "value": f"{EX}t2"}}]
    stored = json.dumps({"head": {"vars": ["t"]}, "results": {"bindings": rows}}, indent=2)
    executed = json.dumps(
        {
            "head": {"vars": ["t"]},
            "results": {
                "bindings": [
                    {"t": {"value": row["t"]["value"], "type": "uri"}} for row in reversed(rows)
                ]
            },
        }
    )
    run = {"source": "oxigraph:x", "elapsed_s": 0.1, "rows": 2, "truncated": False}
    same = compare_results(
        [_record(stored)], [_record(executed, execution=run, matches="s")], resamples=100
    )
    assert same.changed_inputs.reference == []
    fewer = json.dumps({"head": {"vars": ["t"]}, "results": {"bindings": rows[:1]}})
    moved = compare_results([_record(stored)], [_record(fewer, execution=run)], resamples=100)
    assert moved.changed_inputs.reference == ["q"]
    assert moved.cause("q") == "reference changed"
