"""Matching of time-series tool calls: ``retrieve_time_series`` and ``retrieve_data_points``
(docs/steps.md, "Match rules" 3 and 4).

* Lists: a string becomes a one-item list and lists are sorted, so ``"a"`` equals ``["a"]``
  and ``["b", "a"]`` equals ``["a", "b"]``.
* Granularity: ``15m`` = ``15min`` = ``15minutes``; units s, m, h, d, w, mo, q, y and their
  long forms, case-insensitive; a missing count means 1. Only the unit is normalised:
  ``60m`` and ``1h`` are different granularities.
* Times: ``now``, ``<N><unit>-ago`` and ``<N><unit>-ahead`` (units s, m, h, d, w) are
  relative; ISO 8601 strings and epoch numbers are absolute (naive times are UTC; numbers of
  at least 10^11 are milliseconds, smaller ones seconds). A relative reference time is
  resolved against the actual step's ``execution_timestamp`` and accepts an absolute actual
  time within 60 s of it; two relative times must denote the same offset; two absolute times
  must be the same instant; a relative actual time never equals an absolute reference.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

__all__ = [
    "TOLERANCE_S",
    "data_points_match",
    "normalise_granularity",
    "normalise_list",
    "parse_time",
    "time_series_match",
    "times_match",
]

TOLERANCE_S: Final = 60.0
"""How far an absolute actual time may be from a resolved relative reference time."""

_UNITS: Final[dict[str, str]] = {}
for _canonical, _forms in {
    "s": ("s", "sec", "secs", "second", "seconds"),
    "m": ("m", "min", "mins", "minute", "minutes"),
    "h": ("h", "hr", "hrs", "hour", "hours"),
    "d": ("d", "day", "days"),
    "w": ("w", "week", "weeks"),
    "mo": ("mo", "month", "months"),
    "q": ("q", "quarter", "quarters"),
    "y": ("y", "yr", "yrs", "year", "years"),
}.items():
    for _form in _forms:
        _UNITS[_form] = _canonical

_SECONDS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}

_GRANULARITY = re.compile(r"^\s*(\d+)?\s*([a-z]+)\s*$")
_RELATIVE = re.compile(r"^\s*(\d+)\s*([a-z]+)\s*-\s*(ago|ahead)\s*$")


def _args(step_args: Any) -> Mapping[str, Any]:
    return step_args if isinstance(step_args, Mapping) else {}


def normalise_list(value: Any) -> tuple[Any, ...] | None:
    """``None`` stays ``None``; a scalar becomes a one-item tuple; a list is sorted."""
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return tuple(sorted(value, key=lambda item: (type(item).__name__, str(item))))
    return (value,)


def normalise_granularity(value: Any) -> tuple[int, str] | None:
    """``(count, unit)`` for a granularity such as ``15min``; raises ``ValueError`` when
    unreadable; ``None`` stays ``None``."""
    if value is None:
        return None
    match = _GRANULARITY.match(str(value).casefold())
    if match is None or match.group(2) not in _UNITS:
        raise ValueError(f"unreadable granularity {value!r}")
    return int(match.group(1) or 1), _UNITS[match.group(2)]


@dataclass(frozen=True, slots=True)
class _Relative:
    offset_s: float


Time = datetime | _Relative


def parse_time(value: Any) -> Time | None:
    """A relative offset or an absolute UTC time; raises ``ValueError`` when unreadable."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"unreadable time {value!r}")
    if isinstance(value, int | float):
        seconds = value / 1000 if abs(value) >= 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            raise ValueError(f"time out of range {value!r}") from None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str):
        raise ValueError(f"unreadable time {value!r}")
    text = value.strip().casefold()
    if text == "now":
        return _Relative(0.0)
    match = _RELATIVE.match(text)
    if match is not None:
        unit = _UNITS.get(match.group(2))
        if unit not in _SECONDS:
            raise ValueError(f"unreadable relative time {value!r}")
        offset = int(match.group(1)) * _SECONDS[unit]
        return _Relative(float(-offset if match.group(3) == "ago" else offset))
    if text.lstrip("-").isdigit():
        return parse_time(int(text))
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"unreadable time {value!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def times_match(reference: Any, actual: Any, execution_timestamp: Any) -> bool:
    """Whether an actual start/end time equals the reference one (see module docs)."""
    ref = parse_time(reference)
    try:
        act = parse_time(actual)
    except ValueError:
        return False
    if ref is None or act is None:
        return ref is None and act is None
    if isinstance(ref, _Relative):
        if isinstance(act, _Relative):
            return ref.offset_s == act.offset_s
        try:
            executed = parse_time(execution_timestamp)
        except ValueError:
            return False
        if not isinstance(executed, datetime):
            return False
        try:
            expected = executed + timedelta(seconds=ref.offset_s)
        except OverflowError:
            return False
        return abs((act - expected).total_seconds()) <= TOLERANCE_S
    if isinstance(act, _Relative):
        return False
    return ref == act


def time_series_match(reference_args: Any, actual_args: Any) -> bool:
    """Rule 3: equal mrids (normalised lists) and, when the reference gives one, equal limit;
    a reference without mrid needs an actual without mrid and equal limits."""
    ref, act = _args(reference_args), _args(actual_args)
    ref_mrid = normalise_list(ref.get("mrid"))
    if ref_mrid is None:
        return normalise_list(act.get("mrid")) is None and ref.get("limit") == act.get("limit")
    if normalise_list(act.get("mrid")) != ref_mrid:
        return False
    return "limit" not in ref or ref.get("limit") == act.get("limit")


def data_points_match(reference_args: Any, actual_args: Any, execution_timestamp: Any) -> bool:
    """Rule 4: equal external_id and aggregates (normalised lists), granularity (normalised
    unit), limit, and start/end times (see module docs)."""
    ref, act = _args(reference_args), _args(actual_args)
    for key in ("external_id", "aggregates"):
        if normalise_list(ref.get(key)) != normalise_list(act.get(key)):
            return False
    if ref.get("limit") != act.get("limit"):
        return False
    try:
        if normalise_granularity(ref.get("granularity")) != normalise_granularity(
            act.get("granularity")
        ):
            return False
    except ValueError:
        return False
    return all(
        times_match(ref.get(key), act.get(key), execution_timestamp) for key in ("start", "end")
    )


def check_data_points_reference(reference_args: Any) -> str | None:
    """A problem in a reference ``retrieve_data_points`` step's args, or ``None``."""
    ref = _args(reference_args)
    try:
        normalise_granularity(ref.get("granularity"))
    except ValueError as exc:
        return f"args.granularity: {exc}"
    for key in ("start", "end"):
        try:
            moment = parse_time(ref.get(key))
            if isinstance(moment, _Relative):
                timedelta(seconds=moment.offset_s)
        except (ValueError, OverflowError) as exc:
            return f"args.{key}: {exc}"
    return None
