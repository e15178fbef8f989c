"""The labels of ``query_diagnosis`` from two queries parsed by rdflib's SPARQL parser
(docs/knowledge-graph.md, "Why a query is wrong: ``query_diagnosis``"): one test per label,
the variables of the actual query renamed, prefixes expanded, and what is never said."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import graphrag_eval
from graphrag_eval.graph.diagnosis import MAX_TERMS, diagnose_queries, execution_findings
from graphrag_eval.graph.execution import ExecutionError
from graphrag_eval.graph.query_align import MAX_ALIGNED_VARIABLES
from graphrag_eval.graph.query_shape import MAX_QUERY_CHARACTERS

pytest.importorskip("rdflib")

EX = "PREFIX ex: <http://example.org/>\n"
SOURCE = str(Path(graphrag_eval.__file__).resolve().parents[1])
PEOPLE = EX + "SELECT ?name ?age WHERE { ?p a ex:Person ; ex:name ?name ; ex:age ?age }"


def labels(reference: str, actual: str, **options: Any) -> list[dict[str, Any]]:
    diagnosed = diagnose_queries(reference, actual, **options)
    assert diagnosed is not None
    return [finding.as_record() for finding in diagnosed[0]]


def test_the_same_query_with_other_variable_names_and_prefixes_has_no_label() -> None:
    actual = (
        "PREFIX e: <http://example.org/>\n"
        "SELECT ?n ?a WHERE { ?x a e:Person . ?x <http://example.org/age> ?a . ?x e:name ?n }"
    )
    assert labels(PEOPLE, actual) == []


def test_wrong_predicate_names_both_predicates() -> None:
    actual = EX + "SELECT ?n ?h WHERE { ?x a ex:Person ; ex:name ?n ; ex:height ?h }"
    assert labels(PEOPLE, actual) == [
        {"label": "wrong_predicate", "expected": ["ex:age"], "found": ["ex:height"]}
    ]


def test_missing_and_extra_patterns_are_shown_with_where_they_sit() -> None:
    actual = (
        EX + "SELECT ?name ?age WHERE { ?p a ex:Person ; ex:name ?name ; ex:age ?age "
        "OPTIONAL { ?p ex:email ?m } }"
    )
    assert labels(actual, PEOPLE) == [
        {"label": "missing_pattern", "expected": ["OPTIONAL { ?p ex:email ?m }"], "found": []}
    ]
    assert labels(PEOPLE, actual) == [
        {"label": "extra_pattern", "expected": [], "found": ["OPTIONAL { ?p ex:email ?m }"]}
    ]


def test_a_pattern_moved_into_optional_is_missing_and_extra() -> None:
    actual = (
        EX
        + "SELECT ?name ?age WHERE { ?p a ex:Person ; ex:name ?name OPTIONAL { ?p ex:age ?age } }"
    )
    found = labels(PEOPLE, actual)
    assert [f["label"] for f in found] == ["missing_pattern", "extra_pattern"]
    assert found[0]["expected"] == ["?p ex:age ?age"]
    assert found[1]["found"] == ["OPTIONAL { ?p ex:age ?age }"]


def test_missing_and_extra_filters_by_conjunct() -> None:
    reference = EX + "SELECT ?p WHERE { ?p ex:age ?a FILTER(?a > 30 && ?a < 60) }"
    actual = EX + 'SELECT ?q WHERE { ?q ex:age ?b FILTER(?b < 60) FILTER(regex(str(?q), "x")) }'
    assert labels(reference, actual) == [
        {"label": "missing_filter", "expected": ["FILTER(?a > 30)"], "found": []},
        {"label": "extra_filter", "expected": [], "found": ['FILTER(REGEX(STR(?q), "x"))']},
    ]


def test_limit_and_offset_differ() -> None:
    reference = EX + "SELECT ?p WHERE { ?p a ex:Person } ORDER BY ?p LIMIT 10 OFFSET 5"
    actual = EX + "SELECT ?p WHERE { ?p a ex:Person } ORDER BY ?p LIMIT 3"
    assert labels(reference, actual) == [
        {"label": "limit_differs", "expected": ["LIMIT 10", "OFFSET 5"], "found": ["LIMIT 3"]}
    ]


def test_order_differs_when_the_reference_is_ordered_or_the_results_are_cut() -> None:
    reference = EX + "SELECT ?p ?a WHERE { ?p ex:age ?a } ORDER BY DESC(?a)"
    actual = EX + "SELECT ?p ?a WHERE { ?p ex:age ?a } ORDER BY ?a"
    assert labels(reference, actual) == []  # unordered comparison: the order cannot matter
    assert labels(reference, actual, ordered=True) == [
        {"label": "order_differs", "expected": ["DESC(?a)"], "found": ["?a"]}
    ]
    assert [f["label"] for f in labels(reference + " LIMIT 1", actual + " LIMIT 1")] == [
        "order_differs"
    ]


def test_distinct_differs_only_where_duplicates_count() -> None:
    reference = EX + "SELECT DISTINCT ?p WHERE { ?p ex:knows ?k }"
    actual = EX + "SELECT ?p WHERE { ?p ex:knows ?k }"
    assert labels(reference, actual) == []  # duplicates are ignored by default
    assert labels(reference, actual, ignore_duplicates=False) == [
        {"label": "distinct_differs", "expected": ["DISTINCT"], "found": []}
    ]


def test_projection_differs_on_a_missing_column_an_aggregate_or_the_form() -> None:
    actual = EX + "SELECT ?name WHERE { ?p a ex:Person ; ex:name ?name ; ex:age ?age }"
    assert labels(PEOPLE, actual) == [
        {"label": "projection_differs", "expected": ["?age"], "found": []}
    ]
    # An extra actual column does not change the comparison: not reported.
    assert labels(actual, PEOPLE) == []
    count = EX + "SELECT ?p (COUNT(?k) AS ?n) WHERE { ?p ex:knows ?k } GROUP BY ?p"
    total = EX + "SELECT ?q (SUM(?k) AS ?n) WHERE { ?q ex:knows ?k } GROUP BY ?q"
    assert labels(count, total) == [
        {
            "label": "projection_differs",
            "expected": ["(COUNT(?k) AS ?n)"],
            "found": ["(SUM(?k) AS ?n)"],
        }
    ]
    # With HAVING between the projection and the aggregates (rdflib binds ?n above it).
    having = " HAVING (COUNT(?k) > 2) ORDER BY DESC(?n)"
    found = labels(count + having, total.replace("?q", "?p") + having)
    assert found == [
        {
            "label": "projection_differs",
            "expected": ["(COUNT(?k) AS ?n)"],
            "found": ["(SUM(?k) AS ?n)"],
        }
    ]
    assert labels(count + having, count + having.replace("> 2", "> 3")) == [
        {"label": "missing_filter", "expected": ["HAVING { FILTER(COUNT(?k) > 2) }"], "found": []},
        {"label": "extra_filter", "expected": [], "found": ["HAVING { FILTER(COUNT(?k) > 3) }"]},
    ]
    ask = EX + "ASK { ?p a ex:Person }"
    assert labels(ask, EX + "SELECT ?p WHERE { ?p a ex:Person }") == [
        {"label": "projection_differs", "expected": ["ASK"], "found": ["SELECT"]}
    ]


def test_a_syntax_error_of_the_actual_query_quotes_the_parser() -> None:
    [finding] = labels(PEOPLE, "SELECT ?p WHERE { ?p a ex:Person")
    assert finding["label"] == "syntax_error"
    assert "Expected" in finding["found"][0]
    [finding] = labels(PEOPLE, "SELECT ?p WHERE { ?p a ex:Person } LIMIT ten")
    assert finding["label"] == "syntax_error"


def test_an_undeclared_prefix_is_no_syntax_error() -> None:
    """Stores such as GraphDB declare prefixes of their own: a prefix one query declares
    stands for the same namespace in the other; undeclared in both, they are the same."""
    actual = "SELECT ?n ?h WHERE { ?x a ex:Person ; ex:name ?n ; ex:height ?h }"
    assert labels(PEOPLE, actual) == [
        {"label": "wrong_predicate", "expected": ["ex:age"], "found": ["ex:height"]}
    ]
    undeclared = "SELECT ?p WHERE { ?p a cim:Line ; cim:name ?n FILTER(?p != urn:uuid:f1) }"
    assert labels(undeclared, undeclared.replace("?p", "?line")) == []
    diagnosed = diagnose_queries(undeclared, undeclared.replace("cim:name", "cim:label"))
    assert diagnosed is not None
    findings, _, actual_shape = diagnosed
    assert [f.as_record() for f in findings] == [
        {"label": "wrong_predicate", "expected": ["cim:name"], "found": ["cim:label"]}
    ]
    assert actual_shape is not None  # only rdf:type (of "a") is known; never asked the others
    assert actual_shape.iris() == ["http://www.w3.org/1999/02/22-rdf-syntax-ns#type"]


def test_an_update_is_refused_not_parsed() -> None:
    assert labels(PEOPLE, "DELETE WHERE { ?s ?p ?o }") == [
        {"label": "update_refused", "expected": [], "found": []}
    ]


def test_execution_errors_give_their_labels_once() -> None:
    assert [f.label.value for f in execution_findings(ExecutionError.TIMEOUT)] == ["timeout"]
    assert [f.label.value for f in execution_findings(ExecutionError.QUERY)] == []
    assert execution_findings(None) == []
    found = labels(PEOPLE, PEOPLE, error_kind=ExecutionError.TIMEOUT)
    assert found == [{"label": "timeout", "expected": [], "found": []}]
    refused = labels(
        PEOPLE, "INSERT DATA { <a> <b> <c> }", error_kind=ExecutionError.UPDATE_REFUSED
    )
    assert [f["label"] for f in refused] == ["update_refused"]


def test_nothing_is_said_when_the_reference_does_not_parse_or_a_query_is_too_long() -> None:
    assert diagnose_queries("SELECT nonsense", PEOPLE) is None
    assert diagnose_queries(PEOPLE, PEOPLE + " " * MAX_QUERY_CHARACTERS) is None
    # ... except what the execution said.
    diagnosed = diagnose_queries("SELECT nonsense", PEOPLE, error_kind=ExecutionError.TIMEOUT)
    assert diagnosed is not None
    assert [f.label.value for f in diagnosed[0]] == ["timeout"]


def test_paths_values_binds_unions_and_subqueries_are_compared() -> None:
    reference = (
        EX + "SELECT ?x ?w WHERE { ?x ex:a/ex:b ?y . { ?y ex:c ?z } UNION { ?y ex:d ?z } "
        "VALUES ?z { 1 2 } BIND(?z + 1 AS ?w) { SELECT ?x WHERE { ?x ex:e ?q } LIMIT 3 } }"
    )
    actual = reference.replace("ex:a/ex:b", "ex:a/ex:f").replace("?z + 1", "?z + 2")
    found = labels(reference, actual)
    assert found == [
        {"label": "wrong_predicate", "expected": ["ex:a/ex:b"], "found": ["ex:a/ex:f"]},
        {"label": "missing_pattern", "expected": ["BIND((?z + 1) AS ?w)"], "found": []},
        {"label": "extra_pattern", "expected": [], "found": ["BIND((?z + 2) AS ?w)"]},
    ]
    assert labels(reference, reference) == []


def test_many_terms_are_listed_up_to_a_bound() -> None:
    triples = " ".join(f"?p ex:p{n} ?o{n} ." for n in range(MAX_TERMS + 5))
    reference = EX + f"SELECT ?p WHERE {{ {triples} }}"
    actual = EX + "SELECT ?p WHERE { ?p a ex:Person }"
    missing = next(f for f in labels(reference, actual) if f["label"] == "missing_pattern")
    assert len(missing["expected"]) == MAX_TERMS
    assert missing["expected"][-1] == "... and 6 more"


def test_sixty_renamed_variables_are_all_paired() -> None:
    """A chain of 60 triple patterns with every variable renamed: one wrong predicate, not
    60 missing and extra patterns."""
    chain = " ".join(f"?s{i} ex:p{i % 3} ?s{i + 1} ." for i in range(60))
    reference = EX + f"SELECT ?s0 ?s60 WHERE {{ {chain} }}"
    actual = reference.replace("?s", "?v").replace("ex:p1", "ex:q1", 1)
    assert labels(reference, actual) == [
        {"label": "wrong_predicate", "expected": ["ex:p1"], "found": ["ex:q1"]}
    ]


def test_too_many_variables_are_not_compared() -> None:
    values = " ".join(f"?v{i}" for i in range(MAX_ALIGNED_VARIABLES + 1))
    reference = f"SELECT * WHERE {{ VALUES ({values}) {{}} }}"
    assert diagnose_queries(reference, reference) is None


def test_the_labels_do_not_depend_on_the_process(tmp_path: Path) -> None:
    """``SELECT *`` projects rdflib's set of variables: the findings are the same whatever
    the string hashes of the process."""
    script = tmp_path / "diagnose.py"
    script.write_text(
        "import json, sys\n"
        "from graphrag_eval.graph.diagnosis import diagnose_queries\n"
        "reference, actual = json.load(sys.stdin)\n"
        "found = diagnose_queries(reference, actual)\n"
        "print(json.dumps([f.as_record() for f in found[0]]))\n"
    )
    reference = EX + "SELECT * WHERE { ?a ex:p ?b . ?b ex:q ?c . ?c ex:r ?d . ?d ex:s ?e }"
    actual = EX + "SELECT ?e ?w ?x WHERE { ?w ex:p ?x . ?x ex:q ?y . ?y ex:t ?z }"
    outputs = set()
    for seed in ("1", "2", "3", "4"):
        run = subprocess.run(
            [sys.executable, str(script)],
            input=json.dumps([reference, actual]),
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": SOURCE},
        )
        outputs.add(run.stdout)
    assert len(outputs) == 1
    assert json.loads(outputs.pop())[0]["label"] == "wrong_predicate"


def test_a_query_nested_too_deeply_gives_no_diagnosis_and_logs_no_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    deep = "SELECT ?x WHERE { ?x ?p ?v FILTER(" + "(" * 1400 + "?v" + ")" * 1400 + ") }"
    assert diagnose_queries(deep, deep) is None
    conjunction = " && ".join(f"?v != {n}" for n in range(150))
    wide = EX + f"SELECT ?x WHERE {{ ?x ex:p ?v FILTER({conjunction}) }}"
    diagnosed = diagnose_queries(wide, wide.replace("!= 149", "!= 150"))
    assert diagnosed is not None
    assert [f.label.value for f in diagnosed[0]] == ["missing_filter", "extra_filter"]
    assert not [record for record in caplog.records if record.levelname == "ERROR"]


def test_from_service_and_exists_are_compared_as_far_as_rdflib_keeps_them() -> None:
    person = EX + "SELECT ?p WHERE { ?p a ex:Person }"
    assert labels(person, person.replace("WHERE", "FROM <http://example.org/g> WHERE")) == [
        {"label": "extra_pattern", "expected": [], "found": ["FROM ex:g"]}
    ]
    remote = EX + "SELECT ?p WHERE { SERVICE <http://example.org/sparql> { ?p a ex:Person } }"
    assert labels(person, remote) == [
        {"label": "missing_pattern", "expected": ["?p rdf:type ex:Person"], "found": []},
        {
            "label": "extra_pattern",
            "expected": [],
            "found": ["SERVICE ex:sparql { ?p rdf:type ex:Person }"],
        },
    ]
    diagnosed = diagnose_queries(person, remote)
    assert diagnosed is not None and diagnosed[2] is not None
    assert "http://example.org/sparql" not in diagnosed[2].iris()  # never asked about
    alive = EX + "SELECT ?p WHERE { ?p a ex:Person FILTER NOT EXISTS { ?p ex:died ?d } }"
    assert labels(person, alive) == [
        {"label": "extra_filter", "expected": [], "found": ["FILTER(NOT EXISTS { ?p ex:died ?d })"]}
    ]
    # rdflib's algebra drops a filter inside EXISTS: no difference is never claimed then.
    inner = alive.replace("?d }", "?d FILTER(?d > 1) }")
    assert diagnose_queries(alive, inner) is None
    assert diagnose_queries(alive, alive.replace("?p", "?q")) is None
    assert labels(alive, inner.replace("LIMIT", "") + " LIMIT 3") == [
        {"label": "limit_differs", "expected": [], "found": ["LIMIT 3"]}
    ]


def test_a_graph_variable_may_have_another_name() -> None:
    named = EX + "SELECT ?p WHERE { GRAPH ?g { ?p a ex:Person } }"
    assert labels(named, named.replace("?g", "?h").replace("?p", "?x")) == []
    assert [f["label"] for f in labels(named, named.replace("?g", "ex:g"))] == [
        "missing_pattern",
        "extra_pattern",
    ]


def test_a_long_query_is_diagnosed_with_pyparsings_packrat_cache_on(tmp_path: Path) -> None:
    """Another library of the process (matplotlib) turns pyparsing's packrat cache on for
    all, which makes rdflib's parser recurse deeper: a chain of 90 patterns is still
    diagnosed (in a process of its own: the cache cannot be turned off again)."""
    script = tmp_path / "packrat.py"
    script.write_text(
        "import pyparsing\n"
        "pyparsing.ParserElement.enable_packrat()\n"
        "from graphrag_eval.graph.diagnosis import diagnose_queries\n"
        "EX = 'PREFIX ex: <http://example.org/>\\n'\n"
        "chain = ' '.join(f'?s{i} ex:p{i % 3} ?s{i + 1} .' for i in range(90))\n"
        "reference = EX + f'SELECT ?s0 ?s90 WHERE {{ {chain} }}'\n"
        "actual = reference.replace('?s', '?v').replace('ex:p1', 'ex:q1', 1)\n"
        "found = diagnose_queries(reference, actual)\n"
        "print([finding.as_record() for finding in found[0]] if found else None)\n",
        encoding="utf-8",
    )
    ran = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": SOURCE},
    )
    assert ran.stdout.strip() == str(
        [{"label": "wrong_predicate", "expected": ["ex:p1"], "found": ["ex:q1"]}]
    )
