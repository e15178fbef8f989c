"""Custom evaluations (docs/metrics.md, config ``custom_evaluations``): one judge call each,
with the user's instructions and outputs.

The prompt is the instructions, then the inputs the evaluation names (question, reference
answer, actual answer, and the chosen parts of the steps called ``steps_name``), then the
list of outputs. The reply is one line of tab-separated values, one per output in order,
each decoded as JSON where it is JSON (so numbers aggregate like any metric). A line short of
values gives the first outputs; the others are asked again, once, in a prompt that lists only
them, and any still missing are null with ``<name>_error`` saying which ("2 of 3 outputs
judged; not judged: ..."). Missing inputs or a malformed reply (after one re-ask) set every
output to null and write ``<name>_error``. ``<name>_cost`` is the judge calls' cost.
"""

from __future__ import annotations

import json
from typing import Any

from graphrag_eval.config.model import EvaluationConfig
from graphrag_eval.config.sections import CustomEvaluationConfig
from graphrag_eval.llm.engine import Judged
from graphrag_eval.llm.prompts import prompt
from graphrag_eval.llm.replies import decode_value, tab_separated
from graphrag_eval.metrics.base import (
    Failed,
    FailureKind,
    ItemContext,
    ItemMetric,
    Outcome,
    OutputKey,
    Scored,
)
from graphrag_eval.metrics.judging import messages, or_failed
from graphrag_eval.metrics.services import need

__all__ = ["CustomEvaluation", "custom_metrics"]

_LABELS = {
    "question": "Question",
    "reference_answer": "Reference answer",
    "actual_answer": "Actual answer",
    "reference_steps": "Reference steps",
    "actual_steps": "Actual steps",
}


class CustomEvaluation(ItemMetric):
    """One configured custom evaluation."""

    uses_llm = True
    needs = frozenset({"judge"})

    def __init__(self, settings: CustomEvaluationConfig) -> None:
        self.settings = settings
        self.name = settings.name  # per instance, from the config
        self.outputs = (
            *(OutputKey(output) for output in settings.outputs),
            OutputKey.cost(settings.cost_key),
        )
        self.error_keys = (settings.error_key,)

    def enabled(self, config: EvaluationConfig) -> bool:
        return True

    async def score(self, context: ItemContext) -> Outcome:
        settings = self.settings
        shown, missing = self._inputs(context)
        if missing:
            return self._failure(f"missing input: {', '.join(missing)}", FailureKind.INPUT)
        inputs = "\n\n".join(f"{_LABELS[name]}:\n{text}" for name, text in shown)
        names = list(settings.outputs)
        judged = await or_failed(self._ask(context, inputs, names))
        if isinstance(judged, Failed):
            return self._failure(judged.error, judged.kind)
        values: dict[str, Any] = dict(zip(names, judged.value, strict=False))
        cost = judged.cost_usd
        left = names[len(values) :]
        if left:  # a line short of values: the missing outputs asked again, once
            again = await or_failed(self._ask(context, inputs, left))
            if not isinstance(again, Failed):
                values.update(zip(left, again.value, strict=False))
                cost += again.cost_usd
        decoded = {name: decode_value(values[name]) if name in values else None for name in names}
        decoded[settings.cost_key] = cost
        if len(values) == len(names):
            return Scored(decoded)
        note = f"{len(values)} of {len(names)} outputs judged; not judged: " + ", ".join(
            name for name in names if name not in values
        )
        return Scored(decoded, {settings.error_key: note}, FailureKind.REPLY)

    async def _ask(self, context: ItemContext, inputs: str, names: list[str]) -> Judged[list[str]]:
        """One call for the outputs ``names`` (a line of at least one value: the first ones)."""
        outputs = self.settings.outputs
        user = prompt("custom_evaluation").format(
            instructions=self.settings.instructions.strip(),
            inputs=inputs,
            count=len(names),
            outputs="\n".join(
                f"{number}. {name}: {outputs[name]}" for number, name in enumerate(names, start=1)
            ),
        )
        return await need(context.services.judge, "judge").judge(
            messages(user), tab_separated(len(names), minimum=1), metric=self.name
        )

    def _failure(self, message: str, kind: FailureKind | None) -> Outcome:
        return Scored(
            dict.fromkeys(self.settings.outputs), {self.settings.error_key: message}, kind
        )

    def _inputs(self, context: ItemContext) -> tuple[list[tuple[str, str]], list[str]]:
        shown: list[tuple[str, str]] = []
        missing: list[str] = []
        for name in self.settings.inputs:
            text = self._input(context, name)
            if text is None or not text.strip():
                missing.append(name)
            else:
                shown.append((name, text))
        return shown, missing

    def _input(self, context: ItemContext, name: str) -> str | None:
        question, response = context.question, context.response
        if name == "question":
            return question.question_text
        if name == "reference_answer":
            return question.reference_answer
        if name == "actual_answer":
            return response.actual_answer
        keys = self.settings.steps_keys or ()
        if name == "reference_steps":
            if question.reference_steps is None:
                return None
            raw_steps = [step.raw for group in question.reference_steps for step in group]
        else:
            if response.actual_steps is None:
                return None
            raw_steps = [step.raw for step in response.actual_steps]
        chosen = [
            {key: step.get(key) for key in keys}
            for step in raw_steps
            if isinstance(step, dict) and step.get("name") == self.settings.steps_name
        ]
        return json.dumps(chosen, ensure_ascii=False, indent=1, default=str)


def custom_metrics(config: EvaluationConfig) -> tuple[CustomEvaluation, ...]:
    """The metrics of the config's custom evaluations."""
    return tuple(CustomEvaluation(settings) for settings in config.custom_evaluations)
