"""The step rule registry (docs/steps.md, "Match rules"): order by declarations, the public
registration API, and rules from entry points of installed packages."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphrag_eval.errors import ConfigError
from graphrag_eval.inputs import (
    ActualStep,
    Diagnostics,
    ReferenceStep,
    parse_reference,
    parse_responses,
)
from graphrag_eval.steps import GIVEN, StepRule, register_step_rule, unregister_step_rule
from graphrag_eval.steps.builtin_rules import BUILTIN_RULES
from graphrag_eval.steps.rules import StepRuleRegistry, check_reference_step

from builders import dataset, question, ref_step, response, step


def _zero(ref: ReferenceStep, act: ActualStep) -> float:
    return 0.0


def _ref(data: dict[str, object]) -> ReferenceStep:
    [parsed] = parse_reference(dataset(question("q", [[data]])))
    assert parsed.reference_steps is not None
    return parsed.reference_steps[0][0]


def _act(data: dict[str, object]) -> ActualStep:
    steps = parse_responses([response("q", [data])]).responses["q"].actual_steps
    assert steps is not None
    return steps[0]


# ---------------------------------------------------------------- order by declarations


def test_most_specific_declaration_first_then_registration_order() -> None:
    registry = StepRuleRegistry()
    for rule in (
        StepRule(name="anything", score=_zero),
        StepRule(name="json_anything", requires={"output_media_type": "x"}, score=_zero),
        StepRule(name="lookup", reference_steps="lookup", score=_zero),
        StepRule(
            name="lookup_json", reference_steps="lookup", requires={"output": GIVEN}, score=_zero
        ),
        StepRule(name="search", actual_steps=["search"], score=_zero),
    ):
        registry.register(rule)
    assert [rule.name for rule in registry.rules()] == [
        "lookup_json",
        "lookup",
        "search",
        "json_anything",
        "anything",
    ]


def test_a_users_rule_goes_before_an_equally_specific_built_in() -> None:
    registry = StepRuleRegistry(BUILTIN_RULES)
    registry.register(
        StepRule(name="my_sparql", reference_steps="sparql_query", score=lambda r, a: 1.0)
    )
    names = [rule.name for rule in registry.rules()]
    # behind the more specific built-in SPARQL and retrieval rules, before the named ones
    assert names[:3] == ["sparql_results", "retrieval_recall_at_k", "my_sparql"]
    assert registry.score_pair(
        _ref(ref_step("sparql_query", "a")), _act(step("sparql_query", "b", "s"))
    ).score == pytest.approx(1.0)


def test_registering_a_built_in_name_replaces_it() -> None:
    registry = StepRuleRegistry(BUILTIN_RULES)
    registry.register(StepRule(name="identical_output", score=lambda r, a: 0.5))
    assert [rule.name for rule in registry.rules()].count("identical_output") == 1
    assert registry.score_pair(
        _ref(ref_step("lookup", "a")), _act(step("lookup", "a", "l"))
    ).score == pytest.approx(0.5)


def test_declared_step_names_limit_the_pairs_a_rule_scores() -> None:
    registry = StepRuleRegistry()
    registry.register(
        StepRule(
            name="found", reference_steps="find", actual_steps=("search",), score=lambda r, a: 1.0
        )
    )
    assert registry.score_pair(_ref(ref_step("find", "x")), _act(step("search", "y", "s"))).score
    assert not registry.score_pair(_ref(ref_step("find", "x")), _act(step("find", "x", "f"))).score


def test_a_rule_registered_or_removed_after_a_pair_was_scored_applies_to_it() -> None:
    """The rules a pair of step names admits are looked up once; registering or removing a
    rule looks them up again."""
    registry = StepRuleRegistry(BUILTIN_RULES)
    ref, act = _ref(ref_step("lookup", "a")), _act(step("lookup", "a", "l"))
    assert registry.score_pair(ref, act).score == pytest.approx(1.0)
    registry.register(StepRule(name="halves", reference_steps="lookup", score=lambda r, a: 0.5))
    assert registry.score_pair(ref, act).score == pytest.approx(0.5)
    registry.unregister("halves")
    assert registry.score_pair(ref, act).score == pytest.approx(1.0)
    checked = StepRule(
        name="checked", reference_steps="lookup", score=_zero, check_reference=lambda r: "bad"
    )
    assert registry.check_reference(ref) is None
    registry.register(checked)
    assert registry.check_reference(ref) == "bad"


# ---------------------------------------------------------------- the public registry


@pytest.fixture
def options_rule() -> Iterator[StepRule]:
    rule = register_step_rule(
        StepRule(
            name="lookup_case",
            reference_steps="lookup",
            options={"case_sensitive"},
            score=lambda ref, act: float(
                ref.output == act.output
                if ref.raw.get("case_sensitive", True)
                else str(ref.output).casefold() == str(act.output).casefold()
            ),
        )
    )
    yield rule
    unregister_step_rule(rule.name)


def test_declared_reference_options_are_not_unused_fields(options_rule: StepRule) -> None:
    data = dataset(question("q", [[ref_step("lookup", "OSLO", case_sensitive=False, other=1)]]))
    diagnostics = Diagnostics()
    parse_reference(data, check_step=check_reference_step, diagnostics=diagnostics)
    notices = [n.field for n in diagnostics.notices if n.kind == "unused_field"]
    assert notices == ["reference_steps[0][0].other"]


def test_reference_options_follow_the_rules_registered_and_removed() -> None:
    # Worked out once per set of rules: registering or removing a rule works them out again.
    registry = StepRuleRegistry(BUILTIN_RULES)
    before = registry.reference_options()
    assert "ordered" in before and "case_folded" not in before
    assert registry.reference_options() is before
    rule = StepRule(name="folded", reference_steps="lookup", options={"case_folded"}, score=_zero)
    registry.register(rule)
    assert registry.reference_options() == before | {"case_folded"}
    registry.unregister("folded")
    assert registry.reference_options() == before


# ---------------------------------------------------------------- entry points


def _install_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, code: str, entries: str
) -> None:
    """A package installed for real: its module and a dist-info directory on ``sys.path``."""
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(code), encoding="utf-8")
    dist_info = tmp_path / f"{module}-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n", encoding="utf-8"
    )
    (dist_info / "entry_points.txt").write_text(
        "[graphrag_eval.step_rules]\n" + textwrap.dedent(entries), encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)


_PLUGIN = """
    from graphrag_eval.steps import StepRule

    calls = 0

    def case_insensitive():
        global calls
        calls += 1
        return StepRule(
            name="plugin_lookup",
            reference_steps="lookup",
            score=lambda ref, act: float(ref.output.casefold() == act.output.casefold()),
        )

    always = StepRule(name="plugin_always", score=lambda ref, act: 1.0)
