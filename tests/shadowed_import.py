"""``graphrag-eval evaluate`` in a real process, interrupted by a real signal while it imports
a module (docs/security.md, "Signals"): the module is shadowed on PYTHONPATH by one that reads
a named pipe, so its import blocks until the test has opened the pipe's other end; the signal
is sent then, with no sleep racing the process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from builders import write_answered


def default_sigint() -> None:
    """Ctrl-C's default handling in the child (a background job may inherit it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def signal_during_import(
    tmp_path: Path,
    module: str,
    code: str,
    signum: signal.Signals,
    *,
    questions: int = 1,
    options: Sequence[str] = (),
) -> tuple[int, str, Path]:
    """``graphrag-eval evaluate`` (with ``options``) on ``questions`` answered questions, with
    ``module`` shadowed by ``code`` (which has ``PIPE``, the named pipe, and ``SHADOW``, its
    folder); ``signum`` is sent once the import has opened the pipe. The exit code, stderr and
    the output directory."""
    reference, responses = write_answered(tmp_path, questions)
    out = tmp_path / "out"
    pipe = tmp_path / "importing"
    os.mkfifo(pipe)
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / f"{module}.py").write_text(f"PIPE = {str(pipe)!r}\nSHADOW = {str(shadow)!r}\n{code}")
    path = [str(shadow), *filter(None, [os.environ.get("PYTHONPATH")])]
    command = ["evaluate", str(reference), str(responses), "-o", str(out), *options]
    process = subprocess.Popen(
        [sys.executable, "-m", "graphrag_eval.cli", *command],
        preexec_fn=default_sigint,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(path)},
    )
    with pipe.open("w"):  # returns once the import has opened the pipe to read it
        process.send_signal(signum)
        _, err = process.communicate(timeout=120)
    return process.returncode, err, out
