"""What starting the command line imports: numpy only for ``compare`` (docs/benchmarks.md)."""

from __future__ import annotations

import subprocess
import sys


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter has imported after running ``code``."""
    printed = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(printed.split())


def test_the_commands_import_without_numpy() -> None:
    # Every command is imported when the command line starts: only compare's run needs numpy.
    modules = _modules_after("from graphrag_eval.cli import app")
    assert "graphrag_eval.cli.compare" in modules
    assert "numpy" not in modules
    assert "graphrag_eval.comparison.compare" not in modules


def test_compare_still_imports_what_it_needs() -> None:
    modules = _modules_after("from graphrag_eval.comparison.compare import compare_results")
    assert "numpy" in modules
