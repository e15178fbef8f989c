"""Step rules from the config's ``steps.rules`` (docs/steps.md, "Rules for your own tools"):
for a tool name, which args must be equal and how its outputs are compared, without code.

A config rule takes precedence over every registered rule for its reference step name.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Final

from graphrag_eval.config.sections import StepRuleConfig
from graphrag_eval.inputs import ActualStep, ReferenceStep
from graphrag_eval.steps.builtin_rules import json_equal
from graphrag_eval.steps.explain import (
    Mismatch,
    explain_json,
    explain_recall,
    explain_text,
    shown,
)
from graphrag_eval.steps.retrieval import recall_at_k
from graphrag_eval.steps.rule import StepRule
from graphrag_eval.steps.sparql import compare_sparql_results, parse_sparql_results
from graphrag_eval.steps.sparql_diff import diff_sparql, not_sparql

__all__ = ["CONFIG_RULE_PREFIX", "args_difference", "config_rule", "config_rules"]

CONFIG_RULE_PREFIX: Final = "config:"
"""Config rules are named ``config:<step name>``."""

_TOLERANCE: Final = 1e-8
_SPACES = re.compile(r"\s+")
_ABSENT = object()


def config_rules(rules: Mapping[str, StepRuleConfig]) -> dict[str, StepRule]:
    """The config's rules as step rules, by the reference step name they override."""
    return {name: config_rule(name, settings) for name, settings in rules.items()}


def config_rule(name: str, settings: StepRuleConfig) -> StepRule:
    """One config rule: its args must agree, then its outputs are compared."""

    def score(reference: ReferenceStep, actual: ActualStep) -> float:
        if args_difference(reference.args, actual.args, settings.args):
            return 0.0
        return _output_score(settings, reference, actual)

    def explain(reference: ReferenceStep, actual: ActualStep) -> Mismatch:
        difference = args_difference(reference.args, actual.args, settings.args)
        if difference:
            return Mismatch(difference)
        return _output_explanation(settings, reference, actual)

    return StepRule(
        name=CONFIG_RULE_PREFIX + name,
        reference_steps={name},
        score=score,
        explain=explain,
        options={"ordered", "required_columns", "ignore_duplicates"}
        if settings.output == "sparql_results"
        else (),
    )


# -- args -----------------------------------------------------------------------------------


def args_difference(reference: Any, actual: Any, mode: list[str] | str) -> str:
    """The first disagreement of the args under ``mode`` ("" when they agree):
    ``arg 'city': 'Bergen' vs 'Oslo'`` (actual first)."""
    if mode == "ignore":
        return ""
    ref = reference if isinstance(reference, Mapping) else {}
    act = actual if isinstance(actual, Mapping) else {}
    if mode == "exact" or mode == "superset":
        names = list(ref)
        if mode == "exact":
            extra = [key for key in act if key not in ref]
            if extra:
                return f"extra arg {extra[0]!r} (args: exact)"
    elif mode == "subset":
        names = [key for key in act if key in ref]
        extra = [key for key in act if key not in ref]
        if extra:
            return f"arg {extra[0]!r} is not among the reference's (args: subset)"
    else:
        names = list(mode)
    for key in names:
        a, r = act.get(key, _ABSENT), ref.get(key, _ABSENT)
        if a is _ABSENT and r is _ABSENT:
            continue
        if a is _ABSENT:
            return f"arg {key!r} missing (reference: {shown(r)})"
        if r is _ABSENT:
            return f"arg {key!r}: {shown(a)} vs none"
        if not values_equal(a, r):
            return f"arg {key!r}: {shown(a)} vs {shown(r)}"
    return ""


