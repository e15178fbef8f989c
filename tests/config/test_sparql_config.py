"""The ``sparql:`` config section and the ``--endpoint``/``--data`` shortcuts
(docs/knowledge-graph.md, "Configuring a store")."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from graphrag_eval.cli.options import with_store
from graphrag_eval.config import parse_config
from graphrag_eval.errors import ConfigError


def test_no_store_by_default() -> None:
    assert not parse_config({}).sparql.configured


def test_relative_data_paths_are_read_from_the_config_files_directory(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    config_file = folder / "config.yaml"
    config_file.write_text(
        "sparql:\n  data: [graph.ttl, /abs/other.nt]\n  store_directory: store\n",
        encoding="utf-8",
    )
    sparql = parse_config(config_file).sparql
    assert sparql.data == [str(folder / "graph.ttl"), "/abs/other.nt"]
    assert sparql.store_directory == str(folder / "store")
    assert sparql.configured


@pytest.mark.parametrize(
    ("section", "field", "words"),
    [
        ({"endpoint": "http://h/q", "data": ["g.ttl"]}, "sparql", "either endpoint or data"),
        ({"endpoint": "ftp://h/q"}, "sparql", "http(s) URL"),
        ({"endpoint": "http://user:secret@h/q"}, "sparql", "must not hold credentials"),
        ({"store_directory": "s"}, "sparql", "needs data"),
        ({"auth": {"token_env": "not a name"}}, "sparql.auth.token_env", "environment"),
        ({"auth": {"username_env": "U"}}, "sparql.auth", "both username_env"),
        (
            {"auth": {"username_env": "U", "password_env": "P", "token_env": "T"}},
            "sparql.auth",
            "either",
        ),
        ({"execute": "sometimes"}, "sparql.execute", "missing"),
        ({"row_limit": 0}, "sparql.row_limit", "greater than 0"),
        ({"endpont": "http://h/q"}, "sparql.endpont", "did you mean 'endpoint'"),
    ],
)
def test_a_bad_section_is_a_one_line_error_naming_the_key(
    section: dict[str, object], field: str, words: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"sparql": section})
    message = str(caught.value)
    assert field in message and words in message
    assert "\n" not in message
    assert "user:secret" not in message  # a credential is never echoed


def test_the_command_line_store_replaces_the_configs() -> None:
    config = parse_config({"sparql": {"endpoint": "http://h/q", "row_limit": 5}})
    replaced = with_store(config, None, ["graph.ttl"])
    assert replaced.sparql.data == ["graph.ttl"]
    assert replaced.sparql.endpoint is None
    assert replaced.sparql.row_limit == 5  # the other settings are kept
    endpoint = with_store(parse_config({"sparql": {"data": ["g.ttl"]}}), "http://h/q", [])
    assert endpoint.sparql.endpoint == "http://h/q" and endpoint.sparql.data == []
    assert with_store(config, None, []) is config


def test_both_shortcuts_at_once_are_refused() -> None:
    with pytest.raises(click.BadParameter, match="either --endpoint or --data"):
        with_store(parse_config({}), "http://h/q", ["g.ttl"])
    with pytest.raises(click.BadParameter, match="http"):
        with_store(parse_config({}), "localhost:7878", [])
