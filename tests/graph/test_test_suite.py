"""Test-suite accuracy (docs/knowledge-graph.md, "Test-suite accuracy"): both queries of a
SPARQL step pair executed on seeded perturbed copies of the embedded graph; it catches an
actual query that agrees with the reference by accident on today's data."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from graphrag_eval.config.model import EvaluationConfig
from graphrag_eval.config.sparql import SparqlConfig, TestSuiteConfig
from graphrag_eval.evaluation.runner import prepare_reference, prepare_responses
from graphrag_eval.evaluation.scoring import evaluate_item
from graphrag_eval.graph.embedded import EmbeddedStore, load_embedded
from graphrag_eval.graph.perturb import perturbed_copies
from graphrag_eval.graph.query_terms import query_terms
from graphrag_eval.metrics.services import Services
from graphrag_eval.metrics.test_suite import TestSuiteAccuracy
from graphrag_eval.results.to_records import to_record
from graphrag_eval.steps.sparql import compare_sparql_results

EX = "http://example.org/"
PREFIX = f"PREFIX ex: <{EX}>\n"
KEY = "sparql_test_suite_accuracy"

# Every person has an age today: "persons" and "persons with an age" agree by accident.
DATA = (
    f"@prefix ex: <{EX}> .\n"
    + "".join(f'ex:p{i} a ex:Person ; ex:age {20 + i} ; ex:name "P{i}" .\n' for i in range(10))
    + "".join(f'ex:c{i} a ex:City ; ex:name "C{i}" .\n' for i in range(4))
)

REFERENCE = PREFIX + "SELECT ?p WHERE { ?p a ex:Person ; ex:age ?a }"
BY_ACCIDENT = PREFIX + "SELECT ?p WHERE { ?p a ex:Person }"
EQUIVALENT = PREFIX + "SELECT ?p WHERE { ?p ex:age ?age . ?p a ex:Person . }"


@pytest.fixture
def store(tmp_path: Path) -> EmbeddedStore:
    path = tmp_path / "people.ttl"
    path.write_text(DATA, "utf-8")
    return load_embedded(SparqlConfig(data=[str(path)]))


def output(store: EmbeddedStore, query: str) -> str:
    execution = store.execute_now(query)
    assert execution.results is not None, execution.error
    return json.dumps(execution.results)


def accuracy(
    store: EmbeddedStore,
    reference: str,
    actual: str | None,
    copies: int = 5,
    **suite: Any,
) -> Any:
    """The item's record through the real scoring of one item, today's outputs logged."""
    ref_step = {
        "name": "sparql_query",
        "args": {"query": reference},
        "output": output(store, reference),
        "output_media_type": "application/sparql-results+json",
    }
    steps = []
    if actual is not None:
        steps.append(
            {
                "name": "sparql_query",
                "status": "success",
                "args": {"query": actual},
                "output": output(store, actual),
            }
        )
    return scored(store, ref_step, steps, {"copies": copies, **suite})


def scored(
    store: EmbeddedStore,
    ref_step: dict[str, Any],
    steps: list[dict[str, Any]],
    suite: dict[str, Any],
) -> Any:
    """The record of a one-question run (``ref_step`` against ``steps``) scored for
    test-suite accuracy with the ``suite`` settings."""
    questions = prepare_reference(
        [
            {
                "template_id": "t",
                "questions": [{"id": "q", "question_text": "?", "reference_steps": [[ref_step]]}],
            }
        ]
    )
    responses = prepare_responses([{"question_id": "q", "actual_steps": steps}])
    config = EvaluationConfig.model_validate({"sparql": {"test_suite": suite}})

    async def main() -> Any:
        result, _ = await evaluate_item(
            questions[0],
            responses.responses["q"],
            [TestSuiteAccuracy()],
            config,
            services=Services(store=store),
        )
        return to_record(result)

    return asyncio.run(main())


def test_a_query_that_agrees_by_accident_today_fails_on_the_copies(
    store: EmbeddedStore,
) -> None:
    today = compare_sparql_results(output(store, REFERENCE), output(store, BY_ACCIDENT))
    assert today == 1  # execution accuracy cannot tell them apart
    record = accuracy(store, REFERENCE, BY_ACCIDENT, drop_share=0.5)
    # Each copy drops 5 of the 10 ex:age and 5 of the 10 ex:Person triples: the reference
    # then finds the persons left with both, the accidental query all those left typed.
    assert record[KEY] == 0.0


def test_an_equivalent_query_agrees_on_every_copy(store: EmbeddedStore) -> None:
    assert accuracy(store, REFERENCE, EQUIVALENT)[KEY] == 1.0


def test_no_matched_actual_query_agrees_on_no_copy(store: EmbeddedStore) -> None:
    assert accuracy(store, REFERENCE, None)[KEY] == 0.0


def test_a_query_naming_graphs_is_skipped_with_its_reason(store: EmbeddedStore) -> None:
    query = PREFIX + "SELECT ?p WHERE { GRAPH ?g { ?p a ex:Person } }"
    record = accuracy(store, query, query)
    assert KEY not in record
    assert "names graphs" in record["skipped"][KEY]


def test_copies_drop_the_share_of_the_used_parts_only_seeded(store: EmbeddedStore) -> None:
    settings = TestSuiteConfig(copies=3, drop_share=0.3, seed=7)
    copies = perturbed_copies(store, settings)
    terms = query_terms(PREFIX + "SELECT ?p WHERE { ?p ex:age ?a }")

    async def kept(copy: int) -> tuple[set[str], int]:
        graphs = await copies.graphs(terms, copy)
        ages = await copies.execute(PREFIX + "SELECT ?p WHERE { ?p ex:age ?a }", graphs)
        names = await copies.execute(PREFIX + "SELECT ?p WHERE { ?p ex:name ?n }", graphs)
        assert ages.results is not None and names.results is not None
        found = {row["p"]["value"] for row in ages.results["results"]["bindings"]}
        return found, len(names.results["results"]["bindings"])

    first, names = asyncio.run(kept(0))
    assert len(first) == 10 - 3  # round(0.3 * 10) dropped
    assert names == 14  # a predicate the query does not use is untouched
    second, _ = asyncio.run(kept(1))
    assert second != first  # each copy drops its own triples
    again = perturbed_copies(load_again(store), settings)
    assert again is not copies
    graphs_again = asyncio.run(_kept_with(again, terms))
    assert graphs_again == first  # the same seed, the same copy


def load_again(store: EmbeddedStore) -> EmbeddedStore:
    return load_embedded(store.config)


async def _kept_with(copies: Any, terms: Any) -> set[str]:
    graphs = await copies.graphs(terms, 0)
    ages = await copies.execute(PREFIX + "SELECT ?p WHERE { ?p ex:age ?a }", graphs)
    return {row["p"]["value"] for row in ages.results["results"]["bindings"]}


def test_query_terms_reads_classes_predicates_and_paths() -> None:
    terms = query_terms(
        PREFIX + "SELECT ?n WHERE { ?x a ex:Person ; ex:knows/ex:name|^ex:boss ?n ;"
        " !ex:hidden ?h . OPTIONAL { ?x ex:age ?a } FILTER NOT EXISTS { ?x ex:dead true }"
        " { SELECT ?x WHERE { ?x ex:inner ?z } } ?x ?anything ?v }"
    )
    assert terms.classes == {f"{EX}Person"}
    assert terms.predicates == {
        f"{EX}{name}" for name in ("knows", "name", "boss", "age", "dead", "inner")
    }
    assert not terms.names_graphs
    assert query_terms(PREFIX + "SELECT * FROM ex:g WHERE { ?s ?p ?o }").names_graphs
    with pytest.raises(ValueError):
        query_terms("SELECT ?x WHERE { ?x")


def test_test_suite_with_an_endpoint_is_a_config_error() -> None:
    with pytest.raises(ValidationError, match="test_suite needs the embedded store"):
        SparqlConfig(endpoint="http://127.0.0.1:7878/query", test_suite={"copies": 3})


def test_a_reference_query_the_parser_refuses_fails_the_metric(store: EmbeddedStore) -> None:
    query = PREFIX + "SELECT ?p WHERE { ?p a ex:Person } LIMIT 3 OFFSET"
    record = accuracy_of_unparsable(store, query)
    assert "does not parse" in record[f"{KEY}_error"]
    assert record["failure_kinds"][KEY] == "input"


def accuracy_of_unparsable(store: EmbeddedStore, query: str) -> Any:
    ref_step = {"name": "sparql_query", "args": {"query": query}}
    return scored(store, ref_step, [], {"copies": 2})


def test_a_variable_class_perturbs_every_class(store: EmbeddedStore) -> None:
    copies = perturbed_copies(store, TestSuiteConfig(copies=1, drop_share=0.5))
    terms = query_terms(PREFIX + "SELECT ?x ?c WHERE { ?x a ?c }")

    async def typed() -> int:
        graphs = await copies.graphs(terms, 0)
        found = await copies.execute(PREFIX + "SELECT ?x WHERE { ?x a ?c }", graphs)
        assert found.rows is not None
        return found.rows

    assert asyncio.run(typed()) == 5 + 2  # half of the 10 persons' and of the 4 cities' types


def test_it_runs_only_when_copies_are_asked_for() -> None:
    metric = TestSuiteAccuracy()
    assert not metric.enabled(EvaluationConfig())
    on = EvaluationConfig.model_validate({"sparql": {"test_suite": {"copies": 1}}})
    assert metric.enabled(on)
    assert metric.needs == {"store"}


def test_query_terms_of_one_template_with_other_iris() -> None:
    template = (
        "PREFIX g: <{ns}> SELECT ?x WHERE {{ <{entity}> g:link ?x . ?x a <{cls}> ;"
        ' g:label "<http://in.a/string>" }}'
    )
    first = query_terms(template.format(ns=EX, entity=f"{EX}e1", cls=f"{EX}C"))
    second = query_terms(template.format(ns="http://other.org/ns#", entity="urn:x", cls="urn:K"))
    assert first.predicates == {f"{EX}link", f"{EX}label"}
    assert first.classes == {f"{EX}C"}
    assert second.predicates == {"http://other.org/ns#link", "http://other.org/ns#label"}
    assert second.classes == {"urn:K"}


_ENDLESS_SCRIPT = """
import asyncio, json, sys, threading
from graphrag_eval.config.model import EvaluationConfig
from graphrag_eval.evaluation.runner import prepare_reference, prepare_responses
from graphrag_eval.evaluation.scoring import evaluate_item
from graphrag_eval.graph.embedded import load_embedded
from graphrag_eval.metrics.services import Services
from graphrag_eval.metrics.test_suite import TestSuiteAccuracy
from graphrag_eval.results.to_records import to_record

