"""Ctrl-C and SIGTERM while a command imports a module it needs late (the report writer's
Jinja, imported once the results are written: docs/security.md, "Signals"), in a real
process. The module is shadowed on PYTHONPATH by one that reads a named pipe: its import
blocks until the test has opened the pipe's other end, then the signal arrives; a module that
swallows the interruption (a bare ``except``, a ``__del__``) must not make the run go on."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from shadowed_import import signal_during_import

SWALLOWING = {
    "no swallowing": "open(PIPE).read()\n",
    "a bare except": "try:\n    open(PIPE).read()\nexcept BaseException:\n    pass\n",
    "__del__": ("class Reader:\n    def __del__(self):\n        open(PIPE).read()\n\n\nReader()\n"),
}


@pytest.mark.parametrize("swallowing", SWALLOWING, ids=list(SWALLOWING))
@pytest.mark.parametrize(
    ("signum", "exit_code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["int", "term"]
)
def test_a_signal_while_the_report_writer_is_imported_stops_the_run(
    tmp_path: Path, swallowing: str, signum: signal.Signals, exit_code: int
) -> None:
    """Jinja is imported when the report is written, after the results: the run stops there
    as anywhere else (the results kept, resumable), even when the module swallowed the
    interruption (it used to go on: exit 0, a report, and 'Exception ignored' with a
    traceback from a ``__del__``)."""
    shadowing = (
        f"import sys\n{SWALLOWING[swallowing]}"
        "sys.path.remove(SHADOW)\ndel sys.modules['jinja2']\nimport jinja2\n"
    )
    code, err, out = signal_during_import(
        tmp_path, "jinja2", shadowing, signum, questions=2, options=["-q"]
    )
    assert code == exit_code
    assert err.startswith("interrupted; continue with: graphrag-eval evaluate ")
    assert err.endswith(" --resume\n") and err.count("\n") == 1
    assert (out / "results.jsonl").exists() and not (out / "report.html").exists()
