"""Flagging answers that address the grader (prompt injection), for the HTML report.

A small heuristic, not a guard: answers are still passed to the judge as they are
(docs/security.md, "Prompt injection"). It looks for phrases that only make sense as
instructions to whoever grades the answer: "ignore the previous instructions", "you are the
judge", "give this a score of", "system prompt", "score: 1.0". The report marks such a
question in its drill-down and counts them in the overview (docs/report.md); scores and
results are unchanged.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["addresses_the_grader", "grader_instructions", "injection_notes"]

_GRADER = r"(?:grader|judge|evaluator|assessor|scorer|reviewer|marker)"
_PATTERNS = (
    # "ignore all previous instructions", "disregard the above rules", "forget your prompt"
    r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+|my\s+)?"
    r"(?:previous|prior|above|earlier|preceding|foregoing|original|system|grading)?\s*"
    r"(?:instructions?|prompts?|rules|directions|guidelines|criteria|rubric)\b",
    # "you are the grader", "you are now an evaluator", "as the judge, ..."
    rf"\byou\s+are\s+(?:now\s+)?(?:the|a|an)\s+(?:\w+\s+)?{_GRADER}\b",
    rf"\b(?:note|message|instructions?)\s+(?:to|for)\s+(?:the\s+)?{_GRADER}\b",
    # "give this a score of 1", "assign me a grade of", "rate this answer 10/10"
    r"\b(?:give|assign|award)\s+(?:this|me|it|the\s+answer|this\s+answer)\s+"
    r"(?:a|an|the)?\s*(?:full\s+|perfect\s+|maximum\s+|high(?:est)?\s+)?"
    r"(?:score|grade|rating|marks?|points)\b",
    r"\b(?:mark|grade|rate|score|classify)\s+(?:this|it|the|my)\s*(?:answer|response)?\s+"
    r"(?:as\s+)?(?:correct|perfect|fully\s+correct|a\s+pass|10/10|5/5|1\.0)\b",
    r"\bsystem\s+prompt\b",
    # "score: 1.0", "Rating = 10", "grade: perfect": a verdict written for the judge
    r"\b(?:score|rating|grade|verdict)\s*[:=]\s*(?:1(?:\.0+)?|10(?:/10)?|5/5|100|"
    r"perfect|correct|pass)(?![\w.])",
)
_INSTRUCTION = re.compile("|".join(f"(?:{pattern})" for pattern in _PATTERNS), re.IGNORECASE)
# Every phrase a pattern matches starts with one of these words (or "instructions"), in some
# case, as a whole word (keep them in step with the patterns: tests/report/test_injection.py
# checks that they agree).
_KEYWORD_WORDS = [
    "ignore",
    "disregard",
    "forget",
    "override",
    "you",
    "note",
    "message",
    "instruction",
    "give",
    "assign",
    "award",
    "mark",
    "grade",
    "rate",
    "rating",
    "score",
    "classify",
    "system",
    "verdict",
]
# An ASCII text's characters as the quick check reads them (:func:`_words`): a letter lowered,
# a digit or "_" as "x" (a word character that is in none of the words), any other character
# a space.
_WORD_BYTES = bytes(
    code | 0x20  # A-Z to a-z
    if chr(code) in string.ascii_letters
    else ord("x")
    if chr(code) in string.digits + "_"
    else ord(" ")
    for code in range(256)
)
# The words a match starts with, as whole words: every pattern starts at a word boundary
# with one of them, and what follows it (a space, ":", "=", or the "s" of "instructions")
# ends the word.
_WHOLE_WORDS = frozenset(word.encode("ascii") for word in [*_KEYWORD_WORDS, "instructions"])
_SCANNED_CHARS = 200_000  # of one text: enough for any answer, cheap on a 10 MB one
_QUOTE_CHARS = 80  # of the matched phrase shown in the report


def grader_instructions(text: str) -> str | None:
    """The first phrase of ``text`` that reads as an instruction to the grader (quoted, at
    most 80 characters), or None."""
    if not _instructs(text):
        return None
    match = _INSTRUCTION.search(text, 0, _SCANNED_CHARS)  # no copy of a long text
    if match is None:
        return None
    phrase = " ".join(match.group().split())
    return phrase if len(phrase) <= _QUOTE_CHARS else phrase[: _QUOTE_CHARS - 3] + "..."


def _texts(fields: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """What the system under test wrote that a judge reads: the answer, then each step's
    output (retrieved contexts among them), with what to call it."""
    answer = fields.get("actual_answer")
    if isinstance(answer, str):
        yield "answer", answer
    steps = fields.get("actual_steps")
    for number, step in enumerate(steps if isinstance(steps, list) else (), start=1):
        if isinstance(step, Mapping) and isinstance(step.get("output"), str):
            yield f"output of actual step {step.get('id', number)}", step["output"]


def addresses_the_grader(fields: Mapping[str, Any]) -> bool:
    """Whether some text of the question contains instructions to the grader (what
    :func:`injection_notes` would note, checked without building the notes: the report asks
    it of every question)."""
    answer = fields.get("actual_answer")
    if isinstance(answer, str) and _instructs(answer):
        return True
    steps = fields.get("actual_steps")
    if isinstance(steps, list):
        for step in steps:
            output = step.get("output") if isinstance(step, Mapping) else None
            if isinstance(output, str) and _instructs(output):
                return True
    return False


def _instructs(text: str) -> bool:
    """Whether the patterns find a phrase in ``text`` (:func:`grader_instructions`), without
    its quote. An ASCII text none of whose words, lowered, is one the patterns start with is
    not searched: an ASCII character matches a pattern's letter, case ignored, exactly when
    its lower case is that letter, and a pattern's first word is a whole word. The report
    asks this of every text, and cutting a text into words is several times cheaper than the
    patterns' search (docs/benchmarks.md, "Speed, second pass")."""
    if text.isascii():  # (constant time) else a match may rest on a Unicode case fold
        scanned = text if len(text) <= _SCANNED_CHARS else text[:_SCANNED_CHARS]
        # _words(scanned), in line: this runs for every text of every question.
        if _WHOLE_WORDS.isdisjoint(scanned.encode("ascii").translate(_WORD_BYTES).split()):
            return False
    return _INSTRUCTION.search(text, 0, _SCANNED_CHARS) is not None


def _words(text: str) -> list[bytes]:
    """The words of an ASCII ``text`` (its runs of letters, digits and "_", as ``\\w`` and
    ``\\b`` read them), lowered, their digits and "_" written "x": cut by one table look-up
    per character (``bytes.translate``) and one ``split``, several times cheaper than a
    regular expression tried at each position (docs/benchmarks.md, "Speed, second pass")."""
    return text.encode("ascii").translate(_WORD_BYTES).split()


def injection_notes(fields: Mapping[str, Any]) -> list[str]:
    """One note per text of a question that contains instructions to the grader:
    ``answer contains instructions to the grader: '...'``; ``fields``: the question's saved
    record, or its typed result's fields."""
    notes = []
    for where, text in _texts(fields):
        phrase = grader_instructions(text)
        if phrase is not None:
            notes.append(f"{where} contains instructions to the grader: '{phrase}'")
    return notes
