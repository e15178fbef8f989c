"""The registry of step match rules (docs/steps.md, "Match rules").

A rule (:class:`~graphrag_eval.steps.rule.StepRule`) declares the step names and reference
options it handles and scores a (reference step, actual step) pair in [0, 1]. Rules are tried
most specific declaration first (:func:`~graphrag_eval.steps.rule.specificity`); among equally
specific rules, a rule registered by the user or a plugin before a built-in one, then in
registration order. The first rule that handles a pair decides; a pair no rule handles cannot
match (in practice: steps of different names).

New tools bring their own rule with :func:`register_step_rule`, or from a separate package
through the entry point group ``graphrag_eval.step_rules``: each entry point is a rule, or a
callable returning a rule or rules. Entry points are loaded once, on first use of the
registry; one that fails to load is a :class:`~graphrag_eval.errors.ConfigError` naming it.

A rule may also check a reference step on its own when the dataset is loaded
(``check_reference``): a broken reference (unparsable JSON output, say) is then reported
before anything runs, and the step never matches.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

from graphrag_eval.errors import ConfigError
from graphrag_eval.inputs import ActualStep, ReferenceStep
from graphrag_eval.steps.builtin_rules import (
    BUILTIN_RULES,
    JSON_MEDIA_TYPE,
    SPARQL_JSON_MEDIA_TYPE,
    json_equal,
)
from graphrag_eval.steps.explain import Mismatch
from graphrag_eval.steps.rule import GIVEN, StepRule, specificity

__all__ = [
    "ENTRY_POINT_GROUP",
    "GIVEN",
    "JSON_MEDIA_TYPE",
    "SPARQL_JSON_MEDIA_TYPE",
    "PairScore",
    "StepRule",
    "StepRuleRegistry",
    "check_reference_step",
    "explain_pair",
    "json_equal",
    "match_score",
    "register_step_rule",
    "rule_for",
    "score_pair",
    "step_rules",
    "unregister_step_rule",
]

logger = logging.getLogger("graphrag_eval")

ENTRY_POINT_GROUP = "graphrag_eval.step_rules"

Overrides = Mapping[str, StepRule] | None
"""Rules by reference step name that take precedence over the registry (config rules)."""


@dataclass(frozen=True, slots=True)
class PairScore:
    """The score of a (reference step, actual step) pair, and why the actual step's output
    could not be read when that is why it scored 0."""

    score: float
    problem: str | None = None


class StepRuleRegistry:
    """Step rules in the order they are tried; entry points join on first use."""

    def __init__(self, builtins: Iterable[StepRule] = ()) -> None:
        self._builtin_names = frozenset(rule.name for rule in builtins)
        self._registered: dict[str, tuple[int, StepRule]] = {}
        self._ordered: tuple[StepRule, ...] = ()
        self._by_names: dict[tuple[str, str | None], tuple[StepRule, ...]] = {}
        """(reference step name, actual step name) -> the rules whose names admit the pair, in
        order: the only ones :meth:`rule_for` asks (a run has few pairs of names)."""
        self._checks: dict[str, tuple[StepRule, ...]] = {}
        """Reference step name -> the rules with a reference check whose names admit it."""
        self._options: frozenset[str] | None = None
        """:meth:`reference_options`, once worked out."""
        self._sequence = 0
        self._entry_points_loaded = False
        for rule in builtins:
            self._add(rule)

    def register(self, rule: StepRule) -> StepRule:
        """Add (or replace, by name) a rule. Returns the rule, so it can decorate."""
        self._load_entry_points()
        if not isinstance(rule, StepRule):
            raise TypeError(f"expected a StepRule, got {type(rule).__name__}")
        self._builtin_names -= {rule.name}  # a rule of a built-in's name replaces it
        self._add(rule)
        return rule

    def unregister(self, name: str) -> None:
        """Remove a rule by name (no error if absent)."""
        self._load_entry_points()
        self._registered.pop(name, None)
        self._reorder()

    def rules(self) -> tuple[StepRule, ...]:
        """The rules in the order they are tried."""
        self._load_entry_points()
        return self._ordered

    def reference_options(self) -> frozenset[str]:
        """The reference-step keys the rules declare they read (asked for every question
        read: worked out once per set of rules)."""
        rules = self.rules()
        if self._options is None:
            self._options = frozenset().union(*(rule.options for rule in rules))
        return self._options

    def score_pair(
        self, reference: ReferenceStep, actual: ActualStep, overrides: Overrides = None
    ) -> PairScore:
        """See :func:`score_pair`."""
        if not actual.succeeded or reference.problem is not None:
            return PairScore(0.0)
        rule = self.rule_for(reference, actual, overrides)
        return PairScore(0.0) if rule is None else _score_with(rule, reference, actual)

    def rule_for(
        self, reference: ReferenceStep, actual: ActualStep, overrides: Overrides = None
    ) -> StepRule | None:
        """See :func:`rule_for`."""
        if overrides and reference.name in overrides:
            override = overrides[reference.name]
            return override if override.handles(reference, actual) else None
        names = (reference.name, actual.name)
        candidates = self._by_names.get(names)
        if candidates is None:
            candidates = tuple(rule for rule in self.rules() if _names_admit(rule, *names))
            self._by_names[names] = candidates
        return next((rule for rule in candidates if rule.handles(reference, actual)), None)

    def explain_pair(
        self,
        reference: ReferenceStep,
        actual: ActualStep,
        known: PairScore | None = None,
        overrides: Overrides = None,
    ) -> Mismatch:
        """See :func:`explain_pair`."""
        if actual.problem is not None:
            return Mismatch(f"actual step {actual.label} cannot be compared: {actual.problem}")
        if not actual.succeeded:
            return Mismatch(f"actual step {actual.label} did not succeed (status {actual.status})")
        rule = self.rule_for(reference, actual, overrides)
        if rule is None:
            return Mismatch(f"no step rule compares {reference.name} with {actual.name}")
        pair = known if known is not None else _score_with(rule, reference, actual)
        generic = Mismatch(
            pair.problem or f"scored {pair.score:.3g} by rule {rule.name}",
            0.0 if pair.problem else pair.score,
        )
        if rule.explain is None:
            return generic
        try:
            found = rule.explain(reference, actual)
        except ValueError:  # the output cannot be read: the rule's own reason says so
            return generic
        except Exception:  # an explanation must never cost the item
            logger.warning("step rule %s failed to explain a mismatch", rule.name, exc_info=True)
            return generic
        return Mismatch(found, pair.score) if isinstance(found, str) else found

    def check_reference(self, step: ReferenceStep) -> str | None:
        """See :func:`check_reference_step`."""
        checks = self._checks.get(step.name)
        if checks is None:
            checks = tuple(
                rule
                for rule in self.rules()
                if rule.check_reference is not None
                and (not rule.reference_steps or step.name in rule.reference_steps)
            )
            self._checks[step.name] = checks
        for rule in checks:
            if rule.check_reference is None or not rule.handles_reference(step):
                continue
            try:
                problem = rule.check_reference(step)
            except Exception as exc:  # an extreme input must not stop loading the dataset
                problem = f"could not be read: {exc!r}"
            if problem is not None:
                return problem
        return None

    def _add(self, rule: StepRule) -> None:
        self._registered.pop(rule.name, None)
        self._registered[rule.name] = (self._sequence, rule)
        self._sequence += 1
        self._reorder()

    def _reorder(self) -> None:
        def key(entry: tuple[int, StepRule]) -> tuple[int, bool, int]:
            sequence, rule = entry
            return specificity(rule), rule.name in self._builtin_names, sequence

        self._ordered = tuple(rule for _, rule in sorted(self._registered.values(), key=key))
        self._by_names = {}
        self._checks = {}
        self._options = None

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True  # before loading: a plugin may register itself
        try:
            for entry_point in entry_points(group=ENTRY_POINT_GROUP):
                for rule in _rules_of(entry_point):
                    self.register(rule)
        except ConfigError:
            self._entry_points_loaded = False  # the next use says so again
            raise


def _names_admit(rule: StepRule, reference_name: str, actual_name: str | None) -> bool:
    """The part of :meth:`StepRule.handles` that looks at the steps' names only."""
    if rule.actual_steps:
        if actual_name not in rule.actual_steps:
            return False
    elif actual_name != reference_name:
        return False
    return not rule.reference_steps or reference_name in rule.reference_steps


