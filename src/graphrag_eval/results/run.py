"""An evaluation run as the runner gives it (:class:`EvaluationRun`): the typed results in
reference order, with the notices, the config and the judge's call statistics; flattened to
the seed's per-question dictionaries once, at the edge (docs/architecture.md, "The data
flow")."""

from __future__ import annotations

from dataclasses import dataclass, field

from graphrag_eval.config import EvaluationConfig
from graphrag_eval.inputs import Diagnostics
from graphrag_eval.llm.stats import CallStats
from graphrag_eval.metrics.base import JsonValue
from graphrag_eval.results.model import QuestionResult, ResultLayout, RunResult
from graphrag_eval.results.to_records import to_records

__all__ = ["EvaluationRun"]


@dataclass(slots=True)
class EvaluationRun:
    """Typed results in reference order, plus everything that was reported along the way;
    flattened to the seed's dictionaries once, at the edge (:attr:`results`)."""

    items: list[QuestionResult]
    diagnostics: Diagnostics
    config: EvaluationConfig
    layout: ResultLayout = field(default_factory=ResultLayout)
    """The layout of the config's metrics
    (:func:`~graphrag_eval.results.from_records.layout_for`)."""
    llm: CallStats | None = None
    """What the run's judge and embedding calls amounted to (``None`` without an LLM)."""
    _records: list[dict[str, JsonValue]] | None = field(default=None, init=False, repr=False)

    @property
    def run_result(self) -> RunResult:
        """The typed run: its results and the layout of every metric they hold."""
        return RunResult.of(self.items, self.layout)

    @property
    def results(self) -> list[dict[str, JsonValue]]:
        """The flat per-question dictionaries (docs/outputs.md), made once."""
        if self._records is None:
            self._records = to_records(self.run_result)
        return self._records
