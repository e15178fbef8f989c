"""``llm.repeats`` and ``--repeats`` end to end (docs/llm.md, "Repeats and judge noise";
docs/outputs.md, "Repeats"): the command line against the test judge server, through the
production client. The server's ``repeat_noise`` moves each score by 0, +10 and -10 on the
first, second and third time the same request comes, so three repeats of a score ``s`` are
``{s, s + 10, s - 10}`` whatever order they arrive in, and a ``CORRECT`` classification
becomes ``WRONG`` the third time."""

from __future__ import annotations

import json
import math
import statistics
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_eval import compute_aggregates

from builders import dataset, evaluate_cli, question, read_results, response, write_judge_config
from judge_server import MALFORMED_REPLY, Faults, JudgeServer, closed_port_url

pytestmark = pytest.mark.usefixtures("no_real_key")

MakeConfig = Callable[..., dict[str, Any]]
"""The ``make_config`` fixture (conftest)."""
RunWithEngine = Callable[..., tuple[Any, Any]]
"""The ``run_with_engine`` fixture (conftest)."""

NOISE = 10
JUDGED = ["factual_accuracy", "answer_classification"]
ANSWERS = {
    "q0": "Substation S0 has T0a.",  # 1 of the 4 reference claims: correctness 25
    "q1": "Substation S1 has T1a, T1b, T1c.",  # 3 of 4: correctness 75
}


def write_inputs(folder: Path, answers: dict[str, str] = ANSWERS) -> tuple[Path, Path]:
    """``reference.yaml`` (each question with four reference claims, and one reference step
    so the deterministic ``steps_score`` runs) and ``responses.jsonl``."""
    step = {"name": "lookup", "args": {"q": "x"}, "output": "x"}
    questions = [
        {
            "id": qid,
            "question_text": f"Which transformers are in substation S{qid[1:]}?",
            "reference_answer": ", ".join(f"T{qid[1:]}{c}" for c in "abcd"),
            "reference_steps": [[step]],
        }
        for qid in answers
    ]
    reference = folder / "reference.yaml"
    reference.write_text(yaml.safe_dump([{"template_id": "t", "questions": questions}]))
    responses = folder / "responses.jsonl"
    lines = [
        json.dumps({"question_id": qid, "actual_answer": text, "actual_steps": [step]})
        for qid, text in answers.items()
    ]
    responses.write_text("\n".join(lines) + "\n")
    return reference, responses


def run(
    folder: Path,
    url: str,
    *extra: str,
    out: str = "out",
    metrics: list[str] | None = None,
    answers: dict[str, str] = ANSWERS,
    **llm: Any,
) -> int:
    reference, responses = write_inputs(folder, answers)
    chosen = [*(metrics or JUDGED), "steps_score", "semantic_similarity"]
    config = write_judge_config(folder, url, {"metrics": chosen}, **llm)
    return evaluate_cli(reference, responses, "-c", config, "-o", folder / out, *extra)


def chats(server: JudgeServer) -> int:
    return server.count("/chat/completions")


def aggregates(folder: Path, out: str = "out") -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((folder / out / "aggregates.yaml").read_text())
    return loaded


def test_three_repeats_cost_three_times_the_judged_calls_and_nothing_more(
    tmp_path: Path,
) -> None:
    once, thrice = tmp_path / "once", tmp_path / "thrice"
    once.mkdir(), thrice.mkdir()
    with JudgeServer() as server:
        assert run(once, server.url, "-q") == 0
        judged_once, embedded_once = chats(server), server.count("/embeddings")
        server.reset()
        assert run(thrice, server.url, "-q", "--repeats", "3") == 0
        assert chats(server) == 3 * judged_once == 3 * len(ANSWERS) * len(JUDGED)
        # The embedding metric and the deterministic ones are computed once.
        assert server.count("/embeddings") == embedded_once
    for record in read_results(thrice / "out").values():
        assert "steps_score_repeats" not in record
        assert "semantic_similarity_repeats" not in record
        assert len(record["factual_accuracy_percentage_repeats"]) == 3
        assert len(record["answer_classification_repeats"]) == 3