def _rules_of(entry_point: EntryPoint) -> tuple[StepRule, ...]:
    """The rules an entry point gives: a rule, or what a callable returns (a rule, rules, or
    ``None`` when it registered them itself)."""
    where = f"step rule entry point {entry_point.name!r} ({entry_point.value})"
    try:
        loaded = entry_point.load()
        given = loaded() if callable(loaded) and not isinstance(loaded, StepRule) else loaded
    except Exception as exc:
        raise ConfigError(f"{where} failed to load: {exc!r}") from exc
    if given is None:  # a callable that registered its rules itself
        return ()
    many = (given,) if isinstance(given, StepRule) else given
    rules = tuple(many) if isinstance(many, Iterable) and not isinstance(many, str) else ()
    if not rules or not all(isinstance(rule, StepRule) for rule in rules):
        raise ConfigError(f"{where} gave {given!r}, not a StepRule or StepRules")
    return rules


def _score_with(rule: StepRule, reference: ReferenceStep, actual: ActualStep) -> PairScore:
    try:
        return PairScore(float(rule.score(reference, actual)))
    except ValueError as exc:
        return PairScore(0.0, str(exc))
    except Exception as exc:
        logger.warning("step rule %s failed", rule.name, exc_info=True)
        return PairScore(0.0, f"could not be compared ({rule.name}): {exc!r}")


