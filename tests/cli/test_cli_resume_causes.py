"""Which items ``--resume`` evaluates again (src/graphrag_eval/checkpoint.py): those whose
judged metrics failed because the judge or embedding endpoint gave no reply (unreachable,
refused, failing) or the cost limit stopped the call, counted by cause in the summary; never
an item whose failure the same call would repeat."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_eval.results.checkpoint import REDO_CAUSES, endpoint_cause

from builders import evaluate_cli, read_results, write_answered, write_judge_config
from judge_server import Faults, JudgeServer, closed_port_url

pytestmark = pytest.mark.usefixtures("no_real_key")

QUESTIONS = 4


def run(folder: Path, url: str, *extra: str, **llm: Any) -> int:
    reference, responses = write_answered(
        folder, QUESTIONS, "Which units are in S{i}?", "U{i}", actual_answer="S{i} holds U{i}."
    )
    config = write_judge_config(folder, url, **{"max_retries": 1, **llm})
    return evaluate_cli(
        reference, responses, "-c", config, "-o", folder / "out", "--no-report", *extra
    )


def answer_errors(folder: Path) -> list[str]:
    records = read_results(folder / "out").values()
    return [r["answer_eval_error"] for r in records if "answer_eval_error" in r]


def answer_kinds(folder: Path) -> set[str]:
    """The kinds the records give answer_correctness's failures (what --resume reads; the
    messages are read only in records saved before kinds were)."""
    records = read_results(folder / "out").values()
    return {r["failure_kinds"]["answer_correctness"] for r in records if "answer_eval_error" in r}


def test_an_unreachable_judge_is_a_cause_to_redo(tmp_path: Path) -> None:
    run(tmp_path, closed_port_url(), "-q")
    errors = answer_errors(tmp_path)
    assert len(errors) == QUESTIONS
    assert {endpoint_cause(error) for error in errors} == {"unreachable"}
    assert answer_kinds(tmp_path) == {"unreachable"}


def test_a_refusing_judge_is_a_cause_to_redo(tmp_path: Path) -> None:
    with JudgeServer(api_key="sk-the-right-key") as server:
        run(tmp_path, server.url, "-q", generation={
            "provider": "openai-compatible", "base_url": server.url, "api_key": "sk-wrong"
        })  # fmt: skip
    errors = answer_errors(tmp_path)
    assert {endpoint_cause(error) for error in errors} == {"refused"}
    assert answer_kinds(tmp_path) == {"refused"}


def test_a_failing_judge_is_a_cause_to_redo(tmp_path: Path) -> None:
    with JudgeServer(faults=Faults(server_error=1.0)) as server:
        run(tmp_path, server.url, "-q")
    errors = answer_errors(tmp_path)
    # 5xx after the retries (or a breaker opened by them): no reply came, so call again.
    assert None not in {endpoint_cause(error) for error in errors}
    assert answer_kinds(tmp_path) <= {"failed", "unreachable"}


def test_the_cost_limit_is_a_cause_to_redo(tmp_path: Path) -> None:
    with JudgeServer() as server:
        run(tmp_path, server.url, "-q", "--max-cost", "0.000001", max_concurrency=1)
    limited = [e for e in answer_errors(tmp_path) if "cost limit" in e]
    assert limited
    assert {endpoint_cause(error) for error in limited} == {"budget"}
    assert "budget" in answer_kinds(tmp_path)


@pytest.mark.parametrize(
    "faults", [Faults(malformed=1.0), Faults(truncated=1.0)], ids=["malformed", "truncated"]
)
def test_a_bad_reply_is_no_cause_to_redo(tmp_path: Path, faults: Faults) -> None:
    with JudgeServer(faults=faults) as server:
        run(tmp_path, server.url, "-q")
    errors = answer_errors(tmp_path)
    assert {endpoint_cause(error) for error in errors} == {None}
    assert answer_kinds(tmp_path) == {"reply"}


def test_a_reply_the_judge_would_repeat_is_no_cause_to_redo() -> None:
    assert endpoint_cause("reference_answer is blank; not sent to the judge") is None
    assert endpoint_cause("the judge prompt is about 9000 tokens, over the limit of 8000") is None


def _malformed_for_q0(body: dict[str, Any]) -> str | None:
    # The re-ask after a malformed reply carries the first prompt too.
    prompts = [message["content"] for message in body["messages"]]
    return "no verdict here" if any("S0 holds U0" in text for text in prompts) else None


def test_resuming_a_finished_run_evaluates_nothing_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A question whose judge reply was malformed is kept by --resume, not judged again."""
    with JudgeServer(responder=_malformed_for_q0) as server:
        run(tmp_path, server.url, "-q")
        assert "answer_eval_error" in read_results(tmp_path / "out")["q0"]
        first = read_results(tmp_path / "out")
        before = server.count()
        capsys.readouterr()

        run(tmp_path, server.url, "--resume")

        assert server.count() == before  # nothing was asked again
    printed = capsys.readouterr().out
    assert f"resumed: kept {QUESTIONS} finished items, evaluated 0\n" in printed
    assert "again" not in printed
    assert read_results(tmp_path / "out") == first
    summary = yaml.safe_load((tmp_path / "out" / "run.yaml").read_text())
    assert summary["resumed"] == {"kept": QUESTIONS, "evaluated_again": 0}


def test_resume_counts_the_items_it_evaluates_again_by_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = closed_port_url()
    run(tmp_path, url, "-q")
    capsys.readouterr()
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with JudgeServer(port=port):
        assert run(tmp_path, url, "--resume") == 0

    line = next(
        line for line in capsys.readouterr().out.splitlines() if line.startswith("resumed:")
    )
    assert line == (
        f"resumed: kept 0 finished items, evaluated {QUESTIONS}, {QUESTIONS} of them again "
        f"({QUESTIONS} because {REDO_CAUSES['unreachable']})"
    )
    assert all("answer_f1" in record for record in read_results(tmp_path / "out").values())
