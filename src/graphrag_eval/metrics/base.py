"""The metric interface and outcomes as values (the registry: :mod:`.registry`).

A metric looks at one item (the reference question, the response, and the step matching
computed for it) and returns an :data:`Outcome`: :class:`Scored` with the output keys it
produced, :class:`Skipped` when its inputs are missing, or :class:`Failed` with an error.
Failures are values, never exceptions and never NaN; they become ``<metric>_error`` keys
only at the output edge (:mod:`graphrag_eval.results.to_records`).

An :class:`ItemMetric` scores the item as a whole; a :class:`StepMetric` scores individual
actual steps (the ``retrieval_context_*`` metrics), and its keys are written on those steps.

Each metric declares what it cannot do without: the item :class:`Input` fields it reads
(``inputs``) and the services it calls (``needs``). :mod:`graphrag_eval.evaluation.planning` reads
these
declarations before any call and skips a metric whose inputs or services are missing, so a
metric's ``score`` may assume them (docs/metrics.md, "How metrics are planned").

Each metric declares its output keys (:class:`OutputKey`): how each aggregates (statistics,
label counts, or not at all), which error keys report its failure, and whether an error sample
counts as 0 under ``aggregation.error_samples: zero``; the aggregator keeps no list of names.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeAlias

from graphrag_eval.config.base import Section
from graphrag_eval.config.model import (
    EvaluationConfig,
)
from graphrag_eval.formatting import Unit
from graphrag_eval.inputs import ActualStep, ReferenceQuestion, Response
from graphrag_eval.metrics.services import Services
from graphrag_eval.steps.matching import StepsOutcome

__all__ = [
    "Aggregation",
    "DerivedMetric",
    "Failed",
    "FailureKind",
    "Input",
    "ItemContext",
    "ItemMetric",
    "KeyKind",
    "Metric",
    "Outcome",
    "OutputKey",
    "Placement",
    "RepeatPart",
    "Scored",
    "Skipped",
    "StepMetric",
    "Unit",
]


JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
"""A value as JSON or YAML holds it: what a metric writes and what a saved record holds."""


class Aggregation(enum.Enum):
    """How a key's values are aggregated per template and overall."""

    NUMERIC = "numeric"
    """sum, mean, median, min and max of the values."""
    LABEL = "label"
    """a ``{label: count}`` map."""
    NONE = "none"
    """not aggregated (reasons, intermediate counts)."""


class KeyKind(enum.Enum):
    """What an output key holds, beside its :class:`Unit`: what the reports show it as."""

    SCORE = "score"
    """What the metric measures of the answer or the steps (a score, a label)."""
    DETAIL = "detail"
    """A companion of the score: the judge's reason, the counts it was computed from."""
    COST = "cost"
    """What the metric's judge calls cost (summed in the judge's summary, not listed as a
    metric)."""
    USAGE = "usage"
    """What the system under test used, as its response reports it (tokens, time)."""


class Input(enum.Enum):
    """An item input a metric cannot be scored without; missing, the plan skips the metric."""

    REFERENCE_ANSWER = "reference_answer"
    ACTUAL_ANSWER = "actual_answer"
    CONTEXTS = "contexts"
    """The response's retrieved contexts: ``retrieved_contexts`` or ``retrieval`` steps."""
    REFERENCE_STEPS = "reference_steps"
    """At least one reference step."""


class Placement(enum.Enum):
    """Where an item metric's keys go in a result, relative to the copied ``actual_steps``."""

    BEFORE_STEPS = "before_steps"
    AFTER_STEPS = "after_steps"


