"""Batch mode end to end (docs/llm.md, batch mode): ``graphrag-eval evaluate --batch`` against
the test server's OpenAI Files and Batches routes (tests/batch_api.py), through the
production client. The judged values are those of the synchronous run, with no synchronous
judge call; cached requests are not sent; a multi-step metric's requests go in successive
batches; error lines are retried in a later batch; an expired or cancelled batch is an
incomplete run (exit 3, the line with --resume); a judge without a batch API is exit 2
before any request."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_eval.cli.errors import EXIT_INCOMPLETE

from builders import evaluate_cli, read_results, write_answered, write_judge_config
from judge_server import JudgeServer

pytestmark = pytest.mark.usefixtures("no_real_key")

METRICS = ["answer_correctness", "ragas_faithfulness"]
"""One judge call per item, and two in sequence (claims, then their verdicts)."""
QUESTIONS = 6


def write_inputs(folder: Path, count: int = QUESTIONS) -> tuple[Path, Path]:
    """Questions the judge answers in part (T{i}a right, T{i}c wrong), each with a context."""
    return write_answered(
        folder,
        count,
        actual_answer="Substation S{i} has T{i}a, and T{i}c.",
        context="Substation S{i} holds transformer T{i}a.",
    )


def write_config(folder: Path, url: str, **llm: Any) -> Path:
    settings: dict[str, Any] = {
        "embedding": None,
        "batch_provider": "openai",
        "batch_poll_s": 0.01,
        **llm,
    }
    return write_judge_config(folder, url, {"metrics": METRICS}, **settings)


def judged(out: Path) -> dict[str, dict[str, Any]]:
    """Each question's results without what depends on timing, and without each metric's
    ``_cost`` (priced at the provider's batch price in batch mode)."""
    return {
        qid: {
            key: value
            for key, value in record.items()
            if "elapsed" not in key and not key.endswith("_cost")
        }
        for qid, record in read_results(out).items()
    }


def synchronous_run(folder: Path, server: JudgeServer) -> dict[str, dict[str, Any]]:
    reference, responses = write_inputs(folder)
    config = write_config(folder / "sync", server.url, batch_provider=None)
    out = folder / "sync-out"
    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "-q", "--no-cache") == 0
    server.reset()
    return judged(out)


@pytest.fixture
def server(judge: Any) -> JudgeServer:
    started: JudgeServer = judge()
    return started


def test_a_batch_run_gives_the_synchronous_values_without_a_synchronous_call(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "sync").mkdir()
    expected = synchronous_run(tmp_path, server)
    reference, responses = tmp_path / "reference.yaml", tmp_path / "responses.jsonl"
    config = write_config(tmp_path, server.url)
    out = tmp_path / "out"

    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "--batch") == 0

    assert judged(out) == expected
    assert server.count("/chat/completions") == 0  # no synchronous judge call
    api = server.batch_api
    # Statements first, then their verdicts: two batches, each request once.
    assert len(api.batches) == 2
    assert len(api.batches[0]) == 2 * QUESTIONS  # correctness and claims of every item
    assert len(api.batches[1]) == QUESTIONS  # the verdicts on the claims
    assert set(api.submitted.values()) == {1}
    assert all(headers["authorization"] == "Bearer not-needed" for headers in api.headers)
    printed = capsys.readouterr()
    assert "batch batch_1: completed, 12/12 done" in printed.err
    assert f"batch mode (openai): {3 * QUESTIONS} requests in 2 batches" in printed.out
    checkpoint = json.loads((out / "batches.json").read_text())
    assert [batch["id"] for batch in checkpoint["batches"]] == ["batch_1", "batch_2"]
    assert {batch["state"] for batch in checkpoint["batches"]} == {"ended"}


