"""The config sections of step matching, aggregation, BERTScore (the engine runs its model)
and custom evaluations (docs/steps.md, docs/metrics.md). The other metrics declare their
sections in their own modules (``Metric.settings_model``)."""

from __future__ import annotations

import difflib
import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from graphrag_eval.config.base import Section
from graphrag_eval.config.llm import BUNDLED_MODEL

__all__ = [
    "AggregationConfig",
    "BertScoreConfig",
    "CustomEvaluationConfig",
    "StepRuleConfig",
    "StepsConfig",
]

ArgsMode = Literal["exact", "ignore", "subset", "superset"]
ARGS_MODES: tuple[str, ...] = ("exact", "ignore", "subset", "superset")
OutputKind = Literal["ignore", "exact", "json", "sparql_results", "ids"]


class StepRuleConfig(Section):
    """How steps of one tool name are scored (docs/steps.md, "Rules for your own tools")."""

    args: list[str] | ArgsMode = "exact"
    """The arguments that must be equal (strings case- and whitespace-insensitively, lists
    as sorted, numbers within 1e-8; the others are ignored), or a mode: ``exact`` (all args
    equal), ``ignore``, ``subset`` (the actual args are among the reference's, equal),
    ``superset`` (the actual has at least the reference's args, equal; extra ones are
    fine)."""

    output: OutputKind = "exact"
    """``ignore``; ``exact`` (identical outputs); ``json`` (equal JSON values);
    ``sparql_results`` (the SPARQL results comparison, with the reference step's
    ``ordered``, ``required_columns`` and ``ignore_duplicates``); ``ids`` (recall@k over the
    ids in a JSON list output, k being the actual step's ``args.k`` or the number of ids)."""

    ids_field: str | None = None
    """With ``output: ids``: the field of each list item that holds its id (default: the
    items are the ids)."""

    @field_validator("args", mode="before")
    @classmethod
    def _args_mode(cls, value: Any) -> Any:
        if isinstance(value, str) and value not in ARGS_MODES:
            close = difflib.get_close_matches(value, ARGS_MODES, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ValueError(
                f"args must be a list of argument names or one of {', '.join(ARGS_MODES)}, "
                f"got {value!r}{hint}"
            )
        if isinstance(value, list) and not all(isinstance(n, str) and n for n in value):
            raise ValueError("args must list argument names (non-empty strings)")
        return value

    @model_validator(mode="after")
    def _check(self) -> StepRuleConfig:
        if self.ids_field is not None and self.output != "ids":
            raise ValueError("ids_field is read only with output: ids")
        return self


class StepsConfig(Section):
    """How actual tool-call steps are matched to reference steps."""

    score_mode: Literal["last_group", "all_groups"] = "last_group"
    """``last_group``: only the last reference group is matched and scored (the seed's
    behaviour). ``all_groups``: groups are matched from last to first, each before the steps
    the next group matched, and ``steps_score`` is the mean over all groups."""

    rules: dict[str, StepRuleConfig] = Field(default_factory=dict)
    """Step (tool) name -> how its steps are scored; takes precedence over the built-in rule
    for that name (docs/steps.md, "Rules for your own tools")."""


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
