"""The registry of step match rules (docs/steps.md, "Match rules").

A rule says whether it applies to a (reference step, actual step) pair and scores the pair in
[0, 1]. Rules are tried by ascending ``priority``; the first that applies decides. A pair no
rule applies to cannot match (in practice: steps of different names). New tools register
their own rule with :func:`register_step_rule`, without touching the matcher.

A rule may also check a reference step on its own when the dataset is loaded
(``check_reference``): a broken reference (unparsable JSON output, say) is then reported
before anything runs, and the step never matches.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from graphrag_eval.inputs import ActualStep, ReferenceStep
from graphrag_eval.steps.retrieval import context_key, parse_contexts, recall_at_k
from graphrag_eval.steps.sparql import (
    SparqlResults,
    compare_sparql_results,
    parse_sparql_results,
    prepare_reference,
)
from graphrag_eval.steps.timeseries import (
    check_data_points_reference,
    data_points_match,
    time_series_match,
)

__all__ = [
    "JSON_MEDIA_TYPE",
    "SPARQL_JSON_MEDIA_TYPE",
    "PairScore",
    "StepRule",
    "check_reference_step",
    "json_equal",
    "match_score",
    "register_step_rule",
    "score_pair",
    "step_rules",
    "unregister_step_rule",
]

logger = logging.getLogger("graphrag_eval")

SPARQL_JSON_MEDIA_TYPE = "application/sparql-results+json"
JSON_MEDIA_TYPE = "application/json"


@dataclass(frozen=True, slots=True)
class StepRule:
    """A named way of scoring a reference step against an actual step."""

    name: str
    priority: int
    applies: Callable[[ReferenceStep, ActualStep], bool]
    score: Callable[[ReferenceStep, ActualStep], float]
    check_reference: Callable[[ReferenceStep], str | None] | None = None


_RULES: list[StepRule] = []


def register_step_rule(rule: StepRule) -> StepRule:
    """Add (or replace, by name) a step rule. Returns the rule, so it can decorate."""
    _RULES[:] = [existing for existing in _RULES if existing.name != rule.name]
    _RULES.append(rule)
    _RULES.sort(key=lambda r: r.priority)
    return rule


def unregister_step_rule(name: str) -> None:
    """Remove a step rule by name (no error if absent)."""
    _RULES[:] = [existing for existing in _RULES if existing.name != name]


def step_rules() -> tuple[StepRule, ...]:
    """The registered rules in the order they are tried."""
    return tuple(_RULES)


@dataclass(frozen=True, slots=True)
class PairScore:
    """The score of a (reference step, actual step) pair, and why the actual step's output
    could not be read when that is why it scored 0."""

    score: float
    problem: str | None = None


def score_pair(reference: ReferenceStep, actual: ActualStep) -> PairScore:
    """Score one reference step against one actual step: 0 unless the actual step succeeded,
    the reference is sound and a rule applies; otherwise the rule's score.

    A rule raises ``ValueError`` when it cannot read the actual output (not JSON where JSON
    is expected, say): the pair scores 0 and the reason is returned. Any other exception is a
    bug or an extreme input (nesting deeper than the interpreter allows): it is logged and
    the pair scores 0 with the reason, so one step never costs the item.
    """
    if not actual.succeeded or reference.problem is not None:
        return PairScore(0.0)
    for rule in _RULES:
        if rule.applies(reference, actual):
            try:
                return PairScore(float(rule.score(reference, actual)))
            except ValueError as exc:
                return PairScore(0.0, str(exc))
            except Exception as exc:
                logger.warning("step rule %s failed", rule.name, exc_info=True)
                return PairScore(0.0, f"could not be compared ({rule.name}): {exc!r}")
    return PairScore(0.0)


def match_score(reference: ReferenceStep, actual: ActualStep) -> float:
    """:func:`score_pair` without the reason."""
    return score_pair(reference, actual).score


def check_reference_step(step: ReferenceStep) -> str | None:
    """The first problem any rule finds in a reference step on its own, or ``None``."""
    for rule in _RULES:
        if rule.check_reference is not None:
            try:
                problem = rule.check_reference(step)
            except Exception as exc:  # an extreme input must not stop loading the dataset
                problem = f"could not be read: {exc!r}"
            if problem is not None:
                return problem
    return None


# --------------------------------------------------------------------------------------------
# The built-in rules, in the order of docs/steps.md


def _both(name: str) -> Callable[[ReferenceStep, ActualStep], bool]:
    return lambda ref, act: ref.name == name and act.name == name


def _is_sparql_reference(ref: ReferenceStep) -> bool:
    return ref.name == "sparql_query" and ref.output_media_type == SPARQL_JSON_MEDIA_TYPE


_SPARQL = "sparql_results"  # the memo key of a step's parsed SPARQL output


def _check_sparql(ref: ReferenceStep) -> str | None:
    """Parse and prepare the reference result once, when the dataset is loaded; it is kept
    on the step until the item has been evaluated."""
    if not _is_sparql_reference(ref):
        return None
    try:
        parsed = parse_sparql_results(ref.output)
    except ValueError as exc:
        return f"output is not SPARQL results JSON: {exc}"
    if not parsed.is_ask and ref.required_columns is not None:
        missing = [c for c in ref.required_columns if c not in parsed.columns]
        if missing:
            return f"required_columns {', '.join(missing)} not among the output's head.vars"
    prepare_reference(
        parsed,
        ref.required_columns,
        ordered=ref.ordered,
        ignore_duplicates=ref.ignore_duplicates,
    )
    ref.memo[_SPARQL] = parsed
    return None


def _score_sparql(ref: ReferenceStep, act: ActualStep) -> float:
    reference: SparqlResults | None = ref.memo.get(_SPARQL)
    if reference is None:  # checked at load, but released after an earlier evaluation
        reference = ref.memo[_SPARQL] = parse_sparql_results(ref.output)
    if _SPARQL not in act.memo:  # one actual step may be compared with several references
        try:
            act.memo[_SPARQL] = parse_sparql_results(act.output)
        except ValueError as exc:
            act.memo[_SPARQL] = f"output is not SPARQL results JSON: {exc}"
    actual: SparqlResults | str = act.memo[_SPARQL]
    if isinstance(actual, str):
        raise ValueError(actual)
    return compare_sparql_results(
        reference,
        actual,
        ref.required_columns,
        ordered=ref.ordered,
        ignore_duplicates=ref.ignore_duplicates,
    )


register_step_rule(
    StepRule(
        name="sparql_results",
        priority=10,
        applies=lambda ref, act: _is_sparql_reference(ref) and act.name == "sparql_query",
        score=_score_sparql,
        check_reference=_check_sparql,
    )
)


def _retrieval_k(act: ActualStep, retrieved_count: int) -> int:
    """``args.k`` as a positive integer (``2``, ``2.0`` or ``"2"``), else the number of
    contexts retrieved when it is absent; any other value is a malformed step."""
    k = act.args.get("k") if isinstance(act.args, Mapping) else None
    if k is None:
        return retrieved_count
    if isinstance(k, str) and k.strip().isdigit():
        k = int(k)
    if isinstance(k, float) and k.is_integer():
        k = int(k)
    if isinstance(k, int) and not isinstance(k, bool) and k > 0:
        return k
    raise ValueError(f"args.k is not a positive integer: {k!r}")


def _score_retrieval(ref: ReferenceStep, act: ActualStep) -> float:
    relevant = [context_key(c) for c in parse_contexts(ref.output)]
    try:
        retrieved = [context_key(c) for c in parse_contexts(act.output)]
    except ValueError as exc:
        raise ValueError(f"output is {exc}") from None
    return recall_at_k(relevant, retrieved, _retrieval_k(act, len(retrieved)))


def _check_retrieval(ref: ReferenceStep) -> str | None:
    if ref.name != "retrieval" or ref.output is None:
        return None
    try:
        parse_contexts(ref.output)
    except ValueError as exc:
        return f"output is {exc}"
    return None


register_step_rule(
    StepRule(
        name="retrieval_recall_at_k",
        priority=20,
        applies=lambda ref, act: _both("retrieval")(ref, act) and ref.output is not None,
        score=_score_retrieval,
        check_reference=_check_retrieval,
    )
)

register_step_rule(
    StepRule(
        name="retrieve_time_series",
        priority=30,
        applies=_both("retrieve_time_series"),
        score=lambda ref, act: float(time_series_match(ref.args, act.args)),
    )
)


def _check_data_points(ref: ReferenceStep) -> str | None:
    if ref.name != "retrieve_data_points":
        return None
    return check_data_points_reference(ref.args)


register_step_rule(
    StepRule(
        name="retrieve_data_points",
        priority=40,
        applies=_both("retrieve_data_points"),
        score=lambda ref, act: float(
            data_points_match(ref.args, act.args, act.execution_timestamp)
        ),
        check_reference=_check_data_points,
    )
)


_ANGLE_BRACKETS = re.compile(r"^\s*<(.*)>\s*$")


def _reference_iri(ref: ReferenceStep) -> str:
    text = str(ref.output).strip()
    match = _ANGLE_BRACKETS.match(text)
    return match.group(1) if match else text


# Characters that can continue an IRI: the reference IRI must not be part of a longer one.
_IRI_CHARACTER = r"[\w\-.~:/?#\[\]@!$&'()*+,;=%]"


def _score_iri_discovery(ref: ReferenceStep, act: ActualStep) -> float:
    iri = _reference_iri(ref)
    if act.name == "sparql_query":
        text = act.output if isinstance(act.output, str) else json.dumps(act.output)
        whole = rf"(?<!{_IRI_CHARACTER}){re.escape(iri)}(?!{_IRI_CHARACTER})"
        return float(re.search(whole, text) is not None)
    document = act.output
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except json.JSONDecodeError:
            raise ValueError("output is not SPARQL results JSON") from None
    if not isinstance(document, Mapping):
        raise ValueError("output is not SPARQL results JSON")
    results = document.get("results")
    bindings = results.get("bindings") if isinstance(results, Mapping) else None
    for binding in bindings if isinstance(bindings, list) else []:
        if not isinstance(binding, Mapping):
            continue
        for term in binding.values():
            if isinstance(term, Mapping) and term.get("type") == "uri" and term.get("value") == iri:
                return 1.0
    return 0.0


def _check_iri_discovery(ref: ReferenceStep) -> str | None:
    if ref.name != "iri_discovery":
        return None
    if not isinstance(ref.output, str) or not _reference_iri(ref):
        return "output of an iri_discovery step must be one IRI"
    return None


register_step_rule(
    StepRule(
        name="iri_discovery",
        priority=50,
        applies=lambda ref, act: (
            ref.name == "iri_discovery" and act.name in ("autocomplete_search", "sparql_query")
        ),
        score=_score_iri_discovery,
        check_reference=_check_iri_discovery,
    )
)


_NO_JSON = object()


def _as_json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return _NO_JSON
    return value


def json_equal(a: Any, b: Any) -> bool:
    """Equality of decoded JSON values: ``true`` is not ``1``, ``1`` is ``1.0``, NaN is NaN,
    object key order does not matter."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b or (a != a and b != b)  # NaN equals NaN here
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[key], b[key]) for key in a)
    return type(a) is type(b) and a == b


def _check_json(ref: ReferenceStep) -> str | None:
    if ref.output_media_type != JSON_MEDIA_TYPE or ref.name == "iri_discovery":
        return None
    if _as_json(ref.output) is _NO_JSON:
        return "output is not valid JSON"
    return None


def _score_json(ref: ReferenceStep, act: ActualStep) -> float:
    actual = _as_json(act.output)
    if actual is _NO_JSON:
        raise ValueError("output is not valid JSON")
    return float(json_equal(_as_json(ref.output), actual))


register_step_rule(
    StepRule(
        name="json_output",
        priority=60,
        applies=lambda ref, act: ref.output_media_type == JSON_MEDIA_TYPE and ref.name == act.name,
        score=_score_json,
        check_reference=_check_json,
    )
)

register_step_rule(
    StepRule(
        name="identical_output",
        priority=70,
        applies=lambda ref, act: ref.name == act.name,
        score=lambda ref, act: float(ref.output == act.output),
    )
)
