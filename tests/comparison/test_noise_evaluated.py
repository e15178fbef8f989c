"""Two runs judged three times per question by ``graphrag-eval evaluate --repeats 3`` against
the test judge server (production client), compared by ``graphrag-eval compare``: the judged
metric's interval is two-level and its noise is the server's (docs/report.md, "Judge noise in
a comparison")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from graphrag_eval.cli import main

from builders import evaluate_cli, read_results, write_judge_config
from judge_server import JudgeServer

pytestmark = pytest.mark.usefixtures("no_real_key")

NOISE = 10  # the server moves a score by 0, +10, -10 on the 1st, 2nd, 3rd same request
QUESTIONS = 8


def evaluate(folder: Path, url: str, claims: int) -> Path:
    """A run whose answers name ``claims`` of their question's 4 reference claims, judged by
    factual_accuracy three times per question."""
    folder.mkdir()
    questions = [
        {
            "id": f"q{i}",
            "question_text": f"Which transformers are in substation S{i}?",
            "reference_answer": ", ".join(f"T{i}{c}" for c in "abcd"),
        }
        for i in range(QUESTIONS)
    ]
    reference = folder / "reference.yaml"
    reference.write_text(yaml.safe_dump([{"template_id": "t", "questions": questions}]))
    responses = folder / "responses.jsonl"
    responses.write_text(
        "".join(
            json.dumps(
                {
                    "question_id": f"q{i}",
                    "actual_answer": f"Substation S{i} has "
                    + ", ".join(f"T{i}{c}" for c in "abcd"[:claims])
                    + ".",
                }
            )
            + "\n"
            for i in range(QUESTIONS)
        )
    )
    config = write_judge_config(folder, url, {"metrics": ["factual_accuracy"]})
    out = folder / "out"
    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "--repeats", "3") == 0
    return out


def test_compare_of_two_repeated_runs_includes_the_judges_noise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with JudgeServer(repeat_noise=NOISE) as server:
        run_a = evaluate(tmp_path / "a", server.url, claims=1)
        run_b = evaluate(tmp_path / "b", server.url, claims=2)
    capsys.readouterr()
    records = read_results(run_b)
    key = next(name for name in records["q0"] if name.endswith("_repeats"))
    score = key.removesuffix("_repeats")
    assert main(["compare", str(run_a), str(run_b), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    change = data["metrics"][score]
    noise = change["noise"]
    assert (noise["repeats_a"], noise["repeats_b"]) == (3, 3)
    assert data["judge_repeats"] == {"a": 3, "b": 3, "note": data["judge_repeats"]["note"]}
    # Each question's repeats in each run: its score, +10 and -10 points on the key's scale.
    spread = [value for value in records["q0"][key] if value is not None]
    variance = sum((value - sum(spread) / 3) ** 2 for value in spread) / 2
    assert variance > 0
    assert noise["judge_variance"] == pytest.approx(2 * variance / 3 / QUESTIONS)
    # The same answers' scores differ by the same amount on every question: the questions
    # alone give that point; the judge's noise makes the two-level interval wide around it.
    assert noise["one_level_ci_low"] == pytest.approx(noise["one_level_ci_high"])
    assert noise["judge_share"] == pytest.approx(1.0)
    assert change["ci_low"] < change["difference"] < change["ci_high"]
    # A fall of one claim on every question is far beyond this noise: still significant.
    assert change["change"] == "better"
    assert noise["detectable_difference"] < change["difference"]
