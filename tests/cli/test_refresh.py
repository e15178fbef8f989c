"""``graphrag-eval refresh`` against the embedded store: what it writes, where, its drift
report and its exit codes (docs/knowledge-graph.md, "Refreshing references: drift")."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest
import yaml

from graphrag_eval.cli import main
from graphrag_eval.config.sparql import SparqlConfig
from graphrag_eval.graph.stores import open_store

pytest.importorskip("pyoxigraph")

SPARQL_JSON = "application/sparql-results+json"

GRAPH = """\
@prefix ex: <http://example.com/> .
ex:oslo ex:has ex:t1, ex:t2 .
ex:t1 ex:name "OSLO T1" .
ex:t2 ex:name "OSLO T2" .
"""

REFERENCE = """\
# Transformers of the demo grid (curated by hand)
- template_id: transformers
  questions:
  - id: oslo
    question_text: List all transformers within Substation OSLO
    reference_answer: OSLO T1, OSLO T2
    reference_steps:
    - - name: sparql_query
        args:
          query: |
            PREFIX ex: <http://example.com/>
            SELECT ?t ?name WHERE { ex:oslo ex:has ?t . ?t ex:name ?name }
        output: '{"head": {"vars": ["t", "name"]}, "results": {"bindings": [{"t": {"type":
          "uri", "value": "http://example.com/t1"}, "name": {"type": "literal", "value":
          "OSLO T1"}}]}}'
        output_media_type: application/sparql-results+json
        required_columns:
          - t
          - name
  - id: same
    question_text: "The same, unchanged"   # quoted on purpose
    reference_steps:
    - - name: sparql_query
        args: {query: "PREFIX ex: <http://example.com/> ASK { ex:oslo ex:has ex:t2 }"}
        output: '{"head": {}, "boolean": true}'
