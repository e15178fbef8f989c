"""docs/extending.md runs as written: its custom LLM-judged metric and its step rule for a tool
of the user's own, registered from user code, evaluated against the test judge server."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval.metrics import unregister_metric
from graphrag_eval.steps import unregister_step_rule

from judge_server import JudgeServer

StartJudge = Callable[..., JudgeServer]

DOC = Path(__file__).parents[2] / "docs" / "extending.md"


def code_blocks(language: str) -> list[str]:
    """The doc's fenced blocks of ``language``, in order."""
    text = DOC.read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


def politeness_judge(body: dict[str, Any]) -> str | None:
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if "how polite" not in prompt or "addressed to customers" not in prompt:
        return None  # not the example's metric, or its config section was not applied
    return json.dumps({"score": 4, "reason": "Courteous."})


def test_the_extending_example_runs_as_written(
    judge: StartJudge,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = judge(responder=politeness_judge)
    [config] = code_blocks("yaml")
    local_judge = "http://localhost:8000/v1"
    assert local_judge in config
    (tmp_path / "config.yaml").write_text(config.replace(local_judge, server.url), "utf-8")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "extending_example"}

    try:
        for code in code_blocks("python"):
            exec(compile(code, str(DOC), "exec"), namespace)
    finally:
        unregister_metric("politeness")
        unregister_step_rule("weather_temperature")

    assert capsys.readouterr().out == "1.0 4 Courteous.\n"
    assert server.count() == 1
