"""Steps evaluation: match rules (:mod:`.rule`, :mod:`.builtin_rules`, the registry in
:mod:`.rules`), group matching (:mod:`.matching`), SPARQL results comparison
(:mod:`.sparql`), retrieval metrics (:mod:`.retrieval`) and time-series argument matching
(:mod:`.timeseries`).

The public extension API for step rules (docs/steps.md, "Match rules"): :class:`StepRule`,
:func:`register_step_rule`, :func:`unregister_step_rule`, :func:`step_rules` and
:data:`GIVEN`; plugins use the entry point group ``graphrag_eval.step_rules``.
"""

from graphrag_eval.steps.rule import GIVEN, StepRule
from graphrag_eval.steps.rules import (
    ENTRY_POINT_GROUP,
    register_step_rule,
    step_rules,
    unregister_step_rule,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "GIVEN",
    "StepRule",
    "register_step_rule",
    "step_rules",
    "unregister_step_rule",
]
