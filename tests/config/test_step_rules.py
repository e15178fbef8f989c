"""Config errors of ``steps.rules`` (docs/steps.md, "Rules for your own tools"): one line,
naming the field, with a did-you-mean for near misses."""

from __future__ import annotations

from typing import Any

import pytest

from graphrag_eval import ConfigError, load_config


def test_a_valid_rule_loads() -> None:
    config = load_config(
        {"steps": {"rules": {"search": {"args": ["query"], "output": "ids", "ids_field": "id"}}}}
    )
    rule = config.steps.rules["search"]
    assert (rule.args, rule.output, rule.ids_field) == (["query"], "ids", "id")
    assert load_config({"steps": {"rules": {"x": {}}}}).steps.rules["x"].args == "exact"


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"argz": ["city"]}, "steps.rules.get_weather.argz: unknown key (did you mean 'args'?)"),
        ({"ouput": "json"}, "unknown key (did you mean 'output'?)"),
        ({"output": "sparql"}, "steps.rules.get_weather.output"),
        ({"args": "subsets"}, "did you mean 'subset'?"),
        ({"args": [""]}, "args must list argument names"),
        ({"output": "json", "ids_field": "id"}, "ids_field is read only with output: ids"),
    ],
)
def test_bad_rules_are_config_errors(rule: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config({"steps": {"rules": {"get_weather": rule}}})
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
