"""Metrics from another installed package: the entry point group ``graphrag_eval.metrics``
(docs/extending.md, "From a separate package")."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from graphrag_eval.errors import ConfigError
from graphrag_eval.metrics import ENTRY_POINT_GROUP, Metric
from graphrag_eval.metrics.plugins import entry_point_metrics


def install_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, code: str, entries: str
) -> None:
    """A package installed for real: its module and a dist-info directory on ``sys.path``."""
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(code), encoding="utf-8")
    dist_info = tmp_path / f"{module}-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n", encoding="utf-8"
    )
    (dist_info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\n" + textwrap.dedent(entries), encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)


PLUGIN = """
    from graphrag_eval.metrics import ItemMetric, OutputKey, Scored

    class AnswerLength(ItemMetric):
        name = "answer_length"
        outputs = (OutputKey("answer_length"),)
        error_keys = ()

        async def score(self, context):
            return Scored({"answer_length": len(context.response.actual_answer or "")})

    def both():
        first, second = AnswerLength(), AnswerLength()
        second.name = "answer_length_again"
        return [first, second]
"""


def test_an_entry_point_gives_a_metric_class_an_instance_or_a_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_plugin(
        tmp_path,
        monkeypatch,
        "graphrag_eval_metric_plugin_a",
        PLUGIN,
        """
        length = graphrag_eval_metric_plugin_a:AnswerLength
        both = graphrag_eval_metric_plugin_a:both
        """,
    )

    metrics = entry_point_metrics(Metric)

    assert sorted(metric.name for metric in metrics) == [
        "answer_length",
        "answer_length",
        "answer_length_again",
    ]


def test_an_entry_point_that_gives_no_metric_is_a_config_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_plugin(
        tmp_path,
        monkeypatch,
        "graphrag_eval_metric_plugin_b",
        "metric = 42\n",
        "wrong = graphrag_eval_metric_plugin_b:metric\n",
    )

    with pytest.raises(ConfigError) as caught:
        entry_point_metrics(Metric)

    assert str(caught.value) == (
        "metric entry point 'wrong' (graphrag_eval_metric_plugin_b:metric) gave 42, "
        "not a Metric or Metrics"
    )