def test_cached_requests_are_not_sent_again(tmp_path: Path, server: JudgeServer) -> None:
    reference, responses = write_inputs(tmp_path)
    config = write_config(tmp_path, server.url, batch=True)
    assert evaluate_cli(reference, responses, "-c", config, "-o", tmp_path / "a", "-q") == 0
    first = judged(tmp_path / "a")
    submitted = sum(server.batch_api.submitted.values())

    assert evaluate_cli(reference, responses, "-c", config, "-o", tmp_path / "b", "-q") == 0

    assert judged(tmp_path / "b") == first
    assert sum(server.batch_api.submitted.values()) == submitted  # nothing new submitted
    assert len(server.batch_api.batches) == 2
    run = yaml.safe_load((tmp_path / "b" / "run.yaml").read_text())
    assert run["llm"]["cache_hits"] == 3 * QUESTIONS


def test_error_lines_are_retried_in_a_later_batch(tmp_path: Path, server: JudgeServer) -> None:
    (tmp_path / "sync").mkdir()
    expected = synchronous_run(tmp_path, server)
    api = server.batch_api
    api.error_first = lambda custom_id, body: "S1?" in json.dumps(body)  # q1's requests
    reference, responses = tmp_path / "reference.yaml", tmp_path / "responses.jsonl"
    out = tmp_path / "out"
    config = write_config(tmp_path, server.url, backoff_initial_s=0.001)

    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "-q", "--batch") == 0

    assert judged(out) == expected
    assert server.count("/chat/completions") == 0
    retried = [key for key, times in api.submitted.items() if times == 2]
    assert len(retried) >= 2  # q1's correctness and claims, and later its verdicts
    assert set(api.submitted.values()) == {1, 2}


def test_a_batch_in_progress_says_what_the_run_waits_for_and_how_to_stop(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path, 2)
    config = write_config(tmp_path, server.url)
    api = server.batch_api
    api.hold = True
    codes: list[int] = []
    arguments = (reference, responses, "-c", config, "-o", tmp_path / "out", "--batch")
    run = threading.Thread(target=lambda: codes.append(evaluate_cli(*arguments)))
    run.start()
    try:
        assert api.wait_for(lambda state: state.polls >= 2)  # a bound for a broken run
    finally:
        api.release()
        run.join()

    assert codes == [0]
    lines = [line for line in capsys.readouterr().err.splitlines() if "batch_1" in line]
    assert lines[0].startswith("batch batch_1: in_progress, 0/4 done")
    assert "waiting for the provider (up to 24 hours)" in lines[0]
    assert "Ctrl-C stops the run and --resume collects the batch later" in lines[0]
    assert lines[-1] == "batch batch_1: completed, 4/4 done"


def test_a_poll_answered_with_an_html_page_is_polled_again(
    tmp_path: Path, server: JudgeServer
) -> None:
    # A proxy's page while the batch runs is a reply to retry, as a 5xx is, not a lost batch.
    reference, responses = write_inputs(tmp_path, 2)
    server.batch_api.html_polls = 2
    config = write_config(tmp_path, server.url)

    code = evaluate_cli(reference, responses, "-c", config, "-o", tmp_path / "out", "--batch")

    assert code == 0
    assert server.batch_api.html_polls == 0
    assert set(server.batch_api.submitted.values()) == {1}


def test_a_batch_creation_whose_reply_is_lost_is_not_sent_again(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # The batch may exist (and be paid for): neither the provider nor the engine's retries
    # create it again; the run stops its judge and says so.
    reference, responses = write_inputs(tmp_path, 2)
    server.batch_api.drop_creates = 1
    config = write_config(tmp_path, server.url)
    out = tmp_path / "out"

    code = evaluate_cli(reference, responses, "-c", config, "-o", out, "--batch")

    assert code == EXIT_INCOMPLETE
    assert len(server.batch_api.batches) == 1
    assert set(server.batch_api.submitted.values()) == {1}
    assert server.count("/chat/completions") == 0
    printed = capsys.readouterr()
    [line] = [line for line in printed.err.splitlines() if "incomplete" in line]
    assert "it may have been created (and be paid for)" in line
    assert "4 requests in batches whose creation got no reply" in printed.out


@pytest.mark.parametrize(
    "batch_id", ["batch_1/../../files/file-1", "b" * 300], ids=["a path", "too long"]
)
def test_a_batch_id_that_is_not_an_id_is_never_put_in_a_path_nor_checkpointed(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str], batch_id: str
) -> None:
    reference, responses = write_inputs(tmp_path, 2)
    server.batch_api.name_batch = lambda number: batch_id
    config = write_config(tmp_path, server.url)
    out = tmp_path / "out"

    code = evaluate_cli(reference, responses, "-c", config, "-o", out, "--batch")

    assert code == EXIT_INCOMPLETE
    assert server.batch_api.calls == ["POST /v1/files", "POST /v1/batches"]  # no poll
    assert set(server.batch_api.submitted.values()) == {1}
    [line] = [line for line in capsys.readouterr().err.splitlines() if "incomplete" in line]
    assert "not a batch id" in line
    # Nothing checkpointed that a resumed run would refuse.
    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "-q", "--resume") != 2


