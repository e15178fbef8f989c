"""The base of every config section: unknown keys are errors, values are frozen, and each
field's docstring documents it (docs/metrics.md, "Choosing metrics")."""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = ["Section", "Weights"]


class Section(BaseModel):
    """A config section: ``extra="forbid"``, frozen, documented by field docstrings (in the
    source only: pydantic's ``use_attribute_docstrings`` would parse the source of every
    section at start-up, about 50 ms of each run, and nothing reads the descriptions)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Weights(Section):
    """The weights of a weighted mean (its fields): none negative, at least one positive."""

    @model_validator(mode="after")
    def _some_positive(self) -> Self:
        if not sum(self.model_dump().values()) > 0:
            raise ValueError("at least one weight must be positive")
        return self
