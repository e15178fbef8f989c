"""The ``graphrag_eval`` fixture of the pytest plugin: evaluate a system in a test and assert
that it passes its gates, with a failure message a person reads, not a traceback of the
package (docs/integrations.md, "pytest")."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval.config import ConfigSource
from graphrag_eval.errors import GraphragEvalError
from graphrag_eval.testing.agents import Agent
from graphrag_eval.testing.evaluation import Evaluation, Thresholds, evaluate_in_test, parse_gates
from graphrag_eval.testing.message import failure_message

__all__ = ["GraphragEval", "test_directory"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_NAME_CHARS = 120


def test_directory(root: Path, node_id: str) -> Path:
    """The directory under ``root`` that keeps the runs of the test ``node_id``: its id with
    every character but letters, digits, ``_``, ``.`` and ``-`` replaced, cut short, then
    ``-`` and a digest of the whole id, so that two tests never share one (``t[a b]`` and
    ``t[a_b]``, or two long ids alike in their first characters); never a path out of
    ``root``."""
    name = _UNSAFE.sub("_", node_id).strip("._")[:_NAME_CHARS] or "test"
    digest = hashlib.sha256(node_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return root / f"{name}-{digest}"


class GraphragEval:
    """Evaluations for one test, each kept in its own output directory under ``root``
    (``graphrag-eval``, then ``graphrag-eval-2``... for a test that evaluates more than once)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.runs: list[Evaluation] = []

    def next_out_dir(self) -> Path:
        count = len(self.runs) + 1
        return self.root / ("graphrag-eval" if count == 1 else f"graphrag-eval-{count}")

    def evaluate(
        self,
        reference: str | Path | Sequence[Any],
        responses: Any = None,
        *,
        agent: Agent | None = None,
        config: ConfigSource = None,
        fail_under: Thresholds = None,
        fail_over: Thresholds = None,
        baseline: str | Path | None = None,
        fail_on_regression: bool | Iterable[str] | None = None,
        concurrency: int = 8,
        timeout: float | None = None,
        out_dir: str | Path | None = None,
    ) -> Evaluation:
        """Evaluate ``responses`` (a file, or the data of one) or the answers of ``agent``
        (asked every question, ``concurrency`` at a time, each for at most ``timeout``
        seconds) against ``reference``, and check
        the gates: ``fail_under``/``fail_over`` as on the command line
        (``"steps_score=0.8"``, a list of them, or ``{"steps_score": 0.8}``), and, given a
        ``baseline`` run directory, no significant regression (``fail_on_regression``: every
        score by default, ``False`` for none, or the metrics named). Fails the test at once,
        in one line, for inputs, a config or gates that cannot be used."""
        __tracebackhide__ = True
        where = Path(out_dir) if out_dir is not None else self.next_out_dir()
        try:
            gates = parse_gates(fail_under, fail_over, baseline, fail_on_regression)
            evaluation = evaluate_in_test(
                reference, responses, agent, config, where, gates, concurrency, timeout
            )
        except GraphragEvalError as exc:
            pytest.fail(f"graphrag-eval: {exc}", pytrace=False)
        self.runs.append(evaluation)
        return evaluation

    def assert_passes(
        self,
        reference: str | Path | Sequence[Any],
        responses: Any = None,
        *,
        worst: int = 5,
        **options: Any,
    ) -> Evaluation:
        """:meth:`evaluate`, then fail the test with an ``AssertionError`` that lists the
        failed gates and the ``worst`` questions of each, and where the run is kept."""
        __tracebackhide__ = True
        evaluation = self.evaluate(reference, responses, **options)
        if not evaluation.passed:
            raise AssertionError(failure_message(evaluation, worst))
        return evaluation