def test_a_rerun_takes_every_repeat_from_the_cache(tmp_path: Path) -> None:
    with JudgeServer(repeat_noise=NOISE) as server:
        assert run(tmp_path, server.url, "-q", repeats=3) == 0
        first = read_results(tmp_path / "out")
        server.reset()
        assert run(tmp_path, server.url, "-q", out="again", repeats=3) == 0
        assert chats(server) == 0
    again = read_results(tmp_path / "again")
    for qid, record in first.items():
        # The same replies, repeat by repeat (the costs are nominal, so equal too).
        assert again[qid] == record


def test_repeat_zero_keeps_the_cache_key_of_a_run_without_repeats(tmp_path: Path) -> None:
    with JudgeServer() as server:
        assert run(tmp_path, server.url, "-q") == 0
        without = chats(server)
        server.reset()
        assert run(tmp_path, server.url, "-q", "--repeats", "3", out="three") == 0
        assert chats(server) == 2 * without  # repeat 0 came from the earlier run's cache


def test_keys_and_aggregates_of_a_small_run_by_hand(tmp_path: Path) -> None:
    with JudgeServer(repeat_noise=NOISE) as server:
        assert run(tmp_path, server.url, "-q", "--repeats", "3") == 0
    records = read_results(tmp_path / "out")
    base = {"q0": 25, "q1": 75}
    for qid, score in base.items():
        record = records[qid]
        repeats = record["factual_accuracy_correctness_repeats"]
        assert sorted(repeats) == [score - NOISE, score, score + NOISE]
        assert record["factual_accuracy_correctness"] == pytest.approx(score)
        assert record["factual_accuracy_correctness_repeats_std"] == pytest.approx(NOISE)
        # The headline is the mean of its own repeats (the weighted criteria of each reply).
        percentage = record["factual_accuracy_percentage_repeats"]
        assert record["factual_accuracy_percentage"] == pytest.approx(statistics.fmean(percentage))
        assert record["factual_accuracy_percentage_repeats_std"] == pytest.approx(
            statistics.stdev(percentage)
        )
        # A reason is the first repeat's; the cost is what the three repeats cost.
        assert isinstance(record["factual_accuracy_reason"], str)
        assert "factual_accuracy_reason_repeats" not in record
        assert "factual_accuracy_cost_repeats" not in record
    spread = aggregates(tmp_path)["micro"]["repeats"]["factual_accuracy_correctness"]
    judge_variance = (2 * NOISE**2 + 2 * NOISE**2) / 4  # pooled: 2 degrees of freedom each
    between = statistics.variance([25, 75]) - judge_variance / 3
    assert spread["repeats"] == 3
    assert spread["questions"] == 2
    assert (spread["judged_repeats"], spread["failed_repeats"]) == (6, 0)
    assert spread["judge_variance"] == pytest.approx(judge_variance)
    assert spread["judge_std"] == pytest.approx(NOISE)
    assert spread["between_questions_variance"] == pytest.approx(between)
    assert spread["between_questions_std"] == pytest.approx(math.sqrt(between))
    assert spread["judge_noise_share"] == pytest.approx(judge_variance / (judge_variance + between))
    assert spread["unanimous"] == 0
    assert "pass_hat_k" not in spread  # scores of 0..100: no pass/fail
    # The report: the noise next to the mean, and each question's repeats after its score.
    from graphrag_eval.cli import main  # only where a test runs the command

    assert "judge noise" in (tmp_path / "out" / "report.html").read_text()
    page = tmp_path / "q0.html"
    assert main(["report", str(tmp_path / "out"), "--question", "q0", "-o", str(page)]) == 0
    row = page.read_text().split("factual_accuracy_correctness</td>")[1].split("</td>")[0]
    assert "25.00 (repeats: " in row and "15.00" in row and "35.00" in row
    # Folded again from the saved records, in one pass: the same figures.
    again = compute_aggregates(list(records.values()), tmp_path / "config.yaml")
    assert again["micro"]["repeats"] == aggregates(tmp_path)["micro"]["repeats"]
    # The per-template block folds the same results: the same figures.
    assert aggregates(tmp_path)["per_template"]["t"]["repeats"]["factual_accuracy_correctness"] == (
        spread
    )


