"""A batch run through Anthropic's Message Batches stopped while its batch is in progress
(``kill -9`` of a real ``graphrag-eval evaluate --batch`` process, while the test server holds
the batch ``in_progress``), then ``--resume``: the checkpointed Message Batch is polled again,
no request is submitted twice (the server counts each custom id), and the values are those of
a synchronous run (docs/llm.md, "Anthropic Message Batches")."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from llm.test_batch_anthropic import KEY, MESSAGES, QUESTIONS, values, write_config, write_inputs

from anthropic_server import AnthropicServer
from builders import evaluate_cli

pytestmark = pytest.mark.usefixtures("no_real_key")


def test_a_run_killed_while_polling_resumes_without_submitting_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with AnthropicServer(api_key=KEY) as server:
        sync = tmp_path / "sync"
        sync.mkdir()
        reference, responses = write_inputs(sync)
        config = write_config(sync, server)
        assert evaluate_cli(reference, responses, "-c", config, "-o", sync / "out", "-q") == 0
        server.state.requests.clear()

        batches = server.batches
        batches.hold()
        config = write_config(tmp_path, server)
        out = tmp_path / "out"
        arguments = [reference, responses, "-c", config, "-o", out, "-q", "--batch"]
        command = [sys.executable, "-m", "graphrag_eval.cli", "evaluate", *map(str, arguments)]
        process = subprocess.Popen(command, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            # Once the batch is polled its id is in the checkpoint (a bound, not a timing).
            assert batches.wait_for_polls(1, timeout_s=120)
            assert process.poll() is None
        finally:
            process.send_signal(signal.SIGKILL)
            assert process.wait() == -signal.SIGKILL
        checkpoint = (out / "batches.json").read_text()
        [batch] = json.loads(checkpoint)["batches"]
        assert batch["id"] == "msgbatch_test000001" and batch["state"] == "running"
        assert KEY not in checkpoint

        batches.release()
        assert evaluate_cli(*arguments, "--resume") == 0

        assert values(out) == values(sync / "out")
        assert [r for r in server.requests if r.path == MESSAGES] == []
        # The first batch polled again and collected; only the verdicts in a new one.
        assert batches.created == 2
        assert len(batches.submissions) == 3 * QUESTIONS
        assert set(batches.submissions.values()) == {1}  # no request submitted twice