@pytest.mark.parametrize("outcome", ["expired", "cancelled"])
def test_an_expired_or_cancelled_batch_is_an_incomplete_run(
    tmp_path: Path, server: JudgeServer, outcome: str, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path)
    server.batch_api.outcome = outcome
    config = write_config(tmp_path, server.url)
    out = tmp_path / "out"

    code = evaluate_cli(reference, responses, "-c", config, "-o", out, "--batch")

    assert code == EXIT_INCOMPLETE
    [line] = [line for line in capsys.readouterr().err.splitlines() if "incomplete" in line]
    assert f"the judge's batch batch_1 is {outcome}" in line
    assert line.endswith("--resume")
    assert server.count("/chat/completions") == 0

    # Later the provider is healthy again: --resume (without --batch: the run's batches.json
    # puts it in batch mode) collects what was answered and submits only the rest.
    server.batch_api.outcome = "completed"
    before = sum(server.batch_api.submitted.values())
    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "-q", "--resume") == 0
    resubmitted = sum(server.batch_api.submitted.values()) - before
    assert 0 < resubmitted < 3 * QUESTIONS
    assert all(times <= 2 for times in server.batch_api.submitted.values())
    assert server.count("/chat/completions") == 0  # nothing paid for twice, synchronously
    assert "resuming in batch mode (--batch)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("llm", "field"),
    [
        ({"batch_provider": None}, "llm.batch"),  # not OpenAI's provider, no opt-in
        ({"batch_provider": None, "generation": {"provider": "openai"}}, "llm.batch_provider"),
        ({"batch_provider": "vllm"}, "llm.batch_provider"),
        ({"batch_provider": None, "generation": {"provider": "vllm"}}, "llm.batch"),
    ],
)
def test_a_judge_without_a_batch_api_is_a_config_error_before_any_request(
    tmp_path: Path,
    server: JudgeServer,
    capsys: pytest.CaptureFixture[str],
    llm: dict[str, Any],
    field: str,
) -> None:
    reference, responses = write_inputs(tmp_path)
    generation = {
        "provider": "openai-compatible",
        "base_url": server.url,
        **llm.pop("generation", {}),
    }
    config = write_config(tmp_path, server.url, generation=generation, **llm)

    code = evaluate_cli(reference, responses, "-c", config, "-o", tmp_path / "out", "--batch")

    assert code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    prefix = f"graphrag-eval: error: {field}: "
    assert line.startswith(prefix)
    assert not line[len(prefix) :].startswith("llm.batch")  # the option named once
    assert server.requests == [] and server.batch_api.headers == []


def test_batch_mode_without_a_judge_says_so_once(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path)
    config = write_config(tmp_path, server.url, generation=None)

    code = evaluate_cli(reference, responses, "-c", config, "-o", tmp_path / "out", "--batch")

    assert code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line == (
        "graphrag-eval: error: llm.batch: batch mode needs a judge (llm.generation), and the "
        "config has none"
    )


