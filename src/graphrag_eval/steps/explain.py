"""Why a reference step did not fully match an actual step: one line per rule kind
(docs/steps.md, "Why a step did not match").

A rule's ``explain`` returns a :class:`Mismatch`: the reason (actual values first, then the
reference's: ``'Bergen' vs 'Oslo'``) and how close the actual step came, which chooses the
nearest actual step. Explanations are computed only for reference steps below a full match,
and each reads at most a bounded part of the outputs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from graphrag_eval.steps.timeseries import (
    normalise_granularity,
    normalise_list,
    parse_time,
    times_match,
)

__all__ = [
    "Mismatch",
    "explain_data_points",
    "explain_json",
    "explain_recall",
    "explain_text",
    "explain_time_series",
    "json_difference",
    "shown",
]

_SHOWN_CHARACTERS: Final = 80
_JSON_DEPTH: Final = 64  # how deep the JSON difference is looked for


@dataclass(frozen=True, slots=True)
class Mismatch:
    """Why a pair did not fully match, and how close it came in [0, 1]."""

    reason: str
    closeness: float = 0.0


def shown(value: Any) -> str:
    """A value as reasons show it: strings quoted, other values as JSON, clipped."""
    if isinstance(value, str):
        text = repr(value)
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = repr(value)
    return text if len(text) <= _SHOWN_CHARACTERS else text[: _SHOWN_CHARACTERS - 3] + "..."


# -- retrieval ------------------------------------------------------------------------------


def explain_recall(relevant: Sequence[str], retrieved: Sequence[str], k: int) -> Mismatch:
    """``recall@2 = 1/2: reference context doc/5 not retrieved in the first 2``."""
    relevant_items = list(dict.fromkeys(relevant))
    considered = relevant_items[:k]
    top_k = set(list(retrieved)[:k])
    missed = [item for item in considered if item not in top_k]
    hits = len(considered) - len(missed)
    denominator = min(k, len(relevant_items))
    if not relevant_items:
        return Mismatch("the reference lists no contexts")
    head = f"recall@{k} = {hits}/{denominator}"
    if not missed:
        return Mismatch(head, hits / denominator)
    more = f" (and {len(missed) - 1} more)" if len(missed) > 1 else ""
    where = f"the first {k}" if k <= len(retrieved) else f"the {len(retrieved)} retrieved"
    return Mismatch(
        f"{head}: reference context {_context(missed[0])} not retrieved in {where}{more}",
        hits / denominator if denominator else 0.0,
    )


def _context(key: str) -> str:
    if key.startswith("text:"):
        return f"text {shown(key.removeprefix('text:'))}"
    return key


# -- time series ----------------------------------------------------------------------------


def _args(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list_difference(key: str, reference: Mapping[str, Any], actual: Mapping[str, Any]) -> str:
    ref, act = normalise_list(reference.get(key)), normalise_list(actual.get(key))
    if ref == act:
        return ""
    return f"{key} differs: {_listed(act)} vs {_listed(ref)}"


def _listed(value: tuple[Any, ...] | None) -> str:
    if value is None:
        return "none"
    return ", ".join(str(item) for item in value) or "[]"


def explain_time_series(reference_args: Any, actual_args: Any) -> Mismatch:
    """The first difference between two ``retrieve_time_series`` calls."""
    ref, act = _args(reference_args), _args(actual_args)
    reason = _list_difference("mrid", ref, act)
    limit_counts = "limit" in ref or ref.get("mrid") is None
    if not reason and limit_counts and ref.get("limit") != act.get("limit"):
        reason = f"limit {shown(act.get('limit'))} vs {shown(ref.get('limit'))}"
    return Mismatch(reason or "arguments differ")


def explain_data_points(reference_args: Any, actual_args: Any, executed: Any) -> Mismatch:
    """The first difference between two ``retrieve_data_points`` calls (the execution time
    resolves a relative reference time)."""
    ref, act = _args(reference_args), _args(actual_args)
    for key in ("external_id", "aggregates"):
        reason = _list_difference(key, ref, act)
        if reason:
            return Mismatch(reason)
    if ref.get("limit") != act.get("limit"):
        return Mismatch(f"limit {shown(act.get('limit'))} vs {shown(ref.get('limit'))}")
    try:
        granularities = [normalise_granularity(x.get("granularity")) for x in (act, ref)]
    except ValueError as exc:
        return Mismatch(f"granularity: {exc}")
    if granularities[0] != granularities[1]:
        act_g, ref_g = (_granularity(g) for g in granularities)
        return Mismatch(f"granularity {act_g} vs {ref_g}")
    for key in ("start", "end"):
        if not times_match(ref.get(key), act.get(key), executed):
            return Mismatch(
                f"{key} {_time(act.get(key))} vs {_reference_time(ref.get(key), executed)}"
            )
    return Mismatch("arguments differ")


def _granularity(value: tuple[int, str] | None) -> str:
    return "none" if value is None else f"{value[0]}{value[1]}"


def _time(value: Any) -> str:
    return "none" if value is None else str(value)


def _reference_time(value: Any, executed: Any) -> str:
    """A relative reference time with what it resolved to against the execution time."""
    try:
        moment, when = parse_time(value), parse_time(executed)
    except ValueError:
        return _time(value)
    if moment is None or isinstance(moment, datetime) or not isinstance(when, datetime):
        return _time(value)
    try:
        resolved = when + timedelta(seconds=getattr(moment, "offset_s", 0.0))
    except OverflowError:
        return _time(value)
    return f"{value} resolved to {resolved.isoformat().replace('+00:00', 'Z')}"


# -- JSON and text --------------------------------------------------------------------------


def json_difference(actual: Any, reference: Any, path: str = "$", depth: int = 0) -> str:
    """Where two decoded JSON values first differ: ``differs at $.results[2].value: 3 vs 4``
    (equality as the JSON rule has it: ``true`` is not ``1``, ``1`` is ``1.0``)."""
    if depth > _JSON_DEPTH:
        return f"differs below {path}"
    if isinstance(actual, dict) and isinstance(reference, dict):
        for key in reference:
            if key not in actual:
                return f"differs at {path}: key {shown(key)} missing"
        for key in actual:
            if key not in reference:
                return f"differs at {path}: extra key {shown(key)}"
        for key in reference:
            found = json_difference(actual[key], reference[key], _member(path, key), depth + 1)
            if found:
                return found
        return ""
    if isinstance(actual, list) and isinstance(reference, list):
        for index, (a, b) in enumerate(zip(actual, reference, strict=False)):
            found = json_difference(a, b, f"{path}[{index}]", depth + 1)
            if found:
                return found
        if len(actual) != len(reference):
            return f"differs at {path}: {len(actual)} items vs {len(reference)}"
        return ""
    if _json_scalar_equal(actual, reference):
        return ""
    return f"differs at {path}: {shown(actual)} vs {shown(reference)}"


def _member(path: str, key: str) -> str:
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]"


def _json_scalar_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return type(a) is type(b) and a == b


def explain_json(actual: Any, reference: Any) -> Mismatch:
    return Mismatch(json_difference(actual, reference) or "outputs differ")


def explain_text(actual: Any, reference: Any) -> Mismatch:
    """``outputs differ from character 120`` (non-text outputs as JSON)."""
    act, ref = _as_text(actual), _as_text(reference)
    if act == ref:
        return Mismatch("outputs differ in type")
    common = next(
        (i for i, (a, b) in enumerate(zip(act, ref, strict=False)) if a != b),
        min(len(act), len(ref)),
    )
    if common == min(len(act), len(ref)):
        reason = f"actual output has {len(act):,} characters, the reference {len(ref):,}"
    else:
        here, there = act[common : common + 20], ref[common : common + 20]
        reason = f"outputs differ from character {common + 1:,}: {shown(here)} vs {shown(there)}"
    return Mismatch(reason, common / max(len(act), len(ref), 1))


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)