"""


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def label(graph: Path) -> str:
    """The label of the embedded store loaded from ``graph``."""
    store = open_store(SparqlConfig(data=[str(graph)]))
    assert store is not None
    return store.identity.label


def assert_one_line_error(stderr: str, text: str) -> None:
    assert stderr.count("\n") == 1, stderr
    assert stderr.startswith("graphrag-eval: error: ")
    assert text in stderr, stderr
    assert "Traceback" not in stderr


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    reference = tmp_path / "reference.yaml"
    reference.write_text(REFERENCE)
    graph = tmp_path / "graph.ttl"
    graph.write_text(GRAPH)
    return reference, graph


def test_refresh_writes_fresh_outputs_and_touches_nothing_else(
    capsys: pytest.CaptureFixture[str], files: tuple[Path, Path], tmp_path: Path
) -> None:
    reference, graph = files
    output = tmp_path / "out" / "new.yaml"
    output.parent.mkdir()

    code, out, err = run(capsys, "refresh", str(reference), "--data", str(graph), "-o", str(output))

    assert (code, err) == (0, "")
    assert f"2 sparql_query steps, 2 distinct queries executed against {label(graph)}" in out
    assert "steps: 1 unchanged, 1 changed, 0 now empty, 0 now failing, 0 no query" in out
    assert "changed: question 'oslo': reference_steps[0][0]: 1 rows added, 0 removed" in out
    assert f"wrote {output} (1 output refreshed)" in out
    assert reference.read_text() == REFERENCE  # the input is never written
    new = output.read_text()
    step = yaml.safe_load(new)[0]["questions"][0]["reference_steps"][0][0]
    names = {row["name"]["value"] for row in json.loads(step["output"])["results"]["bindings"]}
    assert names == {"OSLO T1", "OSLO T2"}
    changed = [
        line
        for line in difflib.unified_diff(REFERENCE.splitlines(), new.splitlines(), n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    old_output = REFERENCE.splitlines()[12:15]
    new_lines = new.splitlines()
    start = new_lines.index(old_output[0])
    new_output = new_lines[start : new_lines.index("        output_media_type: " + SPARQL_JSON)]
    assert {line[1:] for line in changed if line[0] == "-"} <= set(old_output)
    assert {line[1:] for line in changed if line[0] == "+"} <= set(new_output)


def test_fail_on_drift_and_the_drift_report(
    capsys: pytest.CaptureFixture[str], files: tuple[Path, Path], tmp_path: Path
) -> None:
    reference, graph = files
    report = tmp_path / "drift.json"

    code, out, err = run(
        capsys,
        "refresh",
        str(reference),
        "--data",
        str(graph),
        "--drift-report",
        str(report),
        "--fail-on-drift",
    )

    assert code == 1
    assert err == "FAIL drift: 1 reference output drifted\n"
    assert f"wrote {report}" in out
    record = json.loads(report.read_text())
    assert record["steps"]["changed"] == 1
    assert record["templates"] == [
        {
            "template_id": "transformers",
            "questions": {
                "unchanged": 1,
                "changed": 1,
                "now_empty": 0,
                "now_failing": 0,
                "no_query": 0,
            },
        }
    ]
    (oslo_step,) = record["drift"][0]["steps"]
    assert oslo_step["added"] == [{"t": "http://example.com/t2", "name": "OSLO T2"}]
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "drift.json",
        "graph.ttl",
        "reference.yaml",
    ]  # without -o no reference is written


def test_no_drift_passes_the_gate_and_a_yaml_report(
    capsys: pytest.CaptureFixture[str], files: tuple[Path, Path], tmp_path: Path
) -> None:
    reference, graph = files
    fresh = tmp_path / "fresh.yaml"
    assert run(capsys, "refresh", str(reference), "--data", str(graph), "-o", str(fresh))[0] == 0
    report = tmp_path / "drift.yaml"

    code, _out, _ = run(
        capsys,
        "refresh",
        str(fresh),
        "--data",
        str(graph),
        "--fail-on-drift",
        "--drift-report",
        str(report),
    )

    assert code == 0
    assert yaml.safe_load(report.read_text())["steps"]["unchanged"] == 2


def test_overwriting_the_input_needs_in_place(
    capsys: pytest.CaptureFixture[str], files: tuple[Path, Path]
) -> None:
    reference, graph = files

    code, _, err = run(
        capsys, "refresh", str(reference), "--data", str(graph), "-o", str(reference)
    )

    assert code == 2
    assert_one_line_error(err, "--output: is REFERENCE itself: give --in-place to overwrite it")
    assert reference.read_text() == REFERENCE

    code, _out, err = run(capsys, "refresh", str(reference), "--data", str(graph), "--in-place")

    assert (code, err) == (0, "")
    assert reference.read_text() != REFERENCE
    refreshed = reference.read_text()
    assert reference.read_text().startswith("# Transformers of the demo grid (curated by hand)\n")

    code, out, _ = run(capsys, "refresh", str(reference), "--data", str(graph), "--in-place")
    assert code == 0
    assert f"{reference}: no output drifted, left as it is" in out
    assert reference.read_text() == refreshed


def test_the_drift_report_may_not_replace_the_reference(
    capsys: pytest.CaptureFixture[str], files: tuple[Path, Path]
) -> None:
    reference, graph = files

    code, _, err = run(
        capsys, "refresh", str(reference), "--data", str(graph), "--drift-report", str(reference)
    )

    assert code == 2
    assert_one_line_error(err, "--drift-report: is REFERENCE or the output itself")
    assert reference.read_text() == REFERENCE


def test_the_store_from_the_config(
    capsys: pytest.CaptureFixture[str], files: tuple[Path, Path], tmp_path: Path
) -> None:
    reference, _ = files
    config = tmp_path / "config.yaml"
    config.write_text("sparql:\n  data: [graph.ttl]\n")  # relative to the config's directory

    code, out, _ = run(capsys, "refresh", str(reference), "-c", str(config))

    assert code == 0
    assert f"executed against {label(tmp_path / 'graph.ttl')}" in out


def test_bad_input_is_one_line(
    capsys: pytest.CaptureFixture[str], files: tuple[Path, Path], tmp_path: Path
) -> None:
    reference, graph = files
    broken_graph = tmp_path / "broken.ttl"
    broken_graph.write_text("@prefix ex: <http://example.com/> .\nex:a ex:b .\n")
    broken_reference = tmp_path / "broken.yaml"
    broken_reference.write_text("- template_id: t\n  questions: [{id: q}\n")
    cases = [
        (("refresh", str(reference)), "refresh needs a store"),
        (("refresh", str(tmp_path / "missing.yaml"), "--data", str(graph)), "file not found"),
        (("refresh", str(broken_reference), "--data", str(graph)), "broken.yaml: line"),
        (("refresh", str(reference), "--data", str(broken_graph)), "broken.ttl"),
        # The reference is read first: a bad one stops before the store is loaded.
        (("refresh", str(broken_reference), "--data", str(broken_graph)), "broken.yaml: line"),
        (("refresh", str(reference), "--data", str(tmp_path / "graph.xyz")), "graph.xyz"),
        (
            (
                "refresh",
                str(reference),
                "--data",
                str(graph),
                "-o",
                str(tmp_path / "no" / "x.yaml"),
            ),
            "--output: the directory",
        ),
    ]
    for args, message in cases:
        code, _out, err = run(capsys, *args)
        assert code == 2, args
        assert_one_line_error(err, message)


def test_a_json_reference_keeps_its_layout(
    capsys: pytest.CaptureFixture[str], files: tuple[Path, Path], tmp_path: Path
) -> None:
    _reference, graph = files
    data = yaml.safe_load(REFERENCE)
    source = tmp_path / "reference.json"
    source.write_text(json.dumps(data, indent=4) + "\n")
    output = tmp_path / "new.json"

    code, _, _ = run(capsys, "refresh", str(source), "--data", str(graph), "-o", str(output))

    assert code == 0
    new = json.loads(output.read_text())
    assert output.read_text() == json.dumps(new, indent=4) + "\n"
    assert new[0]["questions"][1] == data[0]["questions"][1]


def test_an_endpoint_that_becomes_unusable_exits_3(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Nothing listens at the endpoint: after the breaker opens the store is unusable; the
    new reference is written all the same, every output kept."""
    pytest.importorskip("graphrag_eval.graph.endpoint")
    from graphrag_eval.llm.client import BREAKER_FAILURES

    from judge_server import closed_port_url

    steps = [
        {"name": "sparql_query", "args": {"query": f"ASK {{ ?s ?p {n} }}"}, "output": "{}"}
        for n in range(BREAKER_FAILURES + 2)
    ]
    data = [{"template_id": "t", "questions": [{"id": "q", "question_text": "?"}]}]
    data[0]["questions"][0]["reference_steps"] = [steps]
    reference = tmp_path / "reference.yaml"
    reference.write_text(yaml.safe_dump(data))
    config = tmp_path / "config.yaml"
    config.write_text("sparql:\n  retries: 0\n  concurrency: 1\n")
    output = tmp_path / "new.yaml"

    code, out, err = run(
        capsys,
        "refresh",
        str(reference),
        "--endpoint",
        closed_port_url(),
        "-c",
        str(config),
        "-o",
        str(output),
        "--fail-on-drift",
    )

    assert code == 3
    assert "refresh incomplete: the SPARQL store" in err and "became unusable" in err
    assert f"{BREAKER_FAILURES + 2} now failing" in out
    assert output.read_text() == reference.read_text()


def test_a_reference_without_queries_says_there_is_nothing_to_refresh(
    capsys: pytest.CaptureFixture[str], files: tuple[Path, Path], tmp_path: Path
) -> None:
    _, graph = files
    reference = tmp_path / "no-queries.yaml"
    reference.write_text(
        "- template_id: t\n  questions:\n  - id: q\n    question_text: Q?\n"
        "    reference_answer: A\n",
        encoding="utf-8",
    )
    code, out, _ = run(capsys, "refresh", str(reference), "--data", str(graph))
    assert code == 0
    assert "nothing to refresh: no sparql_query reference step has a query" in out
