"""Config loading: a path, a dict or the object; unknown keys and bad values are errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import Field

from graphrag_eval import ConfigError, EvaluationConfig, load_config
from graphrag_eval.metrics import (
    ItemContext,
    ItemMetric,
    Outcome,
    OutputKey,
    Scored,
    Section,
    register_metric,
    unregister_metric,
)
from graphrag_eval.metrics.retrieval_context import RetrievalContextConfig


def test_defaults() -> None:
    config = load_config(None)
    assert config.steps.score_mode == "last_group"
    assert config.aggregation.error_samples == "exclude"
    section = config.section("retrieval_context", RetrievalContextConfig)
    assert section.similarity_threshold == pytest.approx(0.5)


def test_dict_path_and_object_are_equivalent(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("steps:\n  score_mode: all_groups\n")
    from_dict = load_config({"steps": {"score_mode": "all_groups"}})
    from_path = load_config(path)
    from_str = load_config(str(path))
    assert from_dict == from_path == from_str
    assert load_config(from_dict) is from_dict


def test_empty_file_gives_defaults(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("")
    assert load_config(path) == EvaluationConfig()


def test_unknown_key_names_file_and_key_with_a_suggestion(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("steps:\n  score_mod: all_groups\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: steps.score_mod: unknown key")
    assert "did you mean 'score_mode'" in message
    assert "\n" not in message


def test_unknown_section_lists_known_sections() -> None:
    with pytest.raises(ConfigError, match=r"<config>: metrix: unknown key"):
        load_config({"metrix": ["all"]})


def test_bad_value_shows_the_value() -> None:
    with pytest.raises(ConfigError, match=r"steps.score_mode: .*'last'"):
        load_config({"steps": {"score_mode": "last"}})


def test_threshold_out_of_range() -> None:
    with pytest.raises(ConfigError, match=r"retrieval_context.similarity_threshold"):
        load_config({"retrieval_context": {"similarity_threshold": 1.5}})


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("steps:\n  score_mode: [unclosed\n")
    with pytest.raises(ConfigError, match=r"config.yaml: line \d+, column \d+: invalid YAML"):
        load_config(path)


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match=r"nope\.yaml: file not found"):
        load_config("nope.yaml")


def test_file_that_is_not_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("- steps\n")
    with pytest.raises(ConfigError, match="expected a mapping of sections, got a list"):
        load_config(path)


def test_neither_path_nor_mapping() -> None:
    with pytest.raises(ConfigError, match="expected a path, a dict or an EvaluationConfig"):
        load_config(42)  # type: ignore[arg-type]


def test_config_that_is_not_utf8_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(b'steps:\n  score_mode: "all\xe9"\n')  # Latin-1, not UTF-8
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f"{path}: line 2, column 19: not UTF-8 text (byte 0xe9); "
        "it looks like Windows-1252/Latin-1: re-save the file as UTF-8"
    )


class _ToneSettings(Section):
    """The ``tone`` section."""

    strictness: int = Field(default=1, ge=1, le=3)
    """How strict the judge is."""


class _Tone(ItemMetric):
    name = "tone"
    section = "tone"
    settings_model = _ToneSettings
    outputs = (OutputKey("tone"),)
    error_keys = ("tone_error",)

    async def score(self, context: ItemContext) -> Outcome:
        return Scored({"tone": context.config.section("tone", _ToneSettings).strictness})


def test_a_metric_brings_its_own_config_section() -> None:
    register_metric(_Tone())
    try:
        config = load_config({"tone": {"strictness": 2}})
        with pytest.raises(ConfigError) as caught:
            load_config({"tone": {"strictnes": 2}})
    finally:
        unregister_metric("tone")

    assert config.section("tone", _ToneSettings).strictness == 2
    assert str(caught.value) == "<config>: tone.strictnes: unknown key (did you mean 'strictness'?)"
    with pytest.raises(ConfigError, match="tone: unknown key"):
        load_config({"tone": {}})  # unregistered, the section is gone