@dataclass(frozen=True, slots=True)
class OutputKey:
    """One key a metric writes, and how it is aggregated."""

    name: str
    aggregation: Aggregation = Aggregation.NUMERIC
    error_keys: tuple[str, ...] = ()
    """Keys whose presence means this key's metric failed (for ``coverage``); by default the
    metric's own ``error_keys``."""
    zero_for_error_samples: bool = False
    """Under ``aggregation.error_samples: zero``, an error sample that would have had this key
    (it has every field of ``requires``, and some successful item has the key or the
    evaluation wrote its 0 on some error sample) counts as 0."""
    requires: tuple[str, ...] = ()
    """Result fields an item must have for this key to apply, e.g. ``reference_steps``."""
    always: bool = False
    """Aggregated even when no item has it (zeros), like token counts."""
    headline: bool = False
    """Shown first in summaries (the one number of its metric people look at)."""
    labels: tuple[str, ...] = ()
    """For a label key: the labels to show first, in this order, with 0 for absent ones (the
    grades A to E); other labels follow."""
    counts: tuple[tuple[str, str], ...] = ()
    """For a label key: ``(label, aggregate key)`` pairs; the aggregates give how many
    questions have each label under that key (0 included), e.g. ``correct_answers_count``."""
    maximum: float | None = None
    """The best possible value of a score (1 or 100), for charts and for putting scores of
    different scales side by side; ``None`` for unbounded values (tokens, costs)."""
    lower_is_better: bool = False
    """Smaller values are better (costs, tokens, seconds): comparisons read a fall as an
    improvement, and ``--fail-on-regression`` leaves them out (gate them with
    ``--fail-over``)."""
    unit: Unit = Unit.SCORE
    """What its values are in (how they are written and compared)."""
    kind: KeyKind = KeyKind.SCORE
    """What it holds: a score, a detail, a cost, or what the system used."""
    sums: tuple[str, ...] = ()
    """The keys (of the same metric) whose sum it is, e.g. ``retrieval_answer_f1_cost``:
    counted beside them, it would count them twice."""
    passing: tuple[str, ...] = ()
    """For a label key of a pass/fail judgement: the labels that count as a pass (e.g.
    ``CORRECT``), for pass^k and pass@k over the judge's repeats (docs/llm.md, "Repeats and
    judge noise")."""
    repeats_of: str | None = None
    """For a companion of a judged key under ``llm.repeats`` (``<key>_repeats``,
    ``<key>_repeats_std``): the key whose repeats it holds; what it holds is ``repeat_part``.
    Nothing reads a key's name to know this (docs/outputs.md)."""
    repeat_part: RepeatPart | None = None
    """What a companion of ``repeats_of`` holds: the per-repeat values or their spread."""

    @classmethod
    def cost(cls, name: str, **declared: Any) -> OutputKey:
        """A key of what the metric's judge calls cost, in dollars (lower is better)."""
        return cls(name, unit=Unit.DOLLARS, kind=KeyKind.COST, lower_is_better=True, **declared)

    @classmethod
    def detail(cls, name: str, unit: Unit = Unit.TEXT) -> OutputKey:
        """A companion of the score that is not aggregated: the judge's reason (a text), a
        count it was computed from."""
        return cls(name, Aggregation.NONE, unit=unit, kind=KeyKind.DETAIL)


class RepeatPart(enum.Enum):
    """What a companion key of a judged key holds under ``llm.repeats`` (:class:`OutputKey`,
    ``repeat_part``)."""

    VALUES = "values"
    """The list of the N per-repeat values (``null`` for a repeat that failed)."""
    STD = "std"
    """The sample standard deviation of the successful repeats (``null`` below two)."""


class FailureKind(enum.Enum):
    """Why a metric could not be computed; the first four are an endpoint giving no reply or
    the cost limit stopping the call, which calling again may mend (a resumed run evaluates
    such items again: docs/outputs.md, ``failure_kinds``)."""

    UNREACHABLE = "unreachable"
    """A judge or embedding endpoint could not be reached (no connection, timed out)."""
    REFUSED = "refused"
    """An endpoint refused the request (a key or a model it does not accept)."""
    ENDPOINT = "failed"
    """An endpoint kept failing (server errors, no usable reply, its breaker open)."""
    BUDGET = "budget"
    """The run's cost limit stopped the call."""
    REPLY = "reply"
    """A reply came that cannot be used (malformed, cut short, not a completion): asking
    again gives the same."""
    INPUT = "input"
    """The item's inputs cannot be scored (a blank text, an unreadable output)."""
    INTERNAL = "internal"
    """A bug: the metric (or the step matching) raised."""
    METRIC = "metric"
    """The metric's own reason, of no other kind (what a metric that names none gives)."""

    @property
    def redo(self) -> bool:
        """Whether a resumed run evaluates the item again (the endpoint or the budget may
        serve it now)."""
        return self in _REDO


_REDO = frozenset(
    {FailureKind.UNREACHABLE, FailureKind.REFUSED, FailureKind.ENDPOINT, FailureKind.BUDGET}
)


@dataclass(frozen=True, slots=True)
class Scored:
    """The metric produced these output keys (a score and its companions: reason, cost...)."""

    values: Mapping[str, JsonValue]
    failures: Mapping[str, str] = field(default_factory=dict)
    """Error key -> message for the parts that failed while others were scored (a metric with
    two judge calls, one of which failed)."""
    failure_kind: FailureKind | None = None
    """The kind of those failures (``None``: not known, as in a record saved before kinds
    were)."""

    @staticmethod
    def kind_of(*parts: object) -> FailureKind | None:
        """The kind of the failures among ``parts`` (what a metric's calls gave): the first
        that calling again may mend, else the first."""
        kinds = [part.kind for part in parts if isinstance(part, Failed)]
        return next((kind for kind in kinds if kind is not None and kind.redo), None) or (
            kinds[0] if kinds else None
        )


