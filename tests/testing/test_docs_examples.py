"""Every ``sh`` block of the pytest and CI sections of the integrations page
(docs/integrations.md) runs as written: from a
directory that holds the bundled ``examples/``, with the command line and pytest of this
environment on the PATH and the plugin's entry point as pyproject.toml declares it."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from doc_sections import section_blocks

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "integrations.md"


def sh_blocks() -> list[str]:
    return section_blocks(PAGE, "pytest", "CI")


def entry_point_site(folder: Path) -> Path:
    """A folder with the metadata of a distribution declaring pyproject.toml's ``pytest11``
    entry points (the package itself may not be installed with them)."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    dist = folder / "graphrag_eval_docs_check-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: graphrag-eval-docs-check\nVersion: 0\n"
    )
    lines = "".join(f"{name} = {value}\n" for name, value in declared["pytest11"].items())
    (dist / "entry_points.txt").write_text("[pytest11]\n" + lines)
    return folder


def test_the_page_has_its_examples() -> None:
    assert len(sh_blocks()) == 2


@pytest.mark.parametrize("index", range(len(sh_blocks())))
def test_each_example_runs_as_written(index: int, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "examples").symlink_to(ROOT / "examples")
    site = entry_point_site(tmp_path / "site")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT / "src")]),
    }
    for name in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "GITHUB_STEP_SUMMARY"):
        env.pop(name, None)

    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", sh_blocks()[index]],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert done.returncode == 0, done.stdout + done.stderr