"""


def test_entry_points_add_rules_lazily_and_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = StepRuleRegistry()  # created before the package is installed
    _install_plugin(
        tmp_path,
        monkeypatch,
        "graphrag_eval_plugin_a",
        _PLUGIN,
        """
        lookup = graphrag_eval_plugin_a:case_insensitive
        always = graphrag_eval_plugin_a:always
        """,
    )
    assert {rule.name for rule in registry.rules()} == {"plugin_lookup", "plugin_always"}
    registry.rules()
    assert sys.modules["graphrag_eval_plugin_a"].calls == 1
    pair = registry.score_pair(_ref(ref_step("lookup", "OSLO")), _act(step("lookup", "oslo", "l")))
    assert pair.score == pytest.approx(1.0)


def test_a_failing_entry_point_is_a_config_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install_plugin(
        tmp_path,
        monkeypatch,
        "graphrag_eval_plugin_b",
        "def broken():\n    raise RuntimeError('boom')\n",
        "mine = graphrag_eval_plugin_b:broken\n",
    )
    with pytest.raises(ConfigError, match=r"step rule entry point 'mine' .*boom"):
        StepRuleRegistry().rules()


def test_an_entry_point_that_gives_no_rule_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install_plugin(
        tmp_path,
        monkeypatch,
        "graphrag_eval_plugin_c",
        "rule = 42\n",
        "wrong = graphrag_eval_plugin_c:rule\n",
    )
    with pytest.raises(ConfigError, match=r"'wrong' \(graphrag_eval_plugin_c:rule\) gave 42"):
        StepRuleRegistry().rules()
