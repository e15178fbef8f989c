"""``graphrag-eval validate`` with a store: each reference query executed once, the ones that
fail or give no rows reported (docs/inputs.md, "Checking inputs before a run")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphrag_eval.cli import main
from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.graph.stores import open_store

from builders import ask, dataset, question, ref_step, response, sparql, sparql_ref, step

pytest.importorskip("pyoxigraph")

GRAPH = """\
@prefix ex: <http://example.com/> .
ex:oslo ex:has ex:t1 .
ex:t1 ex:name "OSLO T1" .
"""
PREFIX = "PREFIX ex: <http://example.com/> "
GOOD = PREFIX + "SELECT ?name WHERE { ex:oslo ex:has ?t . ?t ex:name ?name }"
EMPTY = PREFIX + "SELECT ?name WHERE { ex:bergen ex:has ?t . ?t ex:name ?name }"
BROKEN = "SELECT ?name WHERE {"
UPDATE = "DROP ALL"
OUTPUT = sparql(["name"], [["OSLO T1"]])


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path, Path]:
    queries = {"good": GOOD, "empty": EMPTY, "broken": BROKEN, "update": UPDATE}
    questions = [
        question(qid, [[sparql_ref(OUTPUT, args={"query": query})]])
        for qid, query in queries.items()
    ]
    questions.append(question("ask", [[sparql_ref(ask(False), args={"query": PREFIX + "ASK {}"})]]))
    questions.append(question("no_query", [[ref_step("sparql_query", OUTPUT)]]))
    reference = tmp_path / "reference.json"
    reference.write_text(json.dumps(dataset(*questions)))
    responses = tmp_path / "responses.jsonl"
    lines = [response(qid, [step("sparql_query", OUTPUT, "s")]) for qid in [*queries, "ask"]]
    lines.append(response("no_query", [step("sparql_query", OUTPUT, "s")]))
    responses.write_text("".join(json.dumps(line) + "\n" for line in lines))
    graph = tmp_path / "graph.ttl"
    graph.write_text(GRAPH)
    return reference, responses, graph


def test_failing_and_empty_reference_queries_are_reported(
    capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path, Path]
) -> None:
    reference, responses, graph = inputs

    store = open_store(SparqlConfig(data=[str(graph)]))
    assert store is not None
    label = store.identity.label

    code, out, err = run(capsys, "validate", str(reference), str(responses), "--data", str(graph))

    assert (code, err) == (0, "")
    assert f"{reference}: 5 reference queries executed against {label}: 3 problems" in out
    assert "(reference query: 3)" in out
    lines = [line.strip() for line in out.splitlines() if ".args.query: " in line]
    assert lines == [
        f"{reference}: question 'empty': reference_steps[0][0].args.query: the query gives no "
        f"rows against {label}",
        lines[1],
        f"{reference}: question 'update': reference_steps[0][0].args.query: the query fails "
        f"against {label}: a SPARQL Update (DROP) is never executed: stores are "
        "read-only here (update_refused)",
    ]
    assert "question 'broken'" in lines[1]
    assert lines[1].endswith("(syntax_error)")


def test_strict_exits_2_on_a_failing_reference_query(
    capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path, Path]
) -> None:
    reference, responses, graph = inputs

    code, _, _ = run(
        capsys, "validate", str(reference), str(responses), "--data", str(graph), "--strict"
    )

    assert code == 2


def test_without_a_store_nothing_is_executed(
    capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path, Path]
) -> None:
    reference, responses, _ = inputs

    code, out, _ = run(capsys, "validate", str(reference), str(responses))

    assert code == 0
    assert "executed against" not in out
    assert "reference query" not in out


def test_a_store_file_that_does_not_parse_is_one_line(
    capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    reference, responses, _ = inputs
    broken = tmp_path / "broken.ttl"
    broken.write_text('@prefix ex: <http://example.com/> .\nex:a ex:b "open .\n')

    code, out, err = run(capsys, "validate", str(reference), str(responses), "--data", str(broken))

    assert (code, out) == (2, "")  # before any work
    assert err.count("\n") == 1 and err.startswith("graphrag-eval: error: ")
    assert "broken.ttl" in err and "Traceback" not in err


def test_an_endpoint_that_becomes_unusable_exits_3(
    capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    pytest.importorskip("graphrag_eval.graph.endpoint")
    from graphrag_eval.llm.client import BREAKER_FAILURES

    from judge_server import closed_port_url

    reference, responses, _ = inputs
    queries = [PREFIX + f"ASK {{ ?s ?p {n} }}" for n in range(BREAKER_FAILURES + 2)]
    questions = [
        question(f"q{n}", [[sparql_ref(OUTPUT, args={"query": query})]])
        for n, query in enumerate(queries)
    ]
    reference.write_text(json.dumps(dataset(*questions)))
    answers = [response(f"q{n}", [step("sparql_query", OUTPUT, "s")]) for n in range(len(queries))]
    responses.write_text("".join(json.dumps(answer) + "\n" for answer in answers))
    config = tmp_path / "config.yaml"
    config.write_text("sparql:\n  retries: 0\n  concurrency: 1\n")

    code, out, err = run(
        capsys,
        "validate",
        str(reference),
        str(responses),
        "--endpoint",
        closed_port_url(),
        "-c",
        str(config),
    )

    assert code == 3
    assert "validate incomplete: the SPARQL store" in err
    assert f"reference query: {BREAKER_FAILURES + 2}" in out
