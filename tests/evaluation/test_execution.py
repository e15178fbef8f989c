"""Execution-based scoring (docs/knowledge-graph.md, "Execution-based scoring"): SPARQL steps
executed against a real embedded Oxigraph store before their matching, through the public
``run_evaluation``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval import run_evaluation
from graphrag_eval.evaluation.runner import evaluate

from builders import (
    SPARQL_JSON,
    dataset,
    question,
    ref_step,
    response,
    sparql,
    sparql_ref,
    step,
    uri,
)

pytest.importorskip("pyoxigraph")

EX = "http://example.org/"
GRAPH = f"""
@prefix ex: <{EX}> .
ex:oslo ex:name "OSLO" ; ex:contains ex:t1, ex:t2 .
ex:bergen ex:name "BERGEN" ; ex:contains ex:t3 .
ex:t1 ex:name "OSLO T1" .
ex:t2 ex:name "OSLO T2" .
ex:t3 ex:name "BERGEN T1" .
"""
OSLO_TRANSFORMERS = f"SELECT ?t WHERE {{ <{EX}oslo> <{EX}contains> ?t }}"
BERGEN_TRANSFORMERS = f"SELECT ?t WHERE {{ <{EX}bergen> <{EX}contains> ?t }}"
OSLO_ROWS = sparql(["t"], [[uri(f"{EX}t1")], [uri(f"{EX}t2")]])


@pytest.fixture
def graph(tmp_path: Path) -> str:
    path = tmp_path / "graph.ttl"
    path.write_text(GRAPH, encoding="utf-8")
    return str(path)


def _config(graph: str, **sparql_settings: Any) -> dict[str, Any]:
    return {"sparql": {"data": [graph], **sparql_settings}}


def _query_step(query: str, output: Any = None, **fields: Any) -> dict[str, Any]:
    return step("sparql_query", output, args={"query": query}, **fields)


def _query_ref(query: str, output: str | None = None, typed: bool = False) -> dict[str, Any]:
    """A reference SPARQL step; without an output, with its media type when ``typed``."""
    if output is None:
        typing = {"output_media_type": SPARQL_JSON} if typed else {}
        return ref_step("sparql_query", args={"query": query}, **typing)
    return sparql_ref(output, args={"query": query})


def _by_id(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {result["question_id"]: result for result in results}


def _rows(output: str) -> set[str]:
    return {row["t"]["value"] for row in json.loads(output)["results"]["bindings"]}


def test_missing_outputs_are_executed_and_scored(graph: str) -> None:
    reference = dataset(
        question("right", [[_query_ref(OSLO_TRANSFORMERS, typed=True)]]),
        question("wrong", [[_query_ref(OSLO_TRANSFORMERS, OSLO_ROWS)]]),
    )
    responses = [
        response("right", [_query_step(OSLO_TRANSFORMERS, step_id="a")]),
        response("wrong", [_query_step(BERGEN_TRANSFORMERS, step_id="b")]),
    ]
    results = _by_id(run_evaluation(reference, responses, _config(graph)))

    right = results["right"]
    assert right["steps_score"] == 1
    [[reference_step]] = right["reference_steps"]
    assert reference_step["matches"] == "a"
    assert _rows(reference_step["output"]) == {f"{EX}t1", f"{EX}t2"}
    assert reference_step["output_media_type"] == "application/sparql-results+json"
    execution = reference_step["execution"]
    assert execution["source"].startswith("oxigraph:")
    assert execution["rows"] == 2 and execution["truncated"] is False
    assert execution["elapsed_s"] >= 0
    [actual] = right["actual_steps"]
    assert actual["execution"]["rows"] == 2
    assert _rows(actual["output"]) == {f"{EX}t1", f"{EX}t2"}

    wrong = results["wrong"]
    assert wrong["steps_score"] == 0
    [[reference_step]] = wrong["reference_steps"]
    assert "execution" not in reference_step  # it has an output: missing leaves it
    assert reference_step["output"] == OSLO_ROWS
    [actual] = wrong["actual_steps"]
    assert _rows(actual["output"]) == {f"{EX}t3"}
    assert "missing" in reference_step["mismatch_reason"]


def test_missing_executes_cut_short_and_foreign_outputs_but_not_usable_ones(graph: str) -> None:
    reference = dataset(
        question("cut", [[_query_ref(OSLO_TRANSFORMERS, OSLO_ROWS)]]),
        question("text", [[_query_ref(OSLO_TRANSFORMERS, OSLO_ROWS)]]),
        question("logged", [[_query_ref(OSLO_TRANSFORMERS, OSLO_ROWS)]]),
    )
    logged = sparql(["t"], [[uri(f"{EX}t1")]])  # usable, and wrong: it is scored as logged
    responses = [
        response("cut", [_query_step(OSLO_TRANSFORMERS, OSLO_ROWS[:30])]),
        response("text", [_query_step(OSLO_TRANSFORMERS, "t1, t2 (2 rows)")]),
        response("logged", [_query_step(OSLO_TRANSFORMERS, logged)]),
    ]
    results = _by_id(run_evaluation(reference, responses, _config(graph)))
    assert results["cut"]["steps_score"] == 1
    assert results["cut"]["actual_steps"][0]["execution"]["rows"] == 2
    assert results["text"]["steps_score"] == 1
    assert results["logged"]["steps_score"] == 0
    [actual] = results["logged"]["actual_steps"]
    assert "execution" not in actual and actual["output"] == logged


def test_always_executes_both_sides_against_the_graph_as_it_is(graph: str) -> None:
    stale = sparql(["t"], [[uri(f"{EX}t1")]])  # the graph has gained t2 since
    reference = dataset(question("q", [[_query_ref(OSLO_TRANSFORMERS, stale)]]))
    responses = [response("q", [_query_step(OSLO_TRANSFORMERS, stale)])]

    as_logged = _by_id(run_evaluation(reference, responses, _config(graph, execute="never")))
    assert as_logged["q"]["steps_score"] == 1
    assert "execution" not in as_logged["q"]["actual_steps"][0]

    now = _by_id(run_evaluation(reference, responses, _config(graph, execute="always")))["q"]
    assert now["steps_score"] == 1
    [[reference_step]] = now["reference_steps"]
    assert _rows(reference_step["output"]) == {f"{EX}t1", f"{EX}t2"}
    assert reference_step["execution"]["rows"] == 2
    assert now["actual_steps"][0]["execution"]["rows"] == 2


def test_never_executes_nothing_and_a_reference_without_output_cannot_match(graph: str) -> None:
    reference = dataset(question("q", [[_query_ref(OSLO_TRANSFORMERS, typed=True)]]))
    responses = [response("q", [_query_step(OSLO_TRANSFORMERS)])]
    [result] = run_evaluation(reference, responses, _config(graph, execute="never"))
    assert result["steps_score"] == 0
    [[reference_step]] = result["reference_steps"]
    assert "execution" not in reference_step
    assert "execution" not in result["actual_steps"][0]


def test_an_execution_error_is_the_steps_problem_and_the_run_goes_on(graph: str) -> None:
    refused = f"DELETE WHERE {{ <{EX}oslo> ?p ?o }}"
    reference = dataset(
        question("bad-actual", [[_query_ref(OSLO_TRANSFORMERS)]]),
        question("bad-reference", [[_query_ref(refused)]]),
        question("fine", [[_query_ref(OSLO_TRANSFORMERS)]]),
    )
    responses = [
        response("bad-actual", [_query_step("SELECT ?t WHERE { oops")]),
        response("bad-reference", [_query_step(OSLO_TRANSFORMERS)]),
        response("fine", [_query_step(OSLO_TRANSFORMERS)]),
    ]
    results = _by_id(run_evaluation(reference, responses, _config(graph)))

    bad_actual = results["bad-actual"]
    assert bad_actual["status"] == "success" and bad_actual["steps_score"] == 0
    execution = bad_actual["actual_steps"][0]["execution"]
    assert execution["error_kind"] == "syntax_error" and execution["error"]
    assert "rows" not in execution

    bad_reference = results["bad-reference"]
    assert bad_reference["steps_score"] == 0
    [[reference_step]] = bad_reference["reference_steps"]
    assert reference_step["execution"]["error_kind"] == "update_refused"
    assert reference_step["input_error"].startswith("its query could not be executed")

    assert results["fine"]["steps_score"] == 1


def test_a_result_over_the_row_limit_is_cut_and_says_so(graph: str) -> None:
    everything = "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"
    reference = dataset(question("q", [[_query_ref(everything)]]))
    responses = [response("q", [_query_step(everything)])]
    [result] = run_evaluation(reference, responses, _config(graph, row_limit=3))
    execution = result["actual_steps"][0]["execution"]
    assert execution == {**execution, "rows": 3, "truncated": True}
    assert len(json.loads(result["actual_steps"][0]["output"])["results"]["bindings"]) == 3


def test_a_step_that_failed_in_the_agent_is_not_executed(graph: str) -> None:
    reference = dataset(question("q", [[_query_ref(OSLO_TRANSFORMERS)]]))
    failed = _query_step(OSLO_TRANSFORMERS, status="error", error="timeout")
    [result] = run_evaluation(reference, [response("q", [failed])], _config(graph))
    assert result["steps_score"] == 0
    assert "execution" not in result["actual_steps"][0]


def test_an_execution_copied_from_an_earlier_run_is_dropped(graph: str) -> None:
    # An earlier run's results given as input: its executions did not happen in this run.
    earlier = {"source": "oxigraph:old.ttl", "elapsed_s": 0.1, "rows": 2, "truncated": False}
    reference = dataset(
        question("q", [[{**_query_ref(OSLO_TRANSFORMERS, OSLO_ROWS), "execution": earlier}]])
    )
    actual = {**_query_step(OSLO_TRANSFORMERS, OSLO_ROWS), "execution": earlier}
    for config in (None, _config(graph)):
        [result] = run_evaluation(reference, [response("q", [actual])], config)
        assert result["steps_score"] == 1
        assert "execution" not in result["reference_steps"][0][0]
        assert "execution" not in result["actual_steps"][0]


def test_reference_steps_to_execute_are_not_reported_as_broken(graph: str) -> None:
    reference = dataset(question("q", [[_query_ref(OSLO_TRANSFORMERS, typed=True)]]))
    responses = [response("q", [_query_step(OSLO_TRANSFORMERS)])]

    async def notices(config: dict[str, Any]) -> list[str]:
        run = await evaluate(reference, responses, config)
        return [notice.kind for notice in run.diagnostics.notices]

    from graphrag_eval.evaluation.runner import run_sync

    assert "reference_data" not in run_sync(lambda: notices(_config(graph)))
    assert "reference_data" in run_sync(lambda: notices(_config(graph, execute="never")))


def test_an_executed_reference_is_checked_as_a_stored_one_is(graph: str) -> None:
    # The stored output had the column; the graph's answer to the query has another name.
    stale = sparql(["transformer"], [[uri(f"{EX}t1")], [uri(f"{EX}t2")]])
    reference_step = {**_query_ref(OSLO_TRANSFORMERS, stale), "required_columns": ["transformer"]}
    reference = dataset(question("q", [[reference_step]]))
    responses = [response("q", [_query_step(OSLO_TRANSFORMERS)])]
    [result] = run_evaluation(reference, responses, _config(graph, execute="always"))
    assert result["steps_score"] == 0
    [[executed]] = result["reference_steps"]
    assert "required_columns transformer" in executed["input_error"]
    assert "output_error" not in result["actual_steps"][0]  # the reference's fault


def test_an_actual_step_whose_execution_failed_says_why_it_did_not_match(graph: str) -> None:
    """The step's ``input_error`` and the reference step's ``mismatch_reason`` name the
    execution's error, not an output the step never had or its agent's status."""
    reference = dataset(question("q", [[_query_ref(OSLO_TRANSFORMERS, OSLO_ROWS)]]))
    refused = f"DELETE WHERE {{ <{EX}oslo> ?p ?o }}"
    responses = [response("q", [_query_step(refused, step_id="a")])]
    [record] = run_evaluation(reference, responses, _config(graph))
    actual = record["actual_steps"][0]
    assert actual["execution"]["error_kind"] == "update_refused"
    assert actual["input_error"].startswith("its query could not be executed: a SPARQL Update")
    reason = record["reference_steps"][0][0]["mismatch_reason"]
    assert reason.startswith("actual step a cannot be compared: its query could not be executed")
    assert "status success" not in reason
