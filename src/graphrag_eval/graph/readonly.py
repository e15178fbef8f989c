"""Read-only, always: a SPARQL Update in a reference or a response is never sent to a store
(docs/knowledge-graph.md, "Read-only"). The check is lexical, so it holds for every store,
also for queries in a vendor's dialect that a strict parser refuses: outside strings, IRIs and
comments, a query may not contain a word that only SPARQL Update has.

SPARQL lets a query write any character as ``\\uXXXX`` or ``\\UXXXXXXXX``, decoded before the
query is parsed (SPARQL 1.1 Query, "Codepoint Escape Sequences"; Jena does so, Oxigraph only
within strings and IRIs): the words are looked for both in the text as written and in the
text with these escapes decoded, so ``\\u0049NSERT`` is the ``INSERT`` it is to such a parser.
A comment ends at a line feed or a carriage return, as the grammar says."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Final

__all__ = ["UPDATE_WORDS", "service_refusal", "service_targets", "update_refusal"]

UPDATE_WORDS: Final = frozenset(
    {"INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "WITH"}
)
"""The keywords of SPARQL 1.1 Update that its query language does not have."""

_SKIPPED = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'  # long strings
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n\r]|\\.)*"'  # strings
    r"|'(?:[^'\\\n\r]|\\.)*'"
    r'|<[^<>"{}|^`\\\x00-\x20]*>'  # IRIs
    r"|#[^\n\r]*",  # comments, to the end of the line (a line feed or a carriage return)
    re.DOTALL,
)
_BARE_WORD = re.compile(r"(?<![\w?$:@.\-])([A-Za-z]+)(?![\w:\-])")
_CODEPOINT = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")


def _decoded(query: str) -> str:
    """``query`` with its ``\\u``/``\\U`` escapes decoded (an escape of no character, past
    U+10FFFF, is left as written)."""

    def char(match: re.Match[str]) -> str:
        code = int(match.group(1) or match.group(2), 16)
        return chr(code) if code <= 0x10FFFF else match.group(0)

    return _CODEPOINT.sub(char, query)


def _bare_words(query: str) -> list[str]:
    """The words of ``query`` outside its strings, IRIs and comments, upper-cased, in their
    order: as written, then with its codepoint escapes decoded."""
    texts = [query]
    if "\\u" in query or "\\U" in query:
        texts.append(_decoded(query))
    words: list[str] = []
    for text in texts:
        stripped = _SKIPPED.sub(" ", text)
        words.extend(match.group(1).upper() for match in _BARE_WORD.finditer(stripped))
    return words


def update_refusal(query: str) -> str | None:
    """Why ``query`` is refused (it holds an update keyword), or ``None`` when it only
    reads."""
    for word in _bare_words(query):
        if word in UPDATE_WORDS:
            return f"a SPARQL Update ({word}) is never executed: stores are read-only here"
    return None


_STRINGS_AND_COMMENTS = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n\r]|\\.)*"'
    r"|'(?:[^'\\\n\r]|\\.)*'"
    r'|(<[^<>"{}|^`\\\x00-\x20]*>)'  # IRIs, kept (one may hold a #)
    r"|#[^\n\r]*",
    re.DOTALL,
)
_SERVICE = re.compile(
    r"(?<![\w?$:@.\-])SERVICE\s+(?:SILENT\s+)?(<[^<>\s]*>|[?$]\w+|[\w.\-]*:[^\s{]*)",
    re.IGNORECASE,
)
_PREFIX = re.compile(r"(?<![\w?$:@.\-])PREFIX\s+([\w.\-]*):\s*<([^<>\s]*)>", re.IGNORECASE)


def service_targets(query: str) -> list[str]:
    """The endpoints the ``SERVICE`` clauses of ``query`` name: IRIs (prefixed names
    expanded by the query's ``PREFIX`` declarations), or a variable as written (``?s``); in
    the text as written and with its codepoint escapes decoded. ``?`` stands for a clause
    whose endpoint cannot be read."""
    texts = [query]
    if "\\u" in query or "\\U" in query:
        texts.append(_decoded(query))
    targets: list[str] = []
    for text in texts:
        kept = _STRINGS_AND_COMMENTS.sub(lambda match: match.group(1) or " ", text)
        prefixes = dict(_PREFIX.findall(kept))
        for target in _SERVICE.findall(kept):
            if target.startswith("<"):
                targets.append(target[1:-1])
            elif target[0] in "?$":
                targets.append(target)
            else:
                name, _, local = target.partition(":")
                targets.append(prefixes[name] + local if name in prefixes else target)
    if not targets and "SERVICE" in _bare_words(query):
        targets.append("?")
    return list(dict.fromkeys(targets))


def service_refusal(query: str, allowed: Collection[str] = ()) -> str | None:
    """Why ``query`` is refused (a federated query: its ``SERVICE`` clause would make the
    store call another endpoint, one not in ``allowed``), or ``None``. The embedded store
    allows none (it would make the call from this machine); an endpoint, those of
    ``sparql.allowed_services``."""
    for target in service_targets(query):
        if target not in allowed:
            return (
                f"a federated query (SERVICE {target}) is never executed: the store would "
                "call another endpoint over the network (an endpoint may call those listed "
                "in sparql.allowed_services)"
            )
    return None
