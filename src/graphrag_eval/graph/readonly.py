"""Read-only, always: a SPARQL Update in a reference or a response is never sent to a store
(docs/knowledge-graph.md, "Read-only"). The check is lexical, so it holds for every store,
also for queries in a vendor's dialect that a strict parser refuses: outside strings, IRIs and
comments, a query may not contain a word that only SPARQL Update has."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["UPDATE_WORDS", "update_refusal"]

UPDATE_WORDS: Final = frozenset(
    {"INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "WITH"}
)
"""The keywords of SPARQL 1.1 Update that its query language does not have."""

_SKIPPED = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'  # long strings
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n]|\\.)*"'  # strings
    r"|'(?:[^'\\\n]|\\.)*'"
    r'|<[^<>"{}|^`\\\x00-\x20]*>'  # IRIs
    r"|#[^\n]*",  # comments
    re.DOTALL,
)
_BARE_WORD = re.compile(r"(?<![\w?$:@.\-])([A-Za-z]+)(?![\w:\-])")


def update_refusal(query: str) -> str | None:
    """Why ``query`` is refused (it holds an update keyword), or ``None`` when it only
    reads."""
    text = _SKIPPED.sub(" ", query)
    for match in _BARE_WORD.finditer(text):
        word = match.group(1).upper()
        if word in UPDATE_WORDS:
            return f"a SPARQL Update ({word}) is never executed: stores are read-only here"
    return None