def test_pass_hat_k_and_pass_at_k_of_a_pass_fail_metric(tmp_path: Path) -> None:
    answers = {"right": "Substation S1 has T1a, T1b, T1c, T1d.", "wrong": "S2 has nothing."}
    answers_of = {"right": answers["right"], "wrong": answers["wrong"]}
    with JudgeServer(repeat_noise=NOISE) as server:
        code = run(
            tmp_path, server.url, "-q", "--repeats", "3", metrics=["answer_classification"],
            answers={"q1": answers_of["right"], "q2": answers_of["wrong"]},
        )  # fmt: skip
        assert code == 0
    records = read_results(tmp_path / "out")
    # CORRECT twice, WRONG the third time: the commonest label stands.
    assert sorted(records["q1"]["answer_classification_repeats"]) == ["CORRECT", "CORRECT", "WRONG"]
    assert records["q1"]["answer_classification"] == "CORRECT"
    assert records["q2"]["answer_classification_repeats"] == ["WRONG"] * 3
    assert "answer_classification_repeats_std" not in records["q1"]
    spread = aggregates(tmp_path)["micro"]["repeats"]["answer_classification"]
    assert spread["pass_rate"] == pytest.approx(2 / 6)
    assert spread["pass_hat_k"] == 0  # no question passed all three
    assert spread["pass_at_k"] == pytest.approx(1 / 2)  # one passed at least once
    assert spread["unanimous"] == pytest.approx(1 / 2)


def test_one_repeat_changes_nothing_in_the_outputs(tmp_path: Path) -> None:
    with JudgeServer() as server:
        assert run(tmp_path, server.url, "-q", out="default") == 0
        assert run(tmp_path, server.url, "-q", "--repeats", "1", out="one") == 0
    for name in ("results.jsonl", "aggregates.yaml"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "default" / name).read_bytes()
    text = (tmp_path / "one" / "results.jsonl").read_text()
    assert "_repeats" not in text
    assert "repeats" not in aggregates(tmp_path, "one")["micro"]
    assert "judge noise" not in (tmp_path / "one" / "report.html").read_text()
    # run.yaml's config leaves out repeats at their default of 1, as before them.
    saved = yaml.safe_load((tmp_path / "one" / "run.yaml").read_text())
    assert "repeats" not in saved["config"]["llm"]