def test_validate_checks_the_batch_provider_as_evaluate_does(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from graphrag_eval.cli import main

    reference, responses = write_inputs(tmp_path)
    config = write_config(tmp_path, server.url, batch=True, batch_provider="opneai")

    assert main(["validate", str(reference), str(responses), "-c", str(config)]) == 2
    assert "llm.batch_provider: no batch provider 'opneai'" in capsys.readouterr().err


def test_a_misspelt_batch_provider_is_named_as_such_with_the_closest_name(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path)
    config = write_config(tmp_path, server.url, batch_provider="opneai")

    code = evaluate_cli(reference, responses, "-c", config, "-o", tmp_path / "out", "--batch")

    assert code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "llm.batch_provider: no batch provider 'opneai' (did you mean 'openai'?)" in line
    assert "the judge's provider" not in line  # the judge's provider is not the mistake
    assert server.requests == [] and server.batch_api.headers == []


@pytest.mark.parametrize(
    "content",
    [
        '{"format": "graphrag-eval batches 1", "provider": "openai", "endpoint": "%s", '
        '"batches": [{"id": "../../files/x", "state": "running", "custom_ids": []}]}',
        "not json",
    ],
    ids=["a path for a batch id", "not json"],
)
def test_a_hostile_batch_checkpoint_is_one_line_and_exit_2(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    reference, responses = write_inputs(tmp_path, 2)
    config = write_config(tmp_path, server.url)
    out = tmp_path / "out"
    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "-q", "--batch") == 0
    identity = json.loads((out / "batches.json").read_text())["endpoint"]
    (out / "batches.json").write_text(content.replace("%s", identity))
    calls = len(server.batch_api.headers)

    code = evaluate_cli(reference, responses, "-c", config, "-o", out, "--batch", "--resume")

    assert code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "batches.json" in line
    assert len(server.batch_api.headers) == calls  # nothing sent


def test_a_failed_batch_says_why_as_the_provider_does(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path, 2)
    server.batch_api.outcome = "failed"
    config = write_config(tmp_path, server.url)

    code = evaluate_cli(reference, responses, "-c", config, "-o", tmp_path / "out", "--batch")

    assert code == EXIT_INCOMPLETE
    [line] = [line for line in capsys.readouterr().err.splitlines() if "incomplete" in line]
    assert (
        "the judge's batch batch_1 is failed (model_not_supported: The model 'gpt-4o-mini' is "
        "not supported by the Batch API.) (0 of 4 requests done)"
    ) in line


def test_a_checkpointed_batch_the_provider_does_not_know_says_how_to_go_on(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path, 2)
    server.batch_api.outcome = "failed"  # nothing answered: every item left to resume
    config = write_config(tmp_path, server.url)
    out = tmp_path / "out"
    arguments = (reference, responses, "-c", config, "-o", out, "--batch")
    assert evaluate_cli(*arguments) == EXIT_INCOMPLETE
    checkpoint = json.loads((out / "batches.json").read_text())
    checkpoint["batches"][0].update(id="batch_999", state="running")  # made elsewhere
    (out / "batches.json").write_text(json.dumps(checkpoint))
    server.batch_api.outcome = "completed"
    capsys.readouterr()

    assert evaluate_cli(*arguments, "--resume") == EXIT_INCOMPLETE

    printed = capsys.readouterr()
    [line] = [line for line in printed.err.splitlines() if "incomplete" in line]
    assert "404 - no such object: /v1/batches/batch_999): no more calls" in line
    assert f"delete {out / 'batches.json'} to submit its requests again" in line
    assert "1 batch of the interrupted run polled; 4 requests of batches lost" in printed.out
    (out / "batches.json").unlink()
    assert evaluate_cli(*arguments, "--resume") == 0


def test_a_fifo_in_place_of_the_batch_checkpoint_does_not_block_a_resumed_run(
    tmp_path: Path, server: JudgeServer
) -> None:
    reference, responses = write_inputs(tmp_path, 2)
    config = write_config(tmp_path, server.url, batch_provider=None)  # no batch mode
    out = tmp_path / "out"
    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "-q") == 0
    os.mkfifo(out / "batches.json")  # nothing ever writes to it: an open would wait forever

    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "-q", "--resume") == 0


