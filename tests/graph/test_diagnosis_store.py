"""``query_diagnosis`` on the results of a real evaluation (docs/knowledge-graph.md, "Why a
query is wrong: ``query_diagnosis``"): written on the reference step of a SPARQL pair below a
full match, with ``unknown_iri`` asked of a real embedded Oxigraph store; absent without a
store configured, without rdflib, on a full match, and when the diagnosis has a bug."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval.evaluation import diagnosis as item_diagnosis
from graphrag_eval.evaluation.runner import prepare_reference, prepare_responses
from graphrag_eval.evaluation.scoring import evaluate_item
from graphrag_eval.graph import diagnosis as graph_diagnosis
from graphrag_eval.graph.embedded import EmbeddedStore, load_embedded
from graphrag_eval.graph.execution import Execution, GraphStore
from graphrag_eval.graph.iri_check import MAX_CHECKED_IRIS, unknown_iris
from graphrag_eval.metrics.loading import load_config
from graphrag_eval.metrics.registry import metrics_for
from graphrag_eval.metrics.services import Services
from graphrag_eval.results.to_records import to_record

from builders import dataset, question, response, sparql, sparql_ref, step, uri

pytest.importorskip("rdflib")
pytest.importorskip("pyoxigraph")

GRAPH = """@prefix ex: <http://example.org/> .
ex:ann a ex:Person ; ex:name "Ann" ; ex:age 31 ; ex:height 170 .
ex:bob a ex:Person ; ex:name "Bob" ; ex:age 45 ; ex:height 180 .
"""
EX = "PREFIX ex: <http://example.org/>\n"
REFERENCE_QUERY = EX + "SELECT ?p ?age WHERE { ?p a ex:Person ; ex:age ?age }"
AGES = sparql(["p", "age"], [[uri("http://example.org/ann"), "31"]])
HEIGHTS = sparql(["p", "h"], [[uri("http://example.org/ann"), "170"]])


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "graph.ttl"
    path.write_text(GRAPH, encoding="utf-8")
    return path


def config_for(data: Path) -> Any:
    return load_config({"sparql": {"data": [str(data)], "execute": "never"}})


def reference_step(
    actual_query: str,
    data: Path | None,
    *,
    store: GraphStore | None = None,
    actual_output: str = HEIGHTS,
    config: Any = None,
    **actual_fields: Any,
) -> dict[str, Any]:
    """The reference step of a one-step question after evaluating one actual step."""
    reference = sparql_ref(AGES, args={"query": REFERENCE_QUERY})
    actual = step(
        "sparql_query", actual_output, "s1", args={"query": actual_query}, **actual_fields
    )
    [item] = prepare_reference(dataset(question("q1", [[reference]])))
    responses = prepare_responses([response("q1", [actual])])
    if config is None:
        config = config_for(data) if data is not None else load_config(None)
    result, _ = asyncio.run(
        evaluate_item(
            item,
            responses.responses["q1"],
            metrics_for(config),
            config,
            services=Services(store=store),
        )
    )
    return dict(to_record(result)["reference_steps"][0][0])


def test_a_wrong_predicate_is_written_on_the_reference_step(data: Path) -> None:
    wrong = EX + "SELECT ?x ?h WHERE { ?x a ex:Person ; ex:height ?h }"
    found = reference_step(wrong, data)
    assert found["nearest_match"] == "s1"
    assert found["query_diagnosis"] == [
        {"label": "wrong_predicate", "expected": ["ex:age"], "found": ["ex:height"]}
    ]


def test_unknown_iri_is_asked_of_the_store(data: Path) -> None:
    store = load_embedded(config_for(data).sparql)
    typo = EX + "SELECT ?x ?h WHERE { ?x a ex:Persn ; ex:age ?h }"
    found = reference_step(typo, data, store=store)
    assert found["query_diagnosis"] == [
        {"label": "unknown_iri", "expected": [], "found": ["ex:Persn"]},
        {"label": "missing_pattern", "expected": ["?p rdf:type ex:Person"], "found": []},
        {"label": "extra_pattern", "expected": [], "found": ["?x rdf:type ex:Persn"]},
    ]
    # An IRI the graph has is not unknown (ex:height is in it).
    found = reference_step(
        EX + "SELECT ?x ?h WHERE { ?x a ex:Person ; ex:height ?h }", data, store=store
    )
    assert [f["label"] for f in found["query_diagnosis"]] == ["wrong_predicate"]


class _Counting:
    """A real embedded store that counts the queries it is sent."""

    def __init__(self, store: EmbeddedStore) -> None:
        self.store = store
        self.queries: list[str] = []
        self.identity = store.identity
        self.unusable = None

    async def execute(self, query: str) -> Execution:
        self.queries.append(query)
        return await self.store.execute(query)

    async def aclose(self) -> None:
        return None


def test_each_iri_is_asked_once_and_at_most_a_bound_per_query(data: Path) -> None:
    store = _Counting(load_embedded(config_for(data).sparql))
    iris = [f"http://example.org/missing{n}" for n in range(MAX_CHECKED_IRIS + 5)]

    async def twice() -> tuple[list[str], list[str]]:
        return await unknown_iris(store, iris), await unknown_iris(store, iris)

    first, second = asyncio.run(twice())
    assert first == second == iris[:MAX_CHECKED_IRIS]
    assert len(store.queries) == MAX_CHECKED_IRIS


def test_an_iri_that_cannot_be_asked_about_safely_is_not_asked(data: Path) -> None:
    store = _Counting(load_embedded(config_for(data).sparql))
    hostile = "http://example.org/x> ?p ?o } #"
    assert asyncio.run(unknown_iris(store, [hostile])) == []
    assert store.queries == []


def test_a_timeout_of_the_execution_is_a_label(data: Path) -> None:
    execution = {
        "source": "oxigraph:graph.ttl",
        "elapsed_s": 30.0,
        "error": "ran longer",
        "error_kind": "timeout",
    }
    found = reference_step(
        REFERENCE_QUERY, data, execution=execution, status="error", actual_output=None
    )
    assert found["query_diagnosis"] == [{"label": "timeout", "expected": [], "found": []}]


def test_a_full_match_and_a_run_without_a_store_have_no_diagnosis(data: Path) -> None:
    same = EX + "SELECT ?x ?a WHERE { ?x a ex:Person ; ex:age ?a }"
    found = reference_step(same, data, actual_output=AGES)
    assert found["matches"] == "s1" and "query_diagnosis" not in found
    wrong = EX + "SELECT ?x ?h WHERE { ?x a ex:Person ; ex:height ?h }"
    found = reference_step(wrong, None)
    assert "mismatch_reason" in found and "query_diagnosis" not in found


def test_sparql_diagnose_turns_the_diagnosis_on_without_a_store_and_off_with_one(
    data: Path,
) -> None:
    wrong = EX + "SELECT ?x ?h WHERE { ?x a ex:Person ; ex:height ?h }"
    expected = [{"label": "wrong_predicate", "expected": ["ex:age"], "found": ["ex:height"]}]
    on = load_config({"sparql": {"diagnose": True}})
    assert reference_step(wrong, None, config=on)["query_diagnosis"] == expected
    off = load_config({"sparql": {"data": [str(data)], "execute": "never", "diagnose": False}})
    assert "query_diagnosis" not in reference_step(wrong, data, config=off)


def test_without_rdflib_the_key_is_absent(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in sys.modules if n == "rdflib" or n.startswith("rdflib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "rdflib", None)  # import rdflib now fails
    item_diagnosis._parser.cache_clear()
    try:
        wrong = EX + "SELECT ?x ?h WHERE { ?x a ex:Person ; ex:height ?h }"
        found = reference_step(wrong, data)
    finally:
        item_diagnosis._parser.cache_clear()
    assert "mismatch_reason" in found and "query_diagnosis" not in found


def test_a_bug_in_the_diagnosis_costs_the_diagnosis_not_the_item(
    data: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(graph_diagnosis, "align", broken)
    wrong = EX + "SELECT ?x ?h WHERE { ?x a ex:Person ; ex:height ?h }"
    found = reference_step(wrong, data)
    assert "mismatch_reason" in found and "query_diagnosis" not in found
    assert "the query diagnosis failed" in caplog.text


def test_stale_diagnoses_in_the_input_are_dropped(data: Path) -> None:
    reference = sparql_ref(AGES, args={"query": REFERENCE_QUERY}, query_diagnosis=["stale"])
    [item] = prepare_reference(dataset(question("q1", [[reference]])))
    responses = prepare_responses([response("q1", [step("sparql_query", AGES, "s1")])])
    config = config_for(data)
    result, _ = asyncio.run(
        evaluate_item(item, responses.responses["q1"], metrics_for(config), config)
    )
    found = to_record(result)["reference_steps"][0][0]
    assert found["matches"] == "s1" and "query_diagnosis" not in found
    assert json.dumps(found)  # still plain JSON


class _Raising(_Counting):
    """A real embedded store behind a connection that breaks (an exception, not an
    :class:`Execution` with its error)."""

    async def execute(self, query: str) -> Execution:
        raise OSError("connection reset")


def test_a_store_that_raises_costs_only_unknown_iri(data: Path) -> None:
    store = _Raising(load_embedded(config_for(data).sparql))
    typo = EX + "SELECT ?x ?h WHERE { ?x a ex:Person ; ex:hight ?h }"
    found = reference_step(typo, data, store=store)
    assert found["query_diagnosis"] == [
        {"label": "wrong_predicate", "expected": ["ex:age"], "found": ["ex:hight"]}
    ]