config = EvaluationConfig.model_validate(
    {"sparql": {"data": [sys.argv[1]], "timeout_s": 0.5, "test_suite": {"copies": 4}}}
)
store = load_embedded(config.sparql)
P = "<http://example.org/p>"
reference = f"SELECT ?a WHERE {{ ?a {P} ?b }}"
endless = (
    f"SELECT ?a WHERE {{ ?a {P} ?b . {{ SELECT (COUNT(*) AS ?n) WHERE "
    f"{{ ?c {P} ?d . ?e {P} ?f . ?g {P} ?h . ?i {P} ?j }} }} }}"
)
output = json.dumps(store.execute_now(reference).results)
step = {"name": "sparql_query", "args": {"query": reference}, "output": output,
        "output_media_type": "application/sparql-results+json"}
questions = prepare_reference(
    [{"template_id": "t", "questions": [{"id": "q", "question_text": "?",
                                         "reference_steps": [[step]]}]}]
)
actual = {"name": "sparql_query", "status": "success", "args": {"query": endless},
          "output": output}
responses = prepare_responses([{"question_id": "q", "actual_steps": [actual]}])

async def main():
    result, _ = await evaluate_item(questions[0], responses.responses["q"],
                                    [TestSuiteAccuracy()], config, services=Services(store=store))
    return to_record(result)

record = asyncio.run(main())
running = sum(t.name == "graphrag-eval-sparql" for t in threading.enumerate())
print(json.dumps({"value": record["sparql_test_suite_accuracy"], "running": running}))
"""


def test_an_actual_query_that_never_ends_is_not_run_on_every_copy(tmp_path: Path) -> None:
    """Its logged output matched the reference today; on the copies it times out on the
    first, counts as disagreeing on all, and leaves one query running, not one per copy."""
    lines = "".join(f'<{EX}s{i}> <{EX}p> "{i}" .\n' for i in range(3000))
    data = tmp_path / "cross.nt"
    data.write_text(lines, "utf-8")
    src = Path(__file__).resolve().parents[2] / "src"
    done = subprocess.run(
        [sys.executable, "-c", _ENDLESS_SCRIPT, str(data)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(src)},
        timeout=300,
        check=True,
    )
    assert json.loads(done.stdout) == {"value": 0.0, "running": 1}
