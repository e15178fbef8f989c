"""Every ``sh`` example of the "Export and filters" section of the docs runs as written, in
order, on the bundled example data (that section of docs/integrations.md)."""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from doc_sections import section_text

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Export and filters"


def _section() -> str:
    return section_text(ROOT / "docs" / "integrations.md", SECTION.removeprefix("## "))


def _blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```$", text, flags=re.DOTALL | re.MULTILINE)


def _shims(folder: Path) -> Path:
    """``graphrag-eval`` and ``python`` as the examples call them: this interpreter, with the
    package of this checkout."""
    folder.mkdir()
    for name, command in (("graphrag-eval", "-m graphrag_eval.cli "), ("python", "")):
        shim = folder / name
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" {command}"$@"\n')
        shim.chmod(0o755)
    return folder


def test_every_example_runs(tmp_path: Path) -> None:
    blocks = _blocks(_section())
    assert len(blocks) >= 6
    work = tmp_path / "work"
    shutil.copytree(ROOT / "examples", work / "examples")
    env = {
        **os.environ,
        "PATH": f"{_shims(tmp_path / 'bin')}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT / "src"),
        "NO_COLOR": "1",
    }
    outputs = []
    for block in blocks:
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", block],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, f"{block}\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr, done.stderr
        outputs.append(done.stdout + done.stderr)
    # What the examples say they show.
    assert "steps_score" in outputs[0]
    assert "c10bbc8dce98a4b8832d125134a16153" in outputs[1]
    assert "double" in outputs[2] and "int64" in outputs[2] and "tokens" in outputs[2]
    assert "templates:" in outputs[3] and "list_all_substations_within_bidding_zone" in outputs[3]
    assert "1 question in both runs" in outputs[4]
    with (work / "transformers.csv").open(newline="", encoding="utf-8") as stream:
        assert len(list(csv.DictReader(stream))) == 2
    assert "did you mean c10bbc8dce98a4b8832d125134a16153?" in outputs[5]
    assert "exit 2" in outputs[5] and not (work / "one.csv").exists()
