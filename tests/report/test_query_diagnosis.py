"""``query_diagnosis`` in the outputs and the report (docs/knowledge-graph.md, "Why a query is
wrong: ``query_diagnosis``"): the labels per template in the aggregates and the report's
template section, and beside the rows of the step view."""

from __future__ import annotations

import html
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from graphrag_eval import compute_aggregates
from graphrag_eval.cli import main
from graphrag_eval.report.console import print_summary
from graphrag_eval.report.step_views import mismatch_views
from graphrag_eval.results.aggregation import aggregate
from graphrag_eval.results.from_records import read_records

from builders import SPARQL_JSON, dataset, question, response, sparql, sparql_ref, step, uri

pytest.importorskip("rdflib")

EX = "PREFIX ex: <http://example.org/>\n"
REFERENCE = EX + "SELECT ?p ?age WHERE { ?p a ex:Person ; ex:age ?age }"
AGES = sparql(["p", "age"], [[uri("http://example.org/ann"), "31"]])
HEIGHTS = sparql(["p", "h"], [[uri("http://example.org/ann"), "170"]])
WRONG = EX + "SELECT ?x ?h WHERE { ?x a ex:Person ; ex:height ?h }"
LIMITED = EX + "SELECT ?x ?a WHERE { ?x a ex:Person ; ex:age ?a } LIMIT 1"


def sparql_question(qid: str) -> dict[str, Any]:
    return question(qid, [[sparql_ref(AGES, args={"query": REFERENCE})]])


def sparql_response(qid: str, query: str, output: str) -> dict[str, Any]:
    return response(qid, [step("sparql_query", output, "s1", args={"query": query})])


