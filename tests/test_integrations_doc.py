"""Every ``sh`` example of the "Traces as responses" section of docs/integrations.md runs as
written, in order, from a directory that has the repository's ``examples/`` (so what they
write stays in a temporary directory), with the ``graphrag-eval`` and ``python`` of this
environment. The page's other sections have their own tests (tests/testing/
test_docs_examples.py, tests/results/test_export_docs.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import graphrag_eval
from doc_sections import section_blocks

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "integrations.md"


def sh_blocks() -> list[str]:
    return section_blocks(PAGE, "Traces as responses")


def test_the_page_has_an_example_per_trace_format() -> None:
    text = "\n".join(sh_blocks())
    for name in (
        "openai-chat",
        "openai-responses",
        "langchain",
        "otlp-openinference",
        "otlp-genai",
    ):
        assert f"examples/traces/{name}" in text


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("integrations")
    (directory / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    return directory


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    source = str(Path(graphrag_eval.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (source, env.get("PYTHONPATH")) if p)
    for name in ("GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS"):  # the page's own CI examples say
        env.pop(name, None)
    return env


@pytest.mark.parametrize("index", range(len(sh_blocks())))
def test_every_sh_example_runs_as_written(workdir: Path, index: int) -> None:
    block = sh_blocks()[index]
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=workdir,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"example {index + 1}:\n{block}\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr
