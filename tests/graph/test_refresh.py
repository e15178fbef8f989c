"""Refreshing a reference against the embedded store: each kind of drift, the outputs written
and the ones kept (docs/knowledge-graph.md, "Refreshing references: drift")."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.graph.drift import Drift
from graphrag_eval.graph.refresh import Refreshed, check_reference_queries, refresh_reference
from graphrag_eval.graph.stores import open_store
from graphrag_eval.inputs.reference import load_reference, parse_reference

from builders import ask, dataset, question, ref_step, sparql, sparql_ref

pytest.importorskip("pyoxigraph")

GRAPH = """\
@prefix ex: <http://example.com/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:oslo ex:name "OSLO" ; ex:has ex:t1, ex:t2 .
ex:t1 ex:name "OSLO T1" ; ex:rating 100 .
ex:t2 ex:name "OSLO T2" ; ex:rating 250 .
ex:bergen ex:name "BERGEN" .
"""
PREFIX = "PREFIX ex: <http://example.com/>\n"
OSLO = PREFIX + "SELECT ?t ?name WHERE { ex:oslo ex:has ?t . ?t ex:name ?name }"
OSLO_ORDERED = OSLO + " ORDER BY ?name"
BERGEN = PREFIX + "SELECT ?t ?name WHERE { ex:bergen ex:has ?t . ?t ex:name ?name }"
RATINGS = PREFIX + "SELECT ?r WHERE { ?t ex:rating ?r }"
HAS_T1 = PREFIX + "ASK { ex:oslo ex:has ex:t1 }"
BROKEN = "SELECT ?x WHERE { ?x"
UPDATE = PREFIX + "DELETE WHERE { ?s ?p ?o }"


def uri(name: str) -> dict[str, str]:
    return {"type": "uri", "value": f"http://example.com/{name}"}


def decimal(value: str) -> dict[str, str]:
    return {
        "type": "literal",
        "value": value,
        "datatype": "http://www.w3.org/2001/XMLSchema#decimal",
    }


T1, T2 = [uri("t1"), "OSLO T1"], [uri("t2"), "OSLO T2"]
BOTH_REVERSED = sparql(["t", "name"], [T2, T1])


def step(query: str | None, output: Any, **fields: Any) -> dict[str, Any]:
    args = {"query": query} if query is not None else {}
    return (
        sparql_ref(output, args=args, **fields)
        if output is not None
        else ref_step("sparql_query", args=args, **fields)
    )


def reference() -> list[dict[str, Any]]:
    return dataset(
        question("unchanged", [[step(OSLO, BOTH_REVERSED)]]),
        question("added", [[step(OSLO, sparql(["t", "name"], [T1]))]]),
        question("swapped", [[step(OSLO, sparql(["t", "name"], [T1, [uri("t3"), "OSLO T3"]]))]]),
        question("order", [[step(OSLO_ORDERED, BOTH_REVERSED, ordered=True)]]),
        question("empty", [[step(BERGEN, sparql(["t", "name"], [T1]))]]),
        question("numbers", [[step(RATINGS, json.dumps(_ratings("100.0", "250")))]]),
        question("ask", [[step(HAS_T1, ask(False))]]),
        question("broken", [[step(BROKEN, BOTH_REVERSED)]]),
        question("update", [[step(UPDATE, BOTH_REVERSED)]]),
        question("no_query", [[step(None, BOTH_REVERSED)]]),
        question("no_output", [[step(OSLO, None)]]),
        question("turtle", [[step(OSLO, "@prefix ex: <http://example.com/> .")]]),
        question("no_steps"),
    )


def _ratings(*values: str) -> dict[str, Any]:
    rows = [{"r": decimal(value)} for value in values]
    return {"head": {"vars": ["r"]}, "results": {"bindings": rows}}


@pytest.fixture
def graph(tmp_path: Path) -> Path:
    path = tmp_path / "graph.ttl"
    path.write_text(GRAPH)
    return path


def refresh(path: Path, graph: Path, **settings: Any) -> Refreshed:
    store = open_store(SparqlConfig(data=[str(graph)], **settings))
    assert store is not None
    return asyncio.run(refresh_reference(path, store))


def outputs(text: str) -> dict[str, Any]:
    return {
        q["id"]: q["reference_steps"][0][0].get("output")
        for q in yaml.safe_load(text)[0]["questions"]
        if "reference_steps" in q
    }


def drifts(refreshed: Refreshed) -> dict[str, Drift]:
    return {question.question_id: question.drift for question in refreshed.report.questions}


def test_each_kind_of_drift(tmp_path: Path, graph: Path) -> None:
    path = tmp_path / "reference.yaml"
    path.write_text(yaml.safe_dump(reference(), sort_keys=False))

    refreshed = refresh(path, graph)

    assert drifts(refreshed) == {
        "unchanged": Drift.UNCHANGED,
        "added": Drift.CHANGED,
        "swapped": Drift.CHANGED,
        "order": Drift.CHANGED,
        "empty": Drift.NOW_EMPTY,
        "numbers": Drift.UNCHANGED,  # 100.0 (decimal) is 100 (integer), as steps compare
        "ask": Drift.CHANGED,
        "broken": Drift.NOW_FAILING,
        "update": Drift.NOW_FAILING,
        "no_query": Drift.NO_QUERY,
        "no_output": Drift.CHANGED,
        "turtle": Drift.CHANGED,
        "no_steps": Drift.NO_QUERY,
    }
    steps = {q.question_id: q.steps[0] for q in refreshed.report.questions if q.steps}
    assert (steps["added"].added_count, steps["added"].removed_count) == (1, 0)
    assert steps["added"].added == ({"t": "http://example.com/t2", "name": "OSLO T2"},)
    assert steps["swapped"].removed == ({"t": "http://example.com/t3", "name": "OSLO T3"},)
    assert "order differs" in (steps["order"].reason or "")
    assert steps["empty"].removed_count == 1
    assert (steps["empty"].rows_before, steps["empty"].rows_after) == (1, 0)
    assert steps["broken"].error_kind == "syntax_error"
    assert steps["update"].error_kind == "update_refused"
    assert steps["turtle"].reason == "the output was not SPARQL results"
    assert steps["turtle"].added_count == 2
    assert refreshed.refreshed == 7  # added, swapped, order, empty, ask, no_output, turtle


def test_fresh_outputs_are_written_and_the_others_kept(tmp_path: Path, graph: Path) -> None:
    path = tmp_path / "reference.yaml"
    path.write_text(yaml.safe_dump(reference(), sort_keys=False, width=80))
    before = outputs(path.read_text())

    after = outputs(refresh(path, graph).text)

    for kept in ("unchanged", "numbers", "broken", "update", "no_query"):
        assert after[kept] == before[kept], kept
    for fresh in ("added", "swapped", "no_output", "turtle"):
        rows = json.loads(after[fresh])["results"]["bindings"]
        names = sorted(row["name"]["value"] for row in rows)
        assert names == ["OSLO T1", "OSLO T2"], fresh
    assert [r["name"]["value"] for r in json.loads(after["order"])["results"]["bindings"]] == [
        "OSLO T1",
        "OSLO T2",
    ]
    assert json.loads(after["empty"])["results"]["bindings"] == []
    assert json.loads(after["ask"])["boolean"] is True
    # The refreshed reference reads as a reference, and is unchanged against the same graph.
    parse_reference(yaml.safe_load(refresh(path, graph).text))
    again = tmp_path / "again.yaml"
    again.write_text(refresh(path, graph).text)
    assert refresh(again, graph).refreshed == 0


def test_a_json_reference_stays_json(tmp_path: Path, graph: Path) -> None:
    path = tmp_path / "reference.json"
    path.write_text(json.dumps(reference(), indent=2))

    refreshed = refresh(path, graph)

    data = json.loads(refreshed.text)
    assert refreshed.text == json.dumps(data, indent=2)
    assert outputs(refreshed.text)["unchanged"] == BOTH_REVERSED
    assert json.loads(outputs(refreshed.text)["ask"])["boolean"] is True


def test_a_mapping_output_stays_a_mapping(tmp_path: Path, graph: Path) -> None:
    path = tmp_path / "reference.yaml"
    stale = json.loads(sparql(["t", "name"], [T1]))
    path.write_text(yaml.safe_dump(dataset(question("q", [[step(OSLO, stale)]]))))

    output = outputs(refresh(path, graph).text)["q"]

    assert isinstance(output, dict)
    assert len(output["results"]["bindings"]) == 2


def test_a_query_over_the_row_limit_keeps_its_output(tmp_path: Path, graph: Path) -> None:
    path = tmp_path / "reference.yaml"
    path.write_text(yaml.safe_dump(dataset(question("q", [[step(OSLO, BOTH_REVERSED)]]))))

    refreshed = refresh(path, graph, row_limit=1)

    (only,) = refreshed.report.questions[0].steps
    assert (only.drift, only.error_kind) == (Drift.NOW_FAILING, "truncated")
    assert refreshed.text == path.read_text()


def test_the_same_query_is_executed_once(tmp_path: Path, graph: Path) -> None:
    path = tmp_path / "reference.yaml"
    path.write_text(yaml.safe_dump(reference()))

    refreshed = refresh(path, graph)

    assert refreshed.queries == 7  # 7 distinct queries among the 11 steps with one


def test_the_report_counts_per_template(tmp_path: Path, graph: Path) -> None:
    data = reference() + dataset(question("other", [[step(BROKEN, None)]]), template_id="t2")
    path = tmp_path / "reference.yaml"
    path.write_text(yaml.safe_dump(data))

    record = refresh(path, graph).report.as_record()

    assert record["store"]["kind"] == "oxigraph"
    assert record["steps"] == {
        "unchanged": 2,
        "changed": 6,
        "now_empty": 1,
        "now_failing": 3,
        "no_query": 1,
    }
    assert record["questions"]["no_query"] == 2  # the question without steps too
    assert [t["template_id"] for t in record["templates"]] == ["t1", "t2"]
    assert record["templates"][1]["questions"]["now_failing"] == 1
    first = record["drift"][1]
    assert first["question_id"] == "added"
    assert first["steps"][0]["added"] == [{"t": "http://example.com/t2", "name": "OSLO T2"}]


def test_validate_check_names_failing_and_empty_queries(tmp_path: Path, graph: Path) -> None:
    path = tmp_path / "reference.yaml"
    path.write_text(yaml.safe_dump(reference()))
    questions = parse_reference(load_reference(path), source=str(path))
    store = open_store(SparqlConfig(data=[str(graph)]))
    assert store is not None

    notices = asyncio.run(check_reference_queries(questions, store, str(path)))

    found = {(notice.item, notice.message.split(":")[0]) for notice in notices}
    assert found == {
        ("question 'empty'", "the query gives no rows against oxigraph"),
        ("question 'broken'", "the query fails against oxigraph"),
        ("question 'update'", "the query fails against oxigraph"),
    }
    assert all(notice.kind == "reference_query" for notice in notices)
    assert all(notice.field == "reference_steps[0][0].args.query" for notice in notices)


@pytest.mark.parametrize("stale", [True, False])
def test_a_byte_order_mark_and_windows_line_endings_are_kept(
    tmp_path: Path, graph: Path, stale: bool
) -> None:
    output = sparql(["t", "name"], [T1] if stale else [T1, T2])
    text = yaml.safe_dump(dataset(question("q", [[step(OSLO, output)]])), width=1000)
    path = tmp_path / "reference.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())

    refreshed = refresh(path, graph)

    assert refreshed.text.startswith("\ufeff")
    assert "\n" not in refreshed.text.replace("\r\n", "")
    assert (refreshed.text == "\ufeff" + text.replace("\n", "\r\n")) is not stale
