"""docs/knowledge-graph.md as a new user reads it: every ``sparql:`` config snippet is a valid
config, and every ``graphrag-eval`` command runs as written (on the bundled example's files;
the endpoint of the page is the real Oxigraph server serving the same graph)."""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
import yaml

from graph.oxigraph_server import OxigraphServer
from graphrag_eval.cli import main
from graphrag_eval.config import EvaluationConfig

pytest.importorskip("pyoxigraph")

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "knowledge-graph.md").read_text(encoding="utf-8")
EXAMPLE = ROOT / "examples" / "knowledge-graph"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE, re.DOTALL)


def commands() -> list[list[str]]:
    found = []
    for block in blocks("bash"):
        for command in block.replace("\\\n", " ").splitlines():
            words = shlex.split(command, comments=True)
            if words and words[0] == "graphrag-eval":
                found.append(words[1:])
    return found


@pytest.mark.parametrize("snippet", [b for b in blocks("yaml") if b.startswith("sparql:")])
def test_every_config_snippet_is_a_valid_config(snippet: str) -> None:
    config = EvaluationConfig.model_validate(yaml.safe_load(snippet))
    assert config.sparql.configured


def test_the_page_has_the_commands_this_test_runs() -> None:
    assert [words[0] for words in commands()] == ["refresh", "refresh", "refresh", "evaluate"]


def test_every_command_runs_as_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    start_oxigraph: Callable[[Mapping[str, str]], OxigraphServer],
) -> None:
    graph = (EXAMPLE / "graph.ttl").read_text(encoding="utf-8")
    server = start_oxigraph({"graph.ttl": graph})
    shutil.copytree(EXAMPLE, tmp_path / "examples" / "knowledge-graph")
    shutil.copy(EXAMPLE / "reference.yaml", tmp_path / "reference.yaml")
    shutil.copy(EXAMPLE / "graph.ttl", tmp_path / "graph.ttl")
    (tmp_path / "config.yaml").write_text("sparql:\n  data: [graph.ttl]\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for words in commands():
        words = [w.replace("http://localhost:7878/query", server.query_url) for w in words]
        # The example's stored outputs are its graph's: nothing drifts, every command is 0.
        assert main(words) == 0, words
    assert (tmp_path / "drift.yaml").is_file()
    drift = yaml.safe_load((tmp_path / "drift.yaml").read_text(encoding="utf-8"))
    assert drift["steps"]["unchanged"] > 0
    assert set(drift["steps"]) == {"unchanged", "changed", "now_empty", "now_failing", "no_query"}
    # Nothing drifted: the new reference is the old one, byte for byte.
    written = (tmp_path / "reference.new.yaml").read_bytes()
    assert written == (EXAMPLE / "reference.yaml").read_bytes()
    results = (tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(results) == 9
