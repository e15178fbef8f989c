"""Fixtures of the metric tests: no test may use ambient LLM settings (docs/llm.md)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _no_ambient_llm_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test may pick up a real key or write to the user's cache directory."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GRAPHRAG_EVAL_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
