"""Two identical runs write byte-identical ``aggregates.yaml``, whatever order their questions
finished in and whatever the process's string hashes (``PYTHONHASHSEED``) are."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import yaml

from judge_server import JudgeServer, default_judge

QUESTIONS = [f"q{number}" for number in range(1, 7)]
TOOLS = ["retrieval", "autocomplete_search", "sparql_query", "now", "lookup", "fetch"]
INPUTS = ["reference.yaml", "responses.jsonl", "-c", "config.yaml", "--no-report"]
HOLD_S = 30  # at most: the held reply waits for the others, it does not race them


class HoldingJudge:
    """The default judge, which answers about the ``held`` question's answer only after it
    answered about every other question: so that question finishes last (when the run asks
    about all of them at once), and ``finished`` records the order the replies went out."""

    def __init__(self) -> None:
        self.held = ""
        self.finished: list[str] = []
        self._others_done = threading.Condition()

    def __call__(self, body: dict[str, Any]) -> str:
        text = json.dumps(body.get("messages"))
        asked = next(qid for qid in QUESTIONS if f"{qid.upper()} answer" in text)
        with self._others_done:
            if asked == self.held:
                self._others_done.wait_for(
                    lambda: len(set(self.finished) - {asked}) == len(QUESTIONS) - 1, HOLD_S
                )
            self.finished.append(asked)
            self._others_done.notify_all()
        return default_judge(body)


def write_inputs(folder: Path) -> None:
    """Six questions whose responses call different tools in different orders (what the
    aggregates' step counts are keyed by)."""
    reference = [
        {
            "template_id": template,
            "questions": [
                {"id": qid, "question_text": f"{qid}?", "reference_answer": f"{qid.upper()} answer"}
                for qid in QUESTIONS[start::2]
            ],
        }
        for start, template in enumerate(("t0", "t1"))
    ]
    responses = [
        {
            "question_id": qid,
            "actual_answer": f"{qid.upper()} answer",
            "actual_steps": [
                {"name": TOOLS[(index + shift) % len(TOOLS)], "status": "success", "output": "x"}
                for shift in range(index % 4 + 2)
            ],
        }
        for index, qid in enumerate(QUESTIONS)
    ]
    (folder / "reference.yaml").write_text(yaml.safe_dump(reference), encoding="utf-8")
    (folder / "responses.jsonl").write_text(
        "".join(json.dumps(item) + "\n" for item in responses), encoding="utf-8"
    )


def evaluate(folder: Path, out: str, hash_seed: str) -> None:
    """``graphrag-eval evaluate`` in a process of its own, with the given string hashes."""
    source = str(Path(__file__).resolve().parents[2] / "src")
    path = os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))
    environment = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "CI")}
    done = subprocess.run(
        [sys.executable, "-m", "graphrag_eval.cli", "evaluate", *INPUTS, "-o", out, "-q"],
        cwd=folder,
        env={
            **environment,
            "PYTHONPATH": path,
            "PYTHONHASHSEED": hash_seed,
            "XDG_CACHE_HOME": str(folder / "xdg-cache"),
        },
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_two_identical_runs_write_the_same_aggregates(tmp_path: Path) -> None:
    write_inputs(tmp_path)
    judge = HoldingJudge()
    orders = []
    with JudgeServer(responder=judge) as server:
        config = {
            "metrics": ["steps_score", "answer_correctness"],
            "llm": {
                "generation": {
                    "provider": "openai-compatible",
                    "base_url": server.url,
                    "model": "gpt-4o-mini",
                },
                "cache": {"enabled": False},
                "max_concurrency": 8,
            },
        }
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        for out, held, hash_seed in (("first", "q1", "1"), ("second", "q6", "2")):
            judge.held = held
            judge.finished = []
            evaluate(tmp_path, out, hash_seed)
            orders.append(judge.finished)
    # The runs asked in the same way but finished in different orders ...
    assert orders[0][-1] == "q1" and orders[1][-1] == "q6"
    first = (tmp_path / "first" / "aggregates.yaml").read_bytes()
    second = (tmp_path / "second" / "aggregates.yaml").read_bytes()
    # ... and the step counts, keyed by tool, are in the order the tools first appear.
    steps = yaml.safe_load(first)["micro"]["steps"]
    assert list(steps["once_per_sample"]) == list(steps["total"])
    assert first == second
