"""Ctrl-C and SIGTERM while a command imports a module it needs late (the report writer's
Jinja, imported once the results are written: docs/security.md, "Signals"), in a real
process. The module is shadowed on PYTHONPATH by one that reads a named pipe: its import
blocks until the test has opened the pipe's other end, then the signal arrives; a module that
swallows the interruption (a bare ``except``, a ``__del__``) must not make the run go on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from builders import write_answered

SWALLOWING = {
    "no swallowing": "open(PIPE).read()\n",
    "a bare except": "try:\n    open(PIPE).read()\nexcept BaseException:\n    pass\n",
    "__del__": ("class Reader:\n    def __del__(self):\n        open(PIPE).read()\n\n\nReader()\n"),
}


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _evaluate_interrupted_in_import(
    tmp_path: Path, module: str, swallowing: str, signum: signal.Signals
) -> tuple[int, str, Path]:
    """``graphrag-eval evaluate`` with ``module`` shadowed (the shadow loads the real one
    once the pipe is read); ``signum`` is sent once the import has opened the pipe."""
    reference, responses = write_answered(tmp_path, 2)
    out = tmp_path / "out"
    pipe = tmp_path / "importing"
    os.mkfifo(pipe)
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    code = (
        f"import sys\n{SWALLOWING[swallowing]}"
        f"sys.path.remove(SHADOW)\ndel sys.modules[{module!r}]\nimport {module}\n"
    )
    (shadow / f"{module}.py").write_text(f"PIPE = {str(pipe)!r}\nSHADOW = {str(shadow)!r}\n{code}")
    path = [str(shadow), *filter(None, [os.environ.get("PYTHONPATH")])]
    command = ["evaluate", str(reference), str(responses), "-o", str(out), "-q"]
    process = subprocess.Popen(
        [sys.executable, "-m", "graphrag_eval.cli", *command],
        preexec_fn=_default_sigint,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(path)},
    )
    with pipe.open("w"):  # returns once the import has opened the pipe to read it
        process.send_signal(signum)
        _, err = process.communicate(timeout=120)
    return process.returncode, err, out


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
    code, err, out = _evaluate_interrupted_in_import(tmp_path, "jinja2", swallowing, signum)
    assert code == exit_code
    assert err.startswith("interrupted; continue with: graphrag-eval evaluate ")
    assert err.endswith(" --resume\n") and err.count("\n") == 1
    assert (out / "results.jsonl").exists() and not (out / "report.html").exists()
