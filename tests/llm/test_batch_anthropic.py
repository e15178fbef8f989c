"""Batch mode through Anthropic's Message Batches (docs/llm.md, "Anthropic Message Batches"):
``graphrag-eval evaluate --batch`` with an Anthropic judge against the test server's
Message Batches routes (tests/anthropic_batches.py), through the production batch provider.
The judged values are those of a synchronous run through LiteLLM against the same server,
with no synchronous judge call, at half its cost; error lines are retried in a later batch;
an expired or cancelled batch is an incomplete run (exit 3, the line with --resume); a
judge without a key is exit 2 before any request."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_eval.cli.errors import EXIT_INCOMPLETE
from llm.test_batch import write_inputs as write_batch_inputs

from anthropic_server import AnthropicServer
from builders import evaluate_cli, read_results

if importlib.util.find_spec("litellm") is None:  # the synchronous path of an Anthropic judge
    pytest.skip("the litellm extra is not installed", allow_module_level=True)

pytestmark = pytest.mark.usefixtures("no_real_key")

KEY = "sk-ant-test-BATCH-0123456789abcdef"
MODEL = "claude-haiku-4-5"
METRICS = ["answer_correctness", "ragas_faithfulness"]
"""One judge call per item, and two in sequence (claims, then their verdicts)."""
QUESTIONS = 4
MESSAGES = "/v1/messages"


@pytest.fixture(autouse=True)
def _no_ambient_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


@pytest.fixture
def server() -> Any:
    with AnthropicServer(api_key=KEY) as started:
        yield started


def write_inputs(folder: Path) -> tuple[Path, Path]:
    return write_batch_inputs(folder, QUESTIONS)


def write_config(folder: Path, server: AnthropicServer, **llm: Any) -> Path:
    """An Anthropic judge at the test server (key in ``ANTHROPIC_API_KEY`` unless ``llm``
    says otherwise), its cache in ``folder``."""
    generation = {"provider": "anthropic", "model": MODEL, "base_url": server.url}
    settings = {
        "generation": generation,
        "cache": {"path": str(folder / "cache.sqlite3")},
        "backoff_initial_s": 0.001,
        "batch_poll_s": 0.01,
        **llm,
    }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump({"metrics": METRICS, "llm": settings}))
    return path


def run(folder: Path, server: AnthropicServer, *options: str, **llm: Any) -> tuple[int, Path]:
    folder.mkdir(exist_ok=True)
    reference, responses = write_inputs(folder)
    config = write_config(folder, server, **llm)
    out = folder / "out"
    return evaluate_cli(reference, responses, "-c", config, "-o", out, *options), out


def values(out: Path) -> dict[str, dict[str, Any]]:
    """Each question's results without what depends on timing or on the price."""
    return {
        qid: {k: v for k, v in record.items() if "elapsed" not in k and not k.endswith("_cost")}
        for qid, record in read_results(out).items()
    }


def costs(out: Path) -> dict[str, float]:
    return {
        f"{qid}.{key}": value
        for qid, record in read_results(out).items()
        for key, value in record.items()
        if key.endswith("_cost")
    }


def llm_summary(out: Path) -> dict[str, Any]:
    summary: dict[str, Any] = yaml.safe_load((out / "run.yaml").read_text())["llm"]
    return summary


