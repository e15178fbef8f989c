"""The config sections of step matching, aggregation, BERTScore (the engine runs its model)
and custom evaluations (docs/steps.md, docs/metrics.md). The other metrics declare their
sections in their own modules (``Metric.settings_model``)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, model_validator

from graphrag_eval.config.base import Section
from graphrag_eval.config.llm import BUNDLED_MODEL

__all__ = [
    "AggregationConfig",
    "BertScoreConfig",
    "CustomEvaluationConfig",
    "StepsConfig",
]


class StepsConfig(Section):
    """How actual tool-call steps are matched to reference steps."""

    score_mode: Literal["last_group", "all_groups"] = "last_group"
    """``last_group``: only the last reference group is matched and scored (the seed's
    behaviour). ``all_groups``: groups are matched from last to first, each before the steps
    the next group matched, and ``steps_score`` is the mean over all groups."""


class AggregationConfig(Section):
    """How per-question results are aggregated."""

    error_samples: Literal["exclude", "zero"] = "exclude"
    """``exclude``: responses with an error are left out of the statistics (the seed).
    ``zero``: they score 0 on ``steps_score`` and on every answer metric they would have had,
    so a system that fails more cannot look better."""


class BertScoreConfig(Section):
    """``bert_score_precision``/``_recall``/``_f1``: greedy matching of contextual token
    embeddings of a local model."""

    model: str = BUNDLED_MODEL
    """The bundled all-MiniLM-L6-v2 (the ``embeddings`` extra), a path to a Hugging Face
    model directory, or the name of a model already in the local Hugging Face cache (for the
    reference's setting, ``microsoft/deberta-xlarge-mnli``). Nothing is downloaded."""

    layer: int | None = None
    """The hidden layer whose token embeddings are matched (0 is the input embeddings,
    negative counts from the last). Default: the last layer."""

    batch_size: int = Field(default=32, ge=1, le=1024)
    """Texts per forward pass."""

    max_length: int = Field(default=512, ge=8)
    """Longer texts are cut to this many tokens (the model's own limit applies too)."""


CustomInput = Literal[
    "question", "reference_answer", "reference_steps", "actual_answer", "actual_steps"
]
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class CustomEvaluationConfig(Section):
    """A judge call with your instructions and outputs."""

    name: str
    """The evaluation's name; its failures are reported as ``<name>_error`` and its cost as
    ``<name>_cost``."""

    inputs: list[CustomInput] = Field(min_length=1)
    """What the judge is shown: any of question, reference_answer, reference_steps,
    actual_answer, actual_steps."""

    instructions: str = Field(min_length=1)
    """What the judge should do."""

    outputs: dict[str, str] = Field(min_length=1)
    """Output key -> description; the judge replies with one tab-separated value per output,
    in this order (JSON values such as numbers are decoded)."""

    steps_name: str | None = None
    """With step inputs: the name of the steps to show (e.g. ``sparql_query``)."""

    steps_keys: list[Literal["args", "output"]] | None = Field(default=None, min_length=1)
    """With step inputs: which parts of those steps to show."""

    @model_validator(mode="after")
    def _check(self) -> CustomEvaluationConfig:
        names = [self.name, *self.outputs]
        bad = [name for name in names if not _IDENTIFIER.match(name)]
        if bad:
            raise ValueError(f"'{bad[0]}' is not a valid key name (letters, digits, _)")
        if len(set(self.inputs)) != len(self.inputs):
            raise ValueError("inputs are listed more than once")
        uses_steps = any(name.endswith("_steps") for name in self.inputs)
        if uses_steps and (self.steps_name is None or self.steps_keys is None):
            raise ValueError("step inputs need steps_name and steps_keys")
        return self

    @property
    def error_key(self) -> str:
        return f"{self.name}_error"

    @property
    def cost_key(self) -> str:
        return f"{self.name}_cost"