def test_resuming_with_another_judge_says_the_batches_of_the_first_are_not_collected(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path, 2)
    config = write_config(tmp_path, server.url)
    out = tmp_path / "out"
    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "-q", "--batch") == 0
    checkpoint = json.loads((out / "batches.json").read_text())
    checkpoint["endpoint"] = "openai-compatible:http://127.0.0.1:1/v1"  # the judge was there
    (out / "batches.json").write_text(json.dumps(checkpoint))
    capsys.readouterr()

    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "-q", "--resume") == 0

    err = capsys.readouterr().err
    assert "lists the batches of another judge (openai, openai-compatible:http://127.0.0.1:1" in err
    assert "they are not collected" in err


def test_resuming_a_batch_run_with_a_judge_without_batches_says_they_are_not_collected(
    tmp_path: Path, server: JudgeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path, 2)
    config = write_config(tmp_path, server.url)
    out = tmp_path / "out"
    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "-q", "--batch") == 0
    capsys.readouterr()
    # The resumed run's config no longer names a batch API: its requests go one by one.
    config = write_config(tmp_path, server.url, batch_provider=None)

    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "-q", "--resume") == 0

    assert "without --batch their requests are sent again" in capsys.readouterr().err


@pytest.mark.parametrize("cache", [True, False], ids=["cache", "no-cache"])
def test_the_same_request_of_two_items_is_submitted_once(
    tmp_path: Path, server: JudgeServer, cache: bool
) -> None:
    reference, responses = write_inputs(tmp_path, 1)
    # A second question with another id and the same text and answers: the same requests.
    data = yaml.safe_load(reference.read_text())
    data[0]["questions"].append({**data[0]["questions"][0], "id": "twin"})
    reference.write_text(yaml.safe_dump(data))
    twin = {**json.loads(responses.read_text()), "question_id": "twin"}
    responses.write_text(responses.read_text() + json.dumps(twin) + "\n")
    config = write_config(tmp_path, server.url)
    out = tmp_path / "out"
    flags = [] if cache else ["--no-cache"]

    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "-q", "--batch", *flags) == 0

    results = judged(out)
    assert {k: v for k, v in results["twin"].items() if k != "question_id"} == {
        k: v for k, v in results["q0"].items() if k != "question_id"
    }
    assert results["q0"]["ragas_faithfulness"] is not None
    assert sum(server.batch_api.submitted.values()) == 3  # correctness, claims, verdicts
    assert set(server.batch_api.submitted.values()) == {1}


def test_a_batch_of_error_lines_does_not_stop_the_judge(
    tmp_path: Path, server: JudgeServer
) -> None:
    """Error lines are the failures of single requests, not of the endpoint: a batch whose
    every line is a 500 (more than the breaker's limit of unusable replies in a row) is
    retried, not a dead judge."""
    (tmp_path / "sync").mkdir()
    expected = synchronous_run(tmp_path, server)
    server.batch_api.error_first = lambda custom_id, body: True
    reference, responses = tmp_path / "reference.yaml", tmp_path / "responses.jsonl"
    out = tmp_path / "out"
    config = write_config(tmp_path, server.url, backoff_initial_s=0.001)

    assert evaluate_cli(reference, responses, "-c", config, "-o", out, "-q", "--batch") == 0

    assert judged(out) == expected
    assert set(server.batch_api.submitted.values()) == {2}


def test_batch_mode_from_python(tmp_path: Path, server: JudgeServer) -> None:
    from graphrag_eval import run_evaluation

    reference, responses = write_inputs(tmp_path, 2)
    config = yaml.safe_load(write_config(tmp_path, server.url, batch=True).read_text())

    results = run_evaluation(str(reference), str(responses), config)

    assert all(result["ragas_faithfulness"] is not None for result in results)
    assert server.count("/chat/completions") == 0
    assert [len(ids) for ids in server.batch_api.batches] == [4, 2]