@pytest.mark.parametrize("value", ["0", "21", "-1", "three", "2.5"])
def test_a_bad_repeats_option_is_a_one_line_error(
    tmp_path: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with JudgeServer() as server:
        assert run(tmp_path, server.url, "--repeats", value) == 2
        assert chats(server) == 0
    error = capsys.readouterr().err.strip()
    assert error.startswith("graphrag-eval: error: --repeats: ")
    assert len(error.splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", [0, 21, "many"])
def test_a_bad_repeats_setting_is_a_config_error(
    tmp_path: Path, value: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(tmp_path, closed_port_url(), repeats=value) == 2
    error = capsys.readouterr().err.strip()
    assert "llm.repeats" in error and "config.yaml" in error
    assert len(error.splitlines()) == 1


def test_temperature_zero_is_said_at_the_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with JudgeServer() as server:
        assert run(tmp_path, server.url, "--repeats", "2") == 0
        cold = capsys.readouterr().err
        warm = {"provider": "openai-compatible", "base_url": server.url, "temperature": 0.7}
        assert run(tmp_path, server.url, "--repeats", "2", out="warm", generation=warm) == 0
        warmed = capsys.readouterr().err
    assert "temperature is 0" in cold and "provider's nondeterminism" in cold
    assert "judged 2 times" in warmed and "temperature is 0" not in warmed


def test_a_failed_repeat_is_counted_and_all_failed_is_a_failure(tmp_path: Path) -> None:
    """Every reply malformed: each repeat fails, so the metric failed on the item."""
    with JudgeServer(faults=Faults(malformed=1.0)) as server:
        code = run(tmp_path, server.url, "-q", "--repeats", "3", metrics=["factual_accuracy"])
    assert code == 3  # failed on every question: the run is incomplete
    for record in read_results(tmp_path / "out").values():
        assert record["factual_accuracy_error"].startswith("all 3 repeats failed: malformed")
        assert "factual_accuracy_percentage" not in record
        assert record["failure_kinds"]["factual_accuracy"] == "reply"


def test_one_failed_repeat_leaves_the_mean_of_the_others_and_says_so(tmp_path: Path) -> None:
    """The second original request of q1's factual accuracy gets a malformed reply, and so
    does its re-ask: exactly one of its repeats fails, whichever arrives second."""
    seen: dict[str, int] = {}
    lock = threading.Lock()  # the server answers in a thread per request

    def responder(body: dict[str, Any]) -> str | None:
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        if "S1" not in users[0] or "Ground truth" not in users[0]:
            return None
        if any("spoiled repeat" in m["content"] for m in body["messages"]):
            return MALFORMED_REPLY + " (spoiled repeat, again)"
        if len(users) == 1:
            with lock:
                seen["q1"] = nth = seen.get("q1", 0) + 1
            if nth == 2:
                return MALFORMED_REPLY + " (spoiled repeat)"
        return None

    with JudgeServer(responder=responder) as server:
        run(tmp_path, server.url, "-q", "--repeats", "3", metrics=["factual_accuracy"])
    record = read_results(tmp_path / "out")["q1"]
    repeats = record["factual_accuracy_correctness_repeats"]
    assert repeats.count(None) == 1 and sorted(r for r in repeats if r is not None) == [75, 75]
    assert record["factual_accuracy_correctness"] == 75
    assert record["factual_accuracy_correctness_repeats_std"] == 0
    assert record["factual_accuracy_error"].startswith("1 of 3 repeats failed: malformed")
    assert record["failure_kinds"]["factual_accuracy"] == "reply"
    spread = aggregates(tmp_path)["micro"]["repeats"]["factual_accuracy_correctness"]
    assert (spread["judged_repeats"], spread["failed_repeats"]) == (5, 1)


def test_resume_judges_the_repeats_the_interrupted_run_could_not(tmp_path: Path) -> None:
    # No judge at first: every repeat of every judged metric fails, unreachable.
    url = closed_port_url()
    assert run(tmp_path, url, "-q", "--repeats", "3", max_retries=0) == 3
    first = read_results(tmp_path / "out")
    assert all(r["failure_kinds"]["factual_accuracy"] == "unreachable" for r in first.values())
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with JudgeServer(repeat_noise=NOISE, port=port) as server:  # the judge is back
        assert run(tmp_path, server.url, "-q", "--repeats", "3", "--resume", max_retries=0) == 0
        assert chats(server) == 3 * len(ANSWERS) * len(JUDGED)
        server.reset()
        # A resumed run must judge as the run it continues: another N is refused.
        assert run(tmp_path, server.url, "-q", "--repeats", "2", "--resume", max_retries=0) == 2
        assert chats(server) == 0
        assert run(tmp_path, server.url, "-q", "--repeats", "3", out="fresh", max_retries=0) == 0
    resumed, fresh = read_results(tmp_path / "out"), read_results(tmp_path / "fresh")
    for qid, record in fresh.items():
        assert resumed[qid] == record


def test_a_dry_run_counts_and_prices_every_repeat(
    server: JudgeServer, make_config: MakeConfig, run_with_engine: RunWithEngine
) -> None:
    reference = dataset(question("q1", answer="T1a, T1b"), question("q2", answer="T2a"))
    responses = [response("q1", actual_answer="T1a"), response("q2", actual_answer="T2a")]
    once = {"metrics": JUDGED, **make_config(server)}
    thrice = {"metrics": JUDGED, **make_config(server, repeats=3)}

    _, single = run_with_engine(reference, responses, once, dry_run=True)
    _, repeated = run_with_engine(reference, responses, thrice, dry_run=True)

    assert server.count() == 0
    plan, plan_once = repeated.stats.plan_dict(), single.stats.plan_dict()
    assert plan["calls"] == 3 * plan_once["calls"] == 3 * len(responses) * len(JUDGED)
    assert plan["cost_usd"] == pytest.approx(3 * plan_once["cost_usd"], rel=1e-3)


def test_resume_asks_again_only_the_repeat_that_got_no_reply(tmp_path: Path) -> None:
    """The second of q1's three identical requests gets a 500 (no retries): that repeat
    fails, the other two are scored; --resume asks that one again, the others come from the
    cache."""
    faults = Faults(fail_second=ANSWERS["q1"])
    llm: dict[str, Any] = {"max_retries": 0}
    with JudgeServer(faults=faults) as server:
        run(tmp_path, server.url, "-q", "--repeats", "3", metrics=["factual_accuracy"], **llm)
        first = read_results(tmp_path / "out")["q1"]
        assert first["factual_accuracy_correctness_repeats"].count(None) == 1
        assert first["factual_accuracy_error"].startswith("1 of 3 repeats failed")
        assert first["failure_kinds"]["factual_accuracy"] == "failed"  # calling again may mend
        server.reset()
        code = run(
            tmp_path, server.url, "-q", "--repeats", "3", "--resume",
            metrics=["factual_accuracy"], **llm,
        )  # fmt: skip
        assert code == 0
        assert chats(server) == 1
    resumed = read_results(tmp_path / "out")["q1"]
    assert resumed["factual_accuracy_correctness_repeats"] == [75, 75, 75]
    assert "factual_accuracy_error" not in resumed and "failure_kinds" not in resumed


def test_failed_repeats_show_in_coverage_the_summary_and_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """q1's second repeat fails (a 500, no retries): q1 keeps a value (the mean of the two
    others), so it is scored, but the failed repeat is counted in coverage, in the terminal's
    failure lines and in the report's coverage table, and the noise text counts it among
    all the run's repeats (6), not among the k (3) of one question."""
    with JudgeServer(faults=Faults(fail_second=ANSWERS["q1"])) as server:
        run(tmp_path, server.url, "--repeats", "3", metrics=["factual_accuracy"], max_retries=0)
    terminal = capsys.readouterr().out
    coverage = aggregates(tmp_path)["micro"]["coverage"]["factual_accuracy_percentage"]
    assert coverage == {"scored": 2, "failed": 0, "skipped": 0, "failed_repeats": 1}
    assert "1 of 3 repeats failed" not in terminal
    assert "1 of 6 repeats failed" in terminal
    assert "factual_accuracy_consistency 2/2, 1 of 6 repeats failed" in " ".join(terminal.split())
    report = (tmp_path / "out" / "report.html").read_text()
    assert "failed repeats" in report and '<td class="num">1</td></tr>' in report
    # Without failures, nothing new is written.
    assert "failed_repeats" not in aggregates(tmp_path)["micro"]["coverage"]["steps_score"]


def test_batch_mode_sends_each_repeat_as_its_own_request(tmp_path: Path) -> None:
    """--batch with --repeats 3: each repeat a line of its own (its own custom id), not one
    request whose reply serves the three repeats."""
    batch: dict[str, Any] = {"batch_provider": "openai", "batch_poll_s": 0.01}
    once, thrice = tmp_path / "once", tmp_path / "thrice"
    once.mkdir(), thrice.mkdir()
    with JudgeServer() as server:
        assert run(once, server.url, "-q", "--batch", "--no-cache", **batch) == 0
        lines_once = sum(len(lines) for lines in server.batch_api.batches)
        server.reset()
        server.batch_api.batches.clear()
        server.batch_api.submitted.clear()
        args = ("-q", "--batch", "--no-cache", "--repeats", "3")
        assert run(thrice, server.url, *args, **batch) == 0
        ids = [one for lines in server.batch_api.batches for one in lines]
        assert len(server.batch_api.batches) == 1  # the repeats batched together
        assert server.count("/chat/completions") == 0
    assert lines_once == len(ANSWERS) * len(JUDGED)
    assert len(ids) == len(set(ids)) == 3 * lines_once
    for record in read_results(thrice / "out").values():
        assert len(record["factual_accuracy_percentage_repeats"]) == 3
