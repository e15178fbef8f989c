"""The judge's noise under ``llm.repeats``, folded one result at a time beside the other
aggregates (:class:`~graphrag_eval.results.fold.AggregateFold`): per template and overall,
for each judged key with repeats, a :class:`~graphrag_eval.results.aggregates.RepeatSpread`
(docs/outputs.md, "Repeats"; how to read it: docs/llm.md, "Repeats and judge noise").

Exact as the other statistics are: each group keeps its question means and the sums the
variances are made of, in result order, so folding the results one by one gives what the
whole list gives."""

from __future__ import annotations

import statistics
from array import array
from collections.abc import Sequence
from typing import Any

from graphrag_eval.metrics.base import JsonValue, OutputKey
from graphrag_eval.results.aggregates import RepeatSpread
from graphrag_eval.results.model import QuestionResult, ResultLayout, is_number
from graphrag_eval.results.repeated import repeated_keys

__all__ = ["NoiseFold"]


class NoiseFold:
    """Each group's repeats, per key, taken one result at a time."""

    def __init__(self, layout: ResultLayout) -> None:
        declared = layout.outputs()
        self._keys = {
            key: (metric, values_key, declared[key][0])
            for key, (metric, values_key) in repeated_keys(layout.metrics.values()).items()
            if key in declared
        }
        self.micro: dict[str, _Spread] = {}
        self.groups: dict[str, dict[str, _Spread]] = {}

    def add(self, template: str, result: QuestionResult) -> None:
        """Take one result of ``template`` (error samples have no repeats)."""
        if result.is_error or not self._keys:
            return
        values: dict[str, JsonValue] | None = None
        for key, (metric, values_key, spec) in self._keys.items():
            listed: Sequence[Any] | None
            if metric.on_steps:
                listed = result.repeat_values(key)
            else:
                values = result.values() if values is None else values
                found = values.get(values_key)
                listed = found if isinstance(found, list) and found else None
            if listed is None:
                continue
            for spreads in (self.micro, self.groups.setdefault(template, {})):
                spread = spreads.get(key)
                if spread is None:
                    spread = spreads[key] = _Spread(spec)
                spread.add(listed)

    def finish(self) -> tuple[dict[str, RepeatSpread], dict[str, dict[str, RepeatSpread]]]:
        """The spreads overall and per template, of the keys that had more than one repeat;
        pass^k and pass@k for the keys every repeat of which was a pass or a fail."""
        pass_fail = {key for key, spread in self.micro.items() if spread.pass_fail}
        micro = _spreads(self.micro, pass_fail)
        return micro, {
            template: _spreads(spreads, pass_fail) for template, spreads in self.groups.items()
        }


def _spreads(spreads: dict[str, _Spread], pass_fail: set[str]) -> dict[str, RepeatSpread]:
    return {key: spread.finish(key in pass_fail) for key, spread in spreads.items() if spread.k > 1}


class _Spread:
    """One key's repeats in one group."""

    def __init__(self, spec: OutputKey) -> None:
        self.passing = frozenset(spec.passing)
        self.k = 0
        self.questions = self.judged = self.failed = self.unanimous = 0
        self.means = array("d")
        self.inverse_n = array("d")
        self.squares = 0.0  # the within-question sums of squared deviations, summed
        self.freedom = 0  # their degrees of freedom, summed
        self.pass_fail = True  # every repeat seen was a pass or a fail
        self.passes = self.full = self.all_pass = self.any_pass = 0

    def add(self, listed: Sequence[Any]) -> None:
        self.k = max(self.k, len(listed))
        judged = [value for value in listed if value is not None]
        self.failed += len(listed) - len(judged)
        self.judged += len(judged)
        if not judged:
            return
        self.questions += 1
        self.unanimous += len({repr(value) for value in judged}) == 1
        if all(is_number(value) for value in judged):
            mean = statistics.fmean(judged)
            self.means.append(mean)
            self.inverse_n.append(1 / len(judged))
            self.squares += sum((value - mean) ** 2 for value in judged)
            self.freedom += len(judged) - 1
        passed = [self._passed(value) for value in judged]
        if any(verdict is None for verdict in passed):
            self.pass_fail = False
        elif self.pass_fail:
            self.passes += sum(map(bool, passed))
            if len(judged) == len(listed):
                self.full += 1
                self.all_pass += all(passed)
                self.any_pass += any(passed)

    def _passed(self, value: Any) -> bool | None:
        """Whether a repeat passed; ``None`` for a value that is neither a pass nor a fail."""
        if self.passing:
            return value in self.passing if isinstance(value, str) else None
        if isinstance(value, bool):
            return value
        if is_number(value) and value in (0, 1):
            return bool(value == 1)
        return None

    def finish(self, pass_fail: bool) -> RepeatSpread:
        within = self.squares / self.freedom if self.freedom else None
        between: float | None = None
        if within is not None and len(self.means) >= 2:
            spread = statistics.variance(self.means) - within * statistics.fmean(self.inverse_n)
            between = max(0.0, spread)
        total = within + between if within is not None and between is not None else 0.0
        share = within / total if within is not None and total > 0 else None
        passes = pass_fail and self.pass_fail and self.judged > 0
        return RepeatSpread(
            repeats=self.k,
            questions=self.questions,
            judged_repeats=self.judged,
            failed_repeats=self.failed,
            judge_variance=within,
            between_variance=between,
            noise_share=share,
            unanimous=self.unanimous / self.questions if self.questions else 0.0,
            pass_rate=self.passes / self.judged if passes else None,
            pass_hat_k=(self.all_pass / self.full if self.full else None) if passes else None,
            pass_at_k=(self.any_pass / self.full if self.full else None) if passes else None,
        )
