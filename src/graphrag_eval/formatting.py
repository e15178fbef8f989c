"""How numbers, dollars, differences and counts are written for people.

One place for the small formatters that the terminal summary, the HTML pages, the comparison
and the CI gates share, so that a number reads the same wherever it is shown (docs/report.md).
"""

from __future__ import annotations

import enum
import math
import re
from decimal import Decimal
from typing import Any

__all__ = [
    "Unit",
    "format_dollars",
    "format_interval",
    "format_number",
    "format_signed",
    "format_tokens",
    "format_value",
    "plain_number",
    "plural",
    "visible_text",
]


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """A count and its noun: ``1 question``, ``2 questions``, ``1,000 questions``."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"


def format_number(value: Any) -> str:
    """A compact, readable number: thousands separators for large values, 3 decimals for
    scores."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.2f}"
    return f"{value:.3f}"


def plain_number(value: float, digits: int | None = None) -> str:
    """``value`` with ``digits`` significant digits (``None``: as many as tell it apart from
    every other float), never with an exponent, with thousands separators: ``0.8``,
    ``203,432`` (not ``2.034e+05``), ``0.0000573`` (not ``5.73e-05``). For messages that
    quote a threshold or a mean; a threshold on the command line stays as typed."""
    if not math.isfinite(value):
        return str(value)
    if digits is not None:  # enough digits to show the whole part of a large value
        digits = max(digits, len(str(int(abs(value)))))
    text = repr(float(value)) if digits is None else f"{value:.{digits}g}"
    whole, _, fraction = format(Decimal(text), "f").partition(".")
    sign = "-" if whole.startswith("-") else ""
    fraction = fraction.rstrip("0")
    return f"{sign}{int(whole.lstrip('-')):,}" + (f".{fraction}" if fraction else "")


def format_dollars(value: float) -> str:
    """Dollars with enough digits to show small judge costs: 3 significant digits below a
    cent (``$0.00005``, ``$0.000864``), never an exponent."""
    if value == 0 or not math.isfinite(value):
        return "$0" if value == 0 else f"${value}"
    if abs(value) < 0.01:
        decimals = 2 - math.floor(math.log10(abs(value)))
        return f"${value:.{decimals}f}".rstrip("0").rstrip(".")
    return f"${value:,.4f}"


class Unit(enum.Enum):
    """What a value is in, declared by the output key that holds it
    (:class:`~graphrag_eval.metrics.base.OutputKey`), and how it is written."""

    SCORE = "score"
    """A score, on its metric's scale (``maximum``)."""
    COUNT = "count"
    """A number of things (claims, steps)."""
    DOLLARS = "dollars"
    """A cost: dollars with significant digits (never ``0.000`` for $0.00005)."""
    TOKENS = "tokens"
    """A token count: a whole number."""
    SECONDS = "seconds"
    """A duration."""
    LABEL = "label"
    """A class or grade (``CORRECT``, ``A``)."""
    TEXT = "text"
    """A text: the judge's reasons."""


def format_tokens(value: float) -> str:
    """A token count, or a mean of token counts, as a whole number with thousands separators
    (``1,002``, never ``260.00``): how every token count is written."""
    if not math.isfinite(value):
        return str(value)
    return f"{round(value):,}"


def format_value(value: Any, unit: Unit = Unit.SCORE) -> str:
    """A value in its unit: dollars with significant digits for a cost, a whole number for a
    token count (:func:`format_tokens`), else :func:`format_number`; ``-`` for none."""
    if value is None:
        return "-"
    if isinstance(value, int | float) and not isinstance(value, bool):
        if unit is Unit.DOLLARS:
            return format_dollars(value)
        if unit is Unit.TOKENS:
            return format_tokens(value)
    return format_number(value)


def format_signed(value: float, digits: int = 3) -> str:
    """A difference with its sign and ``digits`` significant digits (no exponent below a
    billion)."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 10 ** (digits - 1):
        return f"{value:+,.0f}"
    decimals = max(0, digits - 1 - math.floor(math.log10(magnitude)))
    return f"{value:+.{decimals}f}"


def format_interval(low: float | None, high: float | None, digits: int = 3) -> str:
    """``[low, high]`` with signs, or ``-`` when there is no interval."""
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return "-"
    return f"[{format_signed(low, digits)}, {format_signed(high, digits)}]"


# C0 controls but tab and newline, DEL, C1 controls, the bidirectional marks, embeddings,
# overrides and isolates, and lone surrogates: none can be shown safely as they are. And the
# invisible characters that only hide or split a word: the soft hyphen, the zero-width space,
# the word joiner and invisible operators, the Mongolian vowel separator and the zero-width
# no-break space (BOM). The zero-width joiner and non-joiner (U+200C, U+200D) are kept: Persian
# and Indic text and emoji sequences need them.
_UNSAFE_CHARACTER = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u061c\u180e\u200b\u200e\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u2069\ufeff\ud800-\udfff]"
)


def _escape_character(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible_text(text: str) -> str:
    """``text`` with every character that would hide or reorder what is shown (NUL and the
    other control characters but tab and newline, bidirectional controls, zero-width spaces,
    lone surrogates) written as its escape (``\\x00``, ``\\u202e``); a Windows line end reads
    as a newline (docs/security.md, "Control and bidirectional characters")."""
    if _UNSAFE_CHARACTER.search(text) is None:
        return text
    return _UNSAFE_CHARACTER.sub(_escape_character, text.replace("\r\n", "\n"))