def values_equal(a: Any, b: Any) -> bool:
    """Argument equality: strings case- and whitespace-insensitively, lists as sorted,
    numbers within 1e-8, mappings key by key; ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b or math.isclose(a, b, rel_tol=0.0, abs_tol=_TOLERANCE)
    if isinstance(a, str) and isinstance(b, str):
        return _text(a) == _text(b)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        if len(a) != len(b):
            return False
        return all(values_equal(x, y) for x, y in zip(_sorted(a), _sorted(b), strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(values_equal(a[key], b[key]) for key in a)
    return bool(a == b)


def _text(value: str) -> str:
    return _SPACES.sub(" ", value.casefold()).strip()


def _sorted(items: Any) -> list[Any]:
    def key(item: Any) -> tuple[str, str]:
        text = (
            _text(item) if isinstance(item, str) else json.dumps(item, sort_keys=True, default=str)
        )
        return type(item).__name__, text

    return sorted(items, key=key)


# -- outputs --------------------------------------------------------------------------------


def _decoded(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            raise ValueError("output is not valid JSON") from None
    return value


def _ids(value: Any, field: str | None) -> list[str]:
    items = _decoded(value)
    if not isinstance(items, list):
        raise ValueError("output is not a JSON list")
    ids = []
    for index, item in enumerate(items):
        found = item.get(field) if field is not None and isinstance(item, Mapping) else item
        if field is not None and not isinstance(item, Mapping):
            raise ValueError(f"item {index} of the output is not an object with {field!r}")
        if isinstance(found, bool) or not isinstance(found, str | int):
            raise ValueError(f"item {index} of the output has no string or integer id")
        ids.append(str(found))
    return ids


def _k(actual: ActualStep, retrieved: int) -> int:
    k = actual.args.get("k") if isinstance(actual.args, Mapping) else None
    return k if isinstance(k, int) and not isinstance(k, bool) and k > 0 else max(retrieved, 1)


def _output_score(settings: StepRuleConfig, reference: ReferenceStep, actual: ActualStep) -> float:
    kind = settings.output
    if kind == "ignore":
        return 1.0
    if kind == "exact":
        return float(reference.output == actual.output)
    if kind == "json":
        return float(json_equal(_reference_json(reference), _decoded(actual.output)))
    if kind == "sparql_results":
        try:
            expected = parse_sparql_results(reference.output)
        except ValueError:
            return 0.0  # a broken reference never matches; mismatch_reason says so
        try:
            got = parse_sparql_results(actual.output)
        except ValueError:
            raise ValueError(not_sparql(actual.output)) from None
        return float(
            compare_sparql_results(
                expected,
                got,
                reference.required_columns,
                ordered=reference.ordered,
                ignore_duplicates=reference.ignore_duplicates,
            )
        )
    relevant = _reference_ids(settings, reference)
    retrieved = _ids(actual.output, settings.ids_field)
    return recall_at_k(relevant, retrieved, _k(actual, len(retrieved)))


def _reference_json(reference: ReferenceStep) -> Any:
    try:
        return _decoded(reference.output)
    except ValueError:
        return _ABSENT  # never equal to a decoded value


def _reference_ids(settings: StepRuleConfig, reference: ReferenceStep) -> list[str]:
    try:
        return _ids(reference.output, settings.ids_field)
    except ValueError:
        return []


def _output_explanation(
    settings: StepRuleConfig, reference: ReferenceStep, actual: ActualStep
) -> Mismatch:
    kind = settings.output
    if kind == "json":
        expected = _reference_json(reference)
        if expected is _ABSENT:
            return Mismatch("reference output is not valid JSON")
        return explain_json(_decoded(actual.output), expected)
    if kind == "sparql_results":
        try:
            expected = parse_sparql_results(reference.output)
        except ValueError as exc:
            return Mismatch(f"reference output is not SPARQL results JSON: {exc}")
        try:
            got = parse_sparql_results(actual.output)
        except ValueError:
            return Mismatch(not_sparql(actual.output))
        diff = diff_sparql(
            expected,
            got,
            reference.required_columns,
            ordered=reference.ordered,
            ignore_duplicates=reference.ignore_duplicates,
        )
        return Mismatch(diff.reason, diff.closeness)
    if kind == "ids":
        relevant = _reference_ids(settings, reference)
        if not relevant:
            return Mismatch("reference output lists no ids")
        retrieved = _ids(actual.output, settings.ids_field)
        return explain_recall(relevant, retrieved, _k(actual, len(retrieved)))
    return explain_text(actual.output, reference.output)