@dataclass(frozen=True, slots=True)
class Skipped:
    """The metric does not apply: its inputs are missing. Written as its reason under
    ``skipped`` unless ``run_wide``."""

    reason: str
    run_wide: bool = False
    """The reason holds for the whole run (a service is missing), not for this question:
    kept in the typed result, not written per question (docs/outputs.md)."""


@dataclass(frozen=True, slots=True)
class Failed:
    """The metric applied but could not be computed: why (``kind``), the message, and what
    failed (``source``: the metric, the step matching, a service); written as its error keys,
    its kind under ``failure_kinds``."""

    error: str
    """The message."""
    kind: FailureKind | None = FailureKind.METRIC
    """``None``: not known (a record saved before kinds were, read back)."""
    source: str = ""
    """What failed, when it is not the metric itself: ``steps`` (the step matching),
    ``judge``, ``embeddings``."""

    @property
    def message(self) -> str:
        return self.error


Outcome = Scored | Skipped | Failed


@dataclass(frozen=True, slots=True)
class ItemContext:
    """Everything a metric may look at for one item."""

    question: ReferenceQuestion
    response: Response
    config: EvaluationConfig
    steps: StepsOutcome | None = None
    """The step matching, when the item has reference steps and the response is usable."""
    steps_error: str | None = None
    """Why the step matching failed, if it did (a bug, reported in the log)."""
    services: Services = field(default_factory=Services)
    """The run's judge, embedding model, BERTScore model and SPARQL store, typed (each
    ``None`` when the run has none; the plan runs a metric only with what it ``needs``)."""
    scores: Mapping[str, Any] = field(default_factory=dict)
    """For a :class:`DerivedMetric`: the values the item's other metrics produced."""


class Metric(ABC):
    """What every metric declares."""

    name: str
    """Unique name, used in config (``metrics:``) and for error reporting."""
    outputs: tuple[OutputKey, ...]
    """The keys it writes, in output order."""
    error_keys: tuple[str, ...]
    """The keys a :class:`Failed` outcome is written to."""
    uses_llm: bool = False
    """Whether it calls the LLM judge or embeddings (its failures may be transient: a resumed
    run evaluates such items again)."""
    inputs: tuple[Input, ...] = ()
    """Item inputs it cannot be scored without; an item lacking one is skipped for it."""
    needs: frozenset[str] = frozenset()
    """Services it cannot run without: ``judge`` (``llm.generation``), ``embeddings``
    (``llm.embedding`` or the local model), ``bert_model`` (the BERTScore model). Selected
    by name in ``metrics:`` without them, the run stops with a config error; run by
    default, the metric is skipped (on an item, the plan skips it too, so ``score`` may
    assume them)."""
    default: bool = True
    """Runs when the config has no ``metrics:`` list (docs/metrics.md, "Choosing metrics")."""
    always: bool = False
    """Runs whatever ``metrics:`` says (deterministic bookkeeping: steps, usage)."""
    depends_on: tuple[str, ...] = ()
    """Metrics whose values it is computed from (run along with it)."""
    section: ClassVar[str | None] = None
    """The name of its config section, when it has settings (metrics of one family may
    share one)."""
    settings_model: ClassVar[type[Section] | None] = None
    """Its settings: a config section model whose fields all have defaults; registering the
    metric adds the section to the config (docs/extending.md)."""

    def enabled(self, config: EvaluationConfig) -> bool:
        """Whether the metric runs under ``config``; enabled by default."""
        return True

    def why_disabled(self, config: EvaluationConfig) -> str:
        """What keeps the metric off under ``config`` (it is listed, but not
        :meth:`enabled`): the setting to change."""
        return f"{self.name}.enabled is false"


class ItemMetric(Metric):
    """A metric of the item as a whole; its keys go on the item."""

    placement: ClassVar[Placement] = Placement.AFTER_STEPS

    @abstractmethod
    async def score(self, context: ItemContext) -> Outcome:
        """Score one item."""


class DerivedMetric(ItemMetric):
    """An item metric computed from other metrics' values (``context.scores``), after them."""


class StepMetric(Metric):
    """A metric of individual actual steps; its keys go on each step it scored."""

    @abstractmethod
    def applies_to(self, context: ItemContext, step: ActualStep) -> bool:
        """Whether ``step`` is one this metric scores."""

    @abstractmethod
    async def score_step(self, context: ItemContext, step: ActualStep) -> Outcome:
        """Score one actual step of the item."""
