"""The ``sh`` examples of a section of a docs page, for the tests that run them as written:
a section is a ``## `` heading outside a fenced block and what follows it up to the next."""

from __future__ import annotations

from pathlib import Path

__all__ = ["section_blocks", "section_text"]


def section_text(page: Path, *titles: str) -> str:
    """The text of the ``## `` sections of ``page`` named ``titles`` (fence-aware: a ``## ``
    line inside a fenced block, e.g. a Markdown summary shown as output, is not a heading)."""
    kept: list[str] = []
    keep, fenced = False, False
    for line in page.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("## "):
            keep = line[3:].strip() in titles
        if keep:
            kept.append(line)
    return "".join(kept)


def section_blocks(page: Path, *titles: str) -> list[str]:
    """The bodies of the fenced ``sh`` blocks of those sections, in order."""
    blocks: list[str] = []
    current: list[str] | None = None
    for line in section_text(page, *titles).splitlines(keepends=True):
        if current is None and line.rstrip() == "```sh":
            current = []
        elif current is not None and line.startswith("```"):
            blocks.append("".join(current))
            current = None
        elif current is not None:
            current.append(line)
    return blocks
