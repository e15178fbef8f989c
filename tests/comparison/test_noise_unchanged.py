"""Without judge repeats in either run, ``graphrag-eval compare`` writes what it wrote before
the noise-aware comparison existed: its text, JSON and HTML outputs of two saved runs are
byte for byte those the earlier code wrote of them (``data/no_repeats/expected.*``), the
HTML page's chart ids and date aside (docs/report.md, "Judge noise in a comparison")."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from graphrag_eval.cli import main

DATA = Path(__file__).parent / "data" / "no_repeats"


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("baseline", "candidate"):
        shutil.copytree(DATA / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)  # the runs are named as the expected outputs name them
    return tmp_path


def _stable_html(text: str) -> str:
    """The page without what changes on every rendering: chart ids and the date."""
    text = re.sub(r"chart-[0-9a-f-]{36}", "chart-ID", text)
    text = re.sub(r"20\d\d-\d\d-\d\d( \d\d:\d\d UTC)?", "DATE", text)
    return text


def test_json_is_unchanged(runs: Path) -> None:
    assert main(["compare", "baseline", "candidate", "--json", "-o", "got.json"]) == 0
    assert (runs / "got.json").read_bytes() == (DATA / "expected.json").read_bytes()


def test_text_is_unchanged(runs: Path) -> None:
    assert main(["compare", "baseline", "candidate", "-o", "got.txt", "--top", "3"]) == 0
    assert (runs / "got.txt").read_bytes() == (DATA / "expected.txt").read_bytes()


def test_html_is_unchanged(runs: Path) -> None:
    assert main(["compare", "baseline", "candidate", "--html", "got.html", "-o", "x.json"]) == 0
    got = _stable_html((runs / "got.html").read_text(encoding="utf-8"))
    assert got == _stable_html((DATA / "expected.html").read_text(encoding="utf-8"))
    assert "judge" not in got.lower()  # no word of repeats on a page without any
