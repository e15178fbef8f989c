"""A new user's common mistakes with the knowledge-graph options: each is one line naming
the option or field and what to do, exit code 2, nothing written (docs/knowledge-graph.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from graphrag_eval.cli import main
from graphrag_eval.cli.errors import EXIT_BAD_INPUT

from builders import write_query_run

pytest.importorskip("pyoxigraph")

QUERY = "SELECT ?n WHERE { <http://example.org/a> <http://example.org/name> ?n }"


def inputs(folder: Path) -> tuple[Path, Path]:
    return write_query_run(folder, QUERY, {"q0": QUERY}, typed=False)


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("localhost:7878/query", "--endpoint: endpoint must be an http(s) URL"),
        ("http://user:pass@localhost:7878/query", "--endpoint: endpoint must not hold"),
    ],
)
def test_a_wrong_endpoint_url_says_what_is_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str, expected: str
) -> None:
    reference, responses = inputs(tmp_path)
    out = tmp_path / "out"
    code = main(["evaluate", str(reference), str(responses), "--endpoint", url, "-o", str(out)])
    assert code == EXIT_BAD_INPUT
    err = one_line_error(capsys)
    assert expected in err
    assert "pydantic" not in err and "For further information" not in err
    assert "pass" not in err.replace("passed", "")
    assert not out.exists()


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ({"execute": "always"}, "sparql.execute"),
        ({"test_suite": {"copies": 3}}, "sparql.test_suite.copies"),
    ],
)
def test_asking_for_executions_without_a_store_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], section: dict[str, object], field: str
) -> None:
    reference, responses = inputs(tmp_path)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"sparql": section}), encoding="utf-8")
    out = tmp_path / "out"
    code = main(["evaluate", str(reference), str(responses), "-c", str(config), "-o", str(out)])
    assert code == EXIT_BAD_INPUT
    err = one_line_error(capsys)
    assert field in err and "needs a store" in err and "--data FILE" in err
    assert not out.exists()


def test_execute_always_with_a_store_on_the_command_line_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = inputs(tmp_path)
    graph = tmp_path / "graph.ttl"
    graph.write_text('<http://example.org/a> <http://example.org/name> "A" .\n', "utf-8")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"sparql": {"execute": "always"}}), encoding="utf-8")
    out = tmp_path / "out"
    args = [str(reference), str(responses), "-c", str(config), "--data", str(graph)]
    assert main(["evaluate", *args, "-o", str(out), "-q"]) == 0
    assert (out / "results.jsonl").exists()


@pytest.mark.parametrize("where", ["out", "out/store", "."])
def test_a_store_directory_overlapping_the_output_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """The store kept in the output directory (or the output directory inside the store's)
    would be replaced by --overwrite, or mix its files with the results: refused before
    anything is built or written, on the first run too."""
    reference, responses = inputs(tmp_path)
    graph = tmp_path / "graph.ttl"
    graph.write_text('<http://example.org/a> <http://example.org/name> "A" .\n')
    store = tmp_path / where
    config = tmp_path / "config.yaml"
    sparql = {"data": [str(graph)], "store_directory": str(store)}
    config.write_text(yaml.safe_dump({"sparql": sparql}), encoding="utf-8")
    out = tmp_path / "out"
    args = ["evaluate", str(reference), str(responses), "-c", str(config), "-o", str(out)]
    assert main(args) == EXIT_BAD_INPUT
    err = one_line_error(capsys)
    assert "sparql.store_directory" in err and "overlap" in err
    assert not out.exists()