_REGISTRY = StepRuleRegistry(BUILTIN_RULES)


def register_step_rule(rule: StepRule) -> StepRule:
    """Add (or replace, by name) a step rule. Returns the rule, so it can decorate."""
    return _REGISTRY.register(rule)


def unregister_step_rule(name: str) -> None:
    """Remove a step rule by name (no error if absent)."""
    _REGISTRY.unregister(name)


def step_rules() -> tuple[StepRule, ...]:
    """The registered rules in the order they are tried."""
    return _REGISTRY.rules()


def score_pair(
    reference: ReferenceStep, actual: ActualStep, overrides: Overrides = None
) -> PairScore:
    """Score one reference step against one actual step: 0 unless the actual step succeeded,
    the reference is sound and a rule handles the pair; otherwise the rule's score.

    A rule raises ``ValueError`` when it cannot read the actual output (not JSON where JSON
    is expected, say): the pair scores 0 and the reason is returned. Any other exception is a
    bug or an extreme input (nesting deeper than the interpreter allows): it is logged and
    the pair scores 0 with the reason, so one step never costs the item. ``overrides`` are
    rules by reference step name (the config's ``steps.rules``) that take precedence.
    """
    return _REGISTRY.score_pair(reference, actual, overrides)


def explain_pair(
    reference: ReferenceStep,
    actual: ActualStep,
    known: PairScore | None = None,
    overrides: Overrides = None,
) -> Mismatch:
    """Why a pair scored below a full match (called only for such pairs): the rule's
    explanation, the reason its output could not be read, or a generic line. ``known`` is
    the pair's score when it was already computed."""
    return _REGISTRY.explain_pair(reference, actual, known, overrides)


def rule_for(
    reference: ReferenceStep, actual: ActualStep, overrides: Overrides = None
) -> StepRule | None:
    """The rule that scores this pair, if any: the override for the reference step's name
    (a config rule) when there is one, else the first registered rule that handles it."""
    return _REGISTRY.rule_for(reference, actual, overrides)


def match_score(reference: ReferenceStep, actual: ActualStep) -> float:
    """:func:`score_pair` without the reason."""
    return _REGISTRY.score_pair(reference, actual).score


class _ReferenceStepCheck:
    """:func:`check_reference_step`: a check for :func:`graphrag_eval.inputs.parse_reference`
    that also tells it which reference options the rules read."""

    def __init__(self, skipped: frozenset[str] = frozenset()) -> None:
        self._skipped = skipped

    def __call__(self, step: ReferenceStep, /) -> str | None:
        """The first problem any rule finds in a reference step on its own, or ``None``."""
        if step.name in self._skipped:
            return None
        return _REGISTRY.check_reference(step)

    def skipping(self, names: Iterable[str]) -> _ReferenceStepCheck:
        """The same check, except for the reference steps of these names (the config's rules
        score them, and the registered rules' checks do not apply)."""
        return _ReferenceStepCheck(frozenset(names))

    @property
    def reference_options(self) -> frozenset[str]:
        return _REGISTRY.reference_options()


check_reference_step = _ReferenceStepCheck()
"""The first problem any rule finds in a reference step on its own, or ``None``."""