@pytest.fixture
def synchronous(tmp_path: Path, server: AnthropicServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A synchronous run of the same inputs through LiteLLM (its requests then forgotten)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    code, out = run(tmp_path / "sync", server, "-q")
    assert code == 0
    assert server.count() == 3 * QUESTIONS
    server.state.requests.clear()
    return out


def test_a_batch_run_gives_the_synchronous_values_at_half_the_price(
    tmp_path: Path,
    server: AnthropicServer,
    synchronous: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    capsys.readouterr()
    code, out = run(tmp_path / "batch", server, "--batch")

    assert code == 0
    assert values(out) == values(synchronous)
    assert not any(key.endswith("_error") for r in values(out).values() for key in r)
    assert [r.path for r in server.requests if r.path == MESSAGES] == []  # no synchronous call
    batches = server.batches
    assert batches.created == 2  # statements first, then their verdicts
    assert set(batches.submissions.values()) == {1}
    assert len(batches.submissions) == 3 * QUESTIONS
    assert all(r.headers["x-api-key"] == KEY for r in server.requests)
    assert {r.headers["anthropic-version"] for r in server.requests} == {"2023-06-01"}
    # Half the price: each cost key and the run's total (the dollars actually charged).
    sync_costs = costs(synchronous)
    assert sync_costs and all(cost > 0 for cost in sync_costs.values())
    assert costs(out) == pytest.approx({k: v / 2 for k, v in sync_costs.items()})
    batch_run, sync_run = llm_summary(out), llm_summary(synchronous)
    assert batch_run["cost_usd"] == pytest.approx(sync_run["cost_usd"] / 2, abs=2e-6)
    assert batch_run["batch_prices"] == {MODEL: 0.5}
    assert "batch_prices" not in sync_run
    printed = capsys.readouterr()
    assert "spent at batch prices (50% of the synchronous price)" in printed.out
    assert "batch mode (anthropic)" in printed.out
    assert KEY not in printed.out + printed.err
    for written in out.iterdir():
        if written.is_file():
            assert KEY not in written.read_text(errors="replace"), written.name


def test_error_lines_are_retried_in_a_later_batch(
    tmp_path: Path, server: AnthropicServer, synchronous: Path
) -> None:
    server.batches.error_first = lambda custom_id, params: "S1?" in json.dumps(params)
    server.batches.error_kind = "overloaded_error"  # 529: worth another try
    code, out = run(tmp_path / "batch", server, "-q", "--batch")

    assert code == 0
    assert values(out) == values(synchronous)
    assert [r for r in server.requests if r.path == MESSAGES] == []
    retried = [custom_id for custom_id, times in server.batches.submissions.items() if times == 2]
    assert len(retried) >= 2  # q1's correctness and claims, and later its verdicts
    assert set(server.batches.submissions.values()) == {1, 2}
    assert costs(out) == pytest.approx({k: v / 2 for k, v in costs(synchronous).items()})


def test_a_request_the_api_refuses_in_a_batch_is_that_metric_s_error(
    tmp_path: Path, server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ``invalid_request_error`` line is the judge refusing the request (a 400): not sent
    again; the item's metric fails with the API's message, the other items are judged."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    server.batches.error_first = lambda custom_id, params: "S1?" in json.dumps(params)
    code, out = run(tmp_path, server, "-q", "--batch")

    results = values(out)
    errors = {key: value for key, value in results["q1"].items() if key.endswith("_error")}
    assert len(errors) == 2  # correctness, and faithfulness's claims
    assert all(
        str(message).startswith("the judge refused the request: 400 request ge-")
        for message in errors.values()
    )
    assert all(not key.endswith("_error") for r in (results["q0"], results["q2"]) for key in r)
    assert set(server.batches.submissions.values()) == {1}
    assert code == 0  # a metric failed on one question: counted in the summary, not exit 3


@pytest.mark.parametrize("outcome", ["expired", "canceled"])
def test_an_expired_or_cancelled_batch_is_an_incomplete_run(
    tmp_path: Path,
    server: AnthropicServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    outcome: str,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    batches = server.batches
    batches.expire, batches.cancel_all = outcome == "expired", outcome == "canceled"

    code, out = run(tmp_path, server, "--batch")

    assert code == EXIT_INCOMPLETE
    [line] = [line for line in capsys.readouterr().err.splitlines() if "incomplete" in line]
    assert f"the judge's batch msgbatch_test000001 is {outcome}" in line
    assert line.endswith("--resume")
    assert [r for r in server.requests if r.path == MESSAGES] == []

    # Later the provider is healthy again: --resume submits what was not answered.
    batches.expire = batches.cancel_all = False
    code, out = run(tmp_path, server, "-q", "--batch", "--resume")
    assert code == 0
    assert not any(key.endswith("_error") for r in values(out).values() for key in r)
    assert all(times <= 2 for times in batches.submissions.values())


def test_the_dry_run_estimates_the_cost_at_batch_prices(
    tmp_path: Path,
    server: AnthropicServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    estimates = {}
    for mode in ("sync", "batch"):
        options = ["--dry-run"] + (["--batch"] if mode == "batch" else [])
        capsys.readouterr()
        code, _ = run(tmp_path / mode, server, *options)
        assert code == 0
        printed = capsys.readouterr().out
        [total] = [line for line in printed.splitlines() if line.lstrip("│ ").startswith("total")]
        estimates[mode] = float(total.split("$")[1].split()[0].rstrip("│ "))
        if mode == "batch":
            assert "batch API: cost at batch prices (50% of the synchronous price)" in printed
    assert estimates["sync"] > 0
    assert estimates["batch"] == pytest.approx(estimates["sync"] / 2, rel=0.01)
    assert server.requests == []  # a dry run sends nothing


def test_a_judge_without_a_key_is_a_config_error_before_any_request(
    tmp_path: Path, server: AnthropicServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = run(tmp_path, server, "--batch")

    assert code == 2
    err = capsys.readouterr().err
    assert "ANTHROPIC_API_KEY" in err
    assert server.requests == []


def test_the_key_goes_to_no_host_a_results_url_names(
    tmp_path: Path, server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch whose ``results_url`` points at another host (a hostile or misconfigured
    endpoint): the results are read from the API's path under the judge's ``base_url``, and
    the other host gets no request (and so never the key)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with AnthropicServer() as elsewhere:
        server.batches.results_base = elsewhere.url
        code, out = run(tmp_path, server, "-q", "--batch")
        assert elsewhere.requests == []
    assert code == 0
    assert not any(key.endswith("_error") for r in values(out).values() for key in r)
    assert server.batches.results_fetched == 2


def test_a_results_line_nested_past_the_parser_is_left_out_not_the_batch(
    tmp_path: Path, server: AnthropicServer, synchronous: Path
) -> None:
    # Lines a parser cannot take (nested too deep, not JSON, an id never submitted) are left
    # out; the batch's other lines are its results.
    server.batches.junk_lines = [
        "[" * 200_000,
        "<html>oops</html>",
        json.dumps({"custom_id": "ge-" + "0" * 40, "result": {"type": "succeeded"}}),
    ]
    code, out = run(tmp_path / "batch", server, "-q", "--batch")

    assert code == 0
    assert values(out) == values(synchronous)
    assert [r for r in server.requests if r.path == MESSAGES] == []


def test_a_batch_creation_answered_with_a_5xx_is_not_sent_again(
    tmp_path: Path, server: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A 500 does not say the batch was not created: it may exist (and be paid for), so
    # neither the provider nor the engine's retries create it again.
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    server.batches.fail_creates = 1
    code, _ = run(tmp_path / "batch", server, "-q", "--batch")

    assert code == EXIT_INCOMPLETE
    assert server.batches.created == 1
    assert set(server.batches.submissions.values()) == {1}
    assert [r for r in server.requests if r.path == MESSAGES] == []
