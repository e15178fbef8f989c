"""Metrics from another installed package: the entry point group ``graphrag_eval.metrics``
(docs/extending.md, "From a separate package")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval.errors import ConfigError
from graphrag_eval.metrics import ENTRY_POINT_GROUP, Metric
from graphrag_eval.metrics.plugins import entry_point_metrics

from builders import read_records, write_answered


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


POLITENESS = """
    from graphrag_eval.metrics import ItemMetric, OutputKey, Scored, Section

    class PolitenessConfig(Section):
        word: str = "please"

    class Politeness(ItemMetric):
        name = "politeness"
        section = "politeness"
        settings_model = PolitenessConfig
        outputs = (OutputKey("politeness"),)
        error_keys = ("politeness_error",)

        async def score(self, context):
            word = context.config.section("politeness", PolitenessConfig).word
            return Scored({"politeness": float(word in (context.response.actual_answer or ""))})
"""

SOURCE = str(Path(__file__).resolve().parents[2] / "src")


def _evaluate_in_a_process(tmp_path: Path, config: str) -> tuple[int, str, list[Any]]:
    """``graphrag-eval evaluate`` in a new process (its registry fresh, the plugin found only
    through its entry point): the exit code, stderr and the politeness values."""
    reference, responses = write_answered(tmp_path, 2, "Q{i}?", "A{i}", "Yes please, A{i}")
    (tmp_path / "config.yaml").write_text(textwrap.dedent(config), encoding="utf-8")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "graphrag_eval.cli", "evaluate", str(reference)]
    command += [str(responses), "-c", str(tmp_path / "config.yaml"), "-o", str(out), "-q"]
    command.append("--overwrite")  # each call a new run
    path = os.pathsep.join([str(tmp_path / "site"), SOURCE])
    done = subprocess.run(
        command, env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True
    )
    values = [r.get("politeness") for r in read_records(out)] if done.returncode == 0 else []
    return done.returncode, done.stderr, values


def _install_politeness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    site.mkdir()
    entries = "politeness = graphrag_eval_politeness:Politeness\n"
    install_plugin(site, monkeypatch, "graphrag_eval_politeness", POLITENESS, entries)


def test_a_plugin_metric_with_settings_is_configured_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install_politeness(tmp_path, monkeypatch)

    configured = _evaluate_in_a_process(
        tmp_path, "metrics: [politeness]\npoliteness:\n  word: A1\n"
    )
    defaults = _evaluate_in_a_process(tmp_path, "metrics: [politeness]\n")
    misspelt = _evaluate_in_a_process(tmp_path, "politeness:\n  wrod: A1\n")

    assert configured == (0, "", [pytest.approx(0.0), pytest.approx(1.0)])
    assert defaults == (0, "", [pytest.approx(1.0), pytest.approx(1.0)])
    assert misspelt[0] == 2
    assert misspelt[1].endswith("politeness.wrod: unknown key (did you mean 'word'?)\n")


def test_a_plugin_metric_with_settings_is_configured_from_the_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install_politeness(tmp_path, monkeypatch)
    reference, responses = write_answered(tmp_path, 2, "Q{i}?", "A{i}", "Yes please, A{i}")
    script = (
        "import json, sys\n"
        "from graphrag_eval import run_evaluation\n"
        "config = {'metrics': ['politeness'], 'politeness': {'word': 'A0'}}\n"
        "results = run_evaluation(sys.argv[1], sys.argv[2], config)\n"
        "print(json.dumps([result['politeness'] for result in results]))\n"
    )
    path = os.pathsep.join([str(tmp_path / "site"), SOURCE])
    done = subprocess.run(
        [sys.executable, "-c", script, str(reference), str(responses)],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
    )

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [pytest.approx(1.0), pytest.approx(0.0)]