@pytest.fixture
def run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A run of two templates: t1 with two wrong predicates and one right query, t2 with a
    LIMIT that differs."""
    data = tmp_path / "graph.ttl"
    data.write_text(  # every IRI the queries use is in the graph: no unknown_iri
        "@prefix ex: <http://example.org/> .\nex:ann a ex:Person ; ex:age 31 ; ex:height 170 .\n"
    )
    reference = tmp_path / "ref.json"
    reference.write_text(
        json.dumps(
            dataset(sparql_question("a"), sparql_question("b"), sparql_question("c"))
            + dataset(sparql_question("d"), template_id="t2")
        )
    )
    responses = tmp_path / "responses.jsonl"
    rows = [
        sparql_response("a", WRONG, HEIGHTS),
        sparql_response("b", WRONG, HEIGHTS),
        sparql_response("c", REFERENCE, AGES),
        sparql_response("d", LIMITED, sparql(["x", "a"], [])),
    ]
    responses.write_text("".join(json.dumps(row) + "\n" for row in rows))
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"sparql": {"data": [str(data)], "execute": "never"}}))
    out = tmp_path / "out"
    args = ["evaluate", str(reference), str(responses), "-c", str(config), "-o", str(out), "-q"]
    assert main(args) == 0
    assert main(["report", str(out)]) == 0
    assert main(["report", str(out), "--question", "a"]) == 0
    capsys.readouterr()
    return out


def test_the_aggregates_count_labels_per_template(run: Path) -> None:
    aggregates = yaml.safe_load((run / "aggregates.yaml").read_text())
    assert aggregates["per_template"]["t1"]["query_diagnosis"] == {
        "diagnosed_steps": 2,
        "labels": {"wrong_predicate": 2},
    }
    assert aggregates["per_template"]["t2"]["query_diagnosis"] == {
        "diagnosed_steps": 1,
        "labels": {"limit_differs": 1},
    }
    assert aggregates["micro"]["query_diagnosis"] == {
        "diagnosed_steps": 3,
        "labels": {"wrong_predicate": 2, "limit_differs": 1},
    }
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    [[step_c]] = records[2]["reference_steps"]
    assert step_c["matches"] == "s1" and "query_diagnosis" not in step_c


def test_the_report_shows_the_counts_in_the_template_section(run: Path) -> None:
    page = html.unescape((run / "report.html").read_text(encoding="utf-8"))
    templates = page[page.index('id="templates"') : page.index('id="steps"')]
    t1 = templates[templates.index(">t1 ") : templates.index(">t2 ")]
    assert "why the query is wrong (query_diagnosis)" in t1
    assert (
        '<td><code>wrong_predicate</code></td><td class="num">2</td><td class="num">100%</td>' in t1
    )
    assert "Of 2 SPARQL reference steps below a full match" in t1
    assert "limit_differs" in templates[templates.index(">t2 ") :]


def test_the_step_view_shows_the_labels_beside_the_rows(run: Path) -> None:
    page = html.unescape((run / "question-a.html").read_text(encoding="utf-8"))
    body = page[page.index('class="mismatch-body"') :]
    assert body.index('class="side-by-side"') < body.index('class="diagnosis"')
    assert (
        '<code class="diagnosis-label">wrong_predicate</code> expected <code>ex:age</code>; '
        "found <code>ex:height</code>"
    ) in body


def saved(diagnosis: Any, template: str = "t1") -> dict[str, Any]:
    step = {
        "name": "sparql_query",
        "output_media_type": SPARQL_JSON,
        "mismatch_reason": "why",
        "query_diagnosis": diagnosis,
    }
    return {
        "template_id": template,
        "question_id": "q",
        "status": "success",
        "reference_steps": [[step]],
        "actual_steps": [],
    }


def test_malformed_saved_diagnoses_are_left_out() -> None:
    records = [
        saved([{"label": "wrong_predicate", "expected": ["ex:a"], "found": "not a list"}]),
        saved("not a list"),
        saved([{"no": "label"}, 3]),
    ]
    aggregates = compute_aggregates(records)
    assert aggregates["per_template"]["t1"]["query_diagnosis"] == {
        "diagnosed_steps": 2,
        "labels": {"wrong_predicate": 1},
    }
    [view] = mismatch_views(records[0])
    assert [(d.label, d.expected, d.found) for d in view.diagnosis] == [
        ("wrong_predicate", ["ex:a"], [])
    ]
    assert mismatch_views(records[1])[0].diagnosed is False


def test_a_run_without_diagnoses_has_no_query_diagnosis_key() -> None:
    record = saved(None)
    del record["reference_steps"][0][0]["query_diagnosis"]
    aggregates = compute_aggregates([record])
    assert "query_diagnosis" not in aggregates["micro"]
    assert "query_diagnosis" not in aggregates["per_template"]["t1"]


def test_terms_of_a_hostile_query_are_escaped_and_clipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = "<script>alert(1)</script>"
    hostile = EX + f'SELECT ?x ?a WHERE {{ ?x a ex:Person ; ex:age ?a FILTER(?a != "{script}") }}'
    reference = tmp_path / "ref.json"
    reference.write_text(json.dumps(dataset(sparql_question("a"))))
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps(sparql_response("a", hostile, HEIGHTS)) + "\n")
    config = tmp_path / "config.yaml"
    data = tmp_path / "g.ttl"
    data.write_text("<http://example.org/ann> <http://example.org/age> 31 .\n")
    config.write_text(yaml.safe_dump({"sparql": {"data": [str(data)], "execute": "never"}}))
    out = tmp_path / "out"
    args = ["evaluate", str(reference), str(responses), "-c", str(config), "-o", str(out), "-q"]
    assert main(args) == 0
    assert main(["report", str(out), "--question", "a"]) == 0
    capsys.readouterr()
    page = (out / "question-a.html").read_text(encoding="utf-8")
    assert script not in page
    assert f'FILTER(?a != "{script}")' in html.unescape(page)
    long_term = {"label": "extra_filter", "expected": [], "found": ["x" * 5000, {"a": 1}]}
    [view] = mismatch_views(saved([long_term]))
    assert [len(term) for term in view.diagnosis[0].found] == [200, 8]


def test_the_terminal_summary_counts_the_labels(run: Path) -> None:
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    typed = read_records(records)
    console = Console(file=io.StringIO(), width=200, color_system=None)
    print_summary(console, aggregate(typed), typed.layout)
    assert isinstance(console.file, io.StringIO)
    assert (
        "query_diagnosis (3 SPARQL steps): wrong_predicate 2, limit_differs 1"
        in console.file.getvalue()
    )
