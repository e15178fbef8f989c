"""The built-in judge prompts, one Markdown file each (``str.format`` templates).

A prompt's text is part of every cache key it produces, so editing a prompt invalidates
exactly the cached replies it affects.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

__all__ = ["prompt"]


@cache
def prompt(name: str) -> str:
    """The template ``<name>.md`` (without its final newline)."""
    return resources.files(__name__).joinpath(f"{name}.md").read_text(encoding="utf-8").rstrip("\n")
