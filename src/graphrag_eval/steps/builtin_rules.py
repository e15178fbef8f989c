"""The built-in step match rules (docs/steps.md, "Match rules"), in the order of the docs.

Each declares the step names and reference options it handles; the registry
(:mod:`graphrag_eval.steps.rules`) orders them by those declarations.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Collection, Mapping
from typing import Any

from graphrag_eval.inputs import ActualStep, ReferenceStep
from graphrag_eval.steps.explain import (
    Mismatch,
    explain_data_points,
    explain_json,
    explain_recall,
    explain_text,
    explain_time_series,
)
from graphrag_eval.steps.retrieval import context_key, parse_contexts, recall_at_k
from graphrag_eval.steps.rule import GIVEN, StepRule, only_validating
from graphrag_eval.steps.sparql import (
    SparqlResults,
    compare_sparql_results,
    parse_sparql_results,
    prepare_reference,
)
from graphrag_eval.steps.sparql_diff import diff_sparql, not_sparql
from graphrag_eval.steps.sparql_values import sparql_results_vars
from graphrag_eval.steps.timeseries import (
    check_data_points_reference,
    data_points_match,
    time_series_match,
)

__all__ = ["BUILTIN_RULES", "JSON_MEDIA_TYPE", "SPARQL_JSON_MEDIA_TYPE", "json_equal"]

SPARQL_JSON_MEDIA_TYPE = "application/sparql-results+json"
JSON_MEDIA_TYPE = "application/json"

# --------------------------------------------------------------------------------------------
# 1. SPARQL results

_SPARQL = "sparql_results"  # the memo key of a step's parsed SPARQL output


def _check_sparql(ref: ReferenceStep) -> str | None:
    """Parse and prepare the reference result once, when the dataset is loaded; it is kept
    on the step until the item has been evaluated. Only validated (a reference kept compact,
    read again when scored), the result is decoded and its variables checked, nothing built."""
    if only_validating():
        try:
            variables = sparql_results_vars(ref.output)
        except ValueError as exc:
            return f"output is not SPARQL results JSON: {exc}"
        return _missing_columns(ref, variables) if variables is not None else None
    try:
        parsed = parse_sparql_results(ref.output)
    except ValueError as exc:
        return f"output is not SPARQL results JSON: {exc}"
    if not parsed.is_ask and (problem := _missing_columns(ref, parsed.columns)) is not None:
        return problem
    prepare_reference(
        parsed,
        ref.required_columns,
        ordered=ref.ordered,
        ignore_duplicates=ref.ignore_duplicates,
    )
    ref.memo[_SPARQL] = parsed
    return None


def _missing_columns(ref: ReferenceStep, columns: Collection[str]) -> str | None:
    if ref.required_columns is None:
        return None
    missing = [c for c in ref.required_columns if c not in columns]
    if missing:
        return f"required_columns {', '.join(missing)} not among the output's head.vars"
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


def _explain_sparql(ref: ReferenceStep, act: ActualStep) -> Mismatch:
    _score_sparql_safely(ref, act)  # parses both into their memos
    actual = act.memo[_SPARQL]
    if isinstance(actual, str):
        return Mismatch(not_sparql(act.output))
    diff = diff_sparql(
        ref.memo[_SPARQL],
        actual,
        ref.required_columns,
        ordered=ref.ordered,
        ignore_duplicates=ref.ignore_duplicates,
    )
    return Mismatch(diff.reason, diff.closeness)


def _score_sparql_safely(ref: ReferenceStep, act: ActualStep) -> None:
    with contextlib.suppress(ValueError):
        _score_sparql(ref, act)


_SPARQL_RULE = StepRule(
    name="sparql_results",
    reference_steps={"sparql_query"},
    requires={"output_media_type": SPARQL_JSON_MEDIA_TYPE},
    options={"ordered", "required_columns", "ignore_duplicates"},
    score=_score_sparql,
    check_reference=_check_sparql,
    explain=_explain_sparql,
)

# --------------------------------------------------------------------------------------------
# 2. Retrieval


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


def _explain_retrieval(ref: ReferenceStep, act: ActualStep) -> Mismatch:
    relevant = [context_key(c) for c in parse_contexts(ref.output)]
    retrieved = [context_key(c) for c in parse_contexts(act.output)]
    return explain_recall(relevant, retrieved, _retrieval_k(act, len(retrieved)))


def _check_retrieval(ref: ReferenceStep) -> str | None:
    try:
        parse_contexts(ref.output)
    except ValueError as exc:
        return f"output is {exc}"
    return None


_RETRIEVAL_RULE = StepRule(
    name="retrieval_recall_at_k",
    reference_steps={"retrieval"},
    requires={"output": GIVEN},
    score=_score_retrieval,
    check_reference=_check_retrieval,
    explain=_explain_retrieval,
)

# --------------------------------------------------------------------------------------------
# 3. and 4. Time series

_TIME_SERIES_RULE = StepRule(
    name="retrieve_time_series",
    reference_steps={"retrieve_time_series"},
    score=lambda ref, act: float(time_series_match(ref.args, act.args)),
    explain=lambda ref, act: explain_time_series(ref.args, act.args),
)

_DATA_POINTS_RULE = StepRule(
    name="retrieve_data_points",
    reference_steps={"retrieve_data_points"},
    score=lambda ref, act: float(data_points_match(ref.args, act.args, act.execution_timestamp)),
    check_reference=lambda ref: check_data_points_reference(ref.args),
    explain=lambda ref, act: explain_data_points(ref.args, act.args, act.execution_timestamp),
)

# --------------------------------------------------------------------------------------------
# 5. IRI discovery

_ANGLE_BRACKETS = re.compile(r"^\s*<(.*)>\s*$")
# Characters that can continue an IRI: the reference IRI must not be part of a longer one.
_IRI_CHARACTER = r"[\w\-.~:/?#\[\]@!$&'()*+,;=%]"


def _reference_iri(ref: ReferenceStep) -> str:
    text = str(ref.output).strip()
    match = _ANGLE_BRACKETS.match(text)
    return match.group(1) if match else text


def _uri_bindings(output: Any) -> list[Any]:
    """The bindings of a SPARQL results JSON output; ``ValueError`` when it is none."""
    document = output
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except json.JSONDecodeError:
            raise ValueError("output is not SPARQL results JSON") from None
    if not isinstance(document, Mapping):
        raise ValueError("output is not SPARQL results JSON")
    results = document.get("results")
    bindings = results.get("bindings") if isinstance(results, Mapping) else None
    return bindings if isinstance(bindings, list) else []


def _score_iri_discovery(ref: ReferenceStep, act: ActualStep) -> float:
    iri = _reference_iri(ref)
    if act.name == "sparql_query":
        text = act.output if isinstance(act.output, str) else json.dumps(act.output)
        whole = rf"(?<!{_IRI_CHARACTER}){re.escape(iri)}(?!{_IRI_CHARACTER})"
        return float(re.search(whole, text) is not None)
    for binding in _uri_bindings(act.output):
        if not isinstance(binding, Mapping):
            continue
        for term in binding.values():
            if isinstance(term, Mapping) and term.get("type") == "uri" and term.get("value") == iri:
                return 1.0
    return 0.0


def _explain_iri_discovery(ref: ReferenceStep, act: ActualStep) -> str:
    where = "the output" if act.name == "sparql_query" else "the output's URI bindings"
    return f"IRI <{_reference_iri(ref)}> not found in {where}"


def _check_iri_discovery(ref: ReferenceStep) -> str | None:
    if not isinstance(ref.output, str) or not _reference_iri(ref):
        return "output of an iri_discovery step must be one IRI"
    return None


_IRI_DISCOVERY_RULE = StepRule(
    name="iri_discovery",
    reference_steps={"iri_discovery"},
    actual_steps={"autocomplete_search", "sparql_query"},
    score=_score_iri_discovery,
    check_reference=_check_iri_discovery,
    explain=_explain_iri_discovery,
)

# --------------------------------------------------------------------------------------------
# 6. JSON and 7. identical output

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
    if ref.name == "iri_discovery":  # its output is an IRI, whatever the media type says
        return None
    if _as_json(ref.output) is _NO_JSON:
        return "output is not valid JSON"
    return None


def _score_json(ref: ReferenceStep, act: ActualStep) -> float:
    actual = _as_json(act.output)
    if actual is _NO_JSON:
        raise ValueError("output is not valid JSON")
    return float(json_equal(_as_json(ref.output), actual))


_JSON_RULE = StepRule(
    name="json_output",
    requires={"output_media_type": JSON_MEDIA_TYPE},
    score=_score_json,
    check_reference=_check_json,
    explain=lambda ref, act: explain_json(_as_json(act.output), _as_json(ref.output)),
)

_IDENTICAL_RULE = StepRule(
    name="identical_output",
    score=lambda ref, act: float(ref.output == act.output),
    explain=lambda ref, act: explain_text(act.output, ref.output),
)

BUILTIN_RULES: tuple[StepRule, ...] = (
    _SPARQL_RULE,
    _RETRIEVAL_RULE,
    _TIME_SERIES_RULE,
    _DATA_POINTS_RULE,
    _IRI_DISCOVERY_RULE,
    _JSON_RULE,
    _IDENTICAL_RULE,
)
"""The built-in rules in registration order (the order of docs/steps.md)."""
