"""A batch run stopped while the provider works (kill -9 or SIGTERM of a real
``graphrag-eval evaluate --batch`` process, while the test server holds its batch
``in_progress``), then ``--resume``: the batch ids checkpointed in the output directory are
polled again, no request is submitted twice (the server counts each custom id), and the
values are those of an uninterrupted synchronous run (docs/llm.md, batch mode)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from llm.test_batch import QUESTIONS, judged, synchronous_run, write_config

from builders import evaluate_cli
from judge_server import JudgeServer

pytestmark = pytest.mark.usefixtures("no_real_key")


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_a_run_stopped_while_polling_resumes_without_submitting_twice(
    tmp_path: Path, stop: signal.Signals
) -> None:
    with JudgeServer() as server:
        (tmp_path / "sync").mkdir()
        expected = synchronous_run(tmp_path, server)
        api = server.batch_api
        api.hold = True
        config = write_config(tmp_path, server.url)
        out = tmp_path / "out"
        arguments = [
            str(tmp_path / "reference.yaml"),
            str(tmp_path / "responses.jsonl"),
            "-c",
            str(config),
            "-o",
            str(out),
            "-q",
            "--batch",
        ]
        command = [sys.executable, "-m", "graphrag_eval.cli", "evaluate", *arguments]
        process = subprocess.Popen(command, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            # Once the batch is polled its id is in the checkpoint (written before the first
            # poll); a bound for a broken run, not a timing.
            polled = api.wait_for(lambda state: state.polls >= 1, timeout_s=120)
            assert polled and process.poll() is None
        finally:
            process.send_signal(stop)
            code = process.wait()
        assert code == (-signal.SIGKILL if stop == signal.SIGKILL else 143)
        checkpoint = json.loads((out / "batches.json").read_text())
        [batch] = checkpoint["batches"]
        assert batch["id"] == "batch_1" and batch["state"] == "running"
        assert sorted(batch["custom_ids"]) == sorted(api.batches[0])
        assert "sk-" not in (out / "batches.json").read_text()

        api.release()
        assert evaluate_cli(*arguments, "--resume") == 0

        assert judged(out) == expected
        assert server.count("/chat/completions") == 0
        # batch_1 polled again and collected; only the verdicts went in a new batch.
        assert [len(ids) for ids in api.batches] == [2 * QUESTIONS, QUESTIONS]
        assert set(api.submitted.values()) == {1}  # no request submitted twice
