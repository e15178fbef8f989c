"""Providers that are not OpenAI-compatible, through LiteLLM (the ``litellm`` extra,
docs/llm.md): a 6.4 config naming ``provider: anthropic`` runs end to end against the local
Anthropic Messages API server (tests/anthropic_server.py), through litellm and the network
stack, with the engine's retries, refusals, cache, cost, structured output and redaction."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_eval import run_evaluation
from graphrag_eval.cli import main
from graphrag_eval.config.llm import OPENAI_COMPATIBLE_PROVIDERS
from graphrag_eval.errors import ConfigError
from graphrag_eval.llm.litellm_client import import_litellm
from graphrag_eval.metrics.loading import load_config

from anthropic_server import AnthropicServer, message, openai_body
from builders import dataset, question, response, through_proxy
from judge_server import JudgeServer

if importlib.util.find_spec("litellm") is None:  # not imported here: it must be set up first
    pytest.skip("the litellm extra is not installed", allow_module_level=True)

KEY = "sk-ant-test-PLANTED-0123456789abcdef"
MODEL = "claude-3-5-haiku-20241022"
JUDGED = [
    "answer_correctness",
    "ragas_faithfulness",
    "ragas_context_precision",
    "ragas_context_recall",
    "retrieval_answer",
    "factual_accuracy",
    "answer_classification",
]
CONTEXTS = ["Transformer OSLO T1 is in substation Oslo.", "The weather is sunny."]


@pytest.fixture(autouse=True)
def _no_ambient_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def anthropic_config(server: AnthropicServer, tmp_path: Path, **generation: Any) -> dict[str, Any]:
    """A graphrag-eval 6.4 config naming Anthropic (with ``base_url`` at the local server)."""
    settings = {"provider": "anthropic", "model": MODEL, "api_key": KEY, "base_url": server.url}
    return {
        "llm": {
            "generation": {**settings, **generation},
            "cache": {"path": str(tmp_path / "cache.sqlite3")},
            "backoff_initial_s": 0.001,
        },
        "metrics": JUDGED,
    }


def run_oslo(config: dict[str, Any]) -> dict[str, Any]:
    reference = dataset(
        question("q1", answer="OSLO T1, OSLO T2", text="Which transformers are in Oslo?")
    )
    responses = [response("q1", actual_answer="OSLO T1 and OSLO T2", retrieved_contexts=CONTEXTS)]
    [result] = run_evaluation(reference, responses, config)
    return result


def scores(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if not k.endswith("_cost")}


@pytest.mark.parametrize("model", [MODEL, "claude-haiku-4-5"])
def test_a_6_4_anthropic_config_scores_as_the_openai_path_does(tmp_path: Path, model: str) -> None:
    """Every judged metric, structured replies included (LiteLLM asks Anthropic with a
    forced tool, or its native output format for newer models), gives the values the same
    judge gives through the OpenAI client."""
    with AnthropicServer(api_key=KEY) as server, JudgeServer() as openai_server:
        through_litellm = run_oslo(anthropic_config(server, tmp_path, model=model))
        openai_config = {
            "llm": {
                "generation": {"provider": "openai-compatible", "base_url": openai_server.url},
                "cache": {"enabled": False},
            },
            "metrics": JUDGED,
        }
        through_openai = run_oslo(openai_config)
        requests = server.requests
    assert {k: v for k, v in through_litellm.items() if k.endswith("_error")} == {}
    assert scores(through_litellm) == scores(through_openai)
    assert through_litellm["answer_f1"] == pytest.approx(1.0)
    assert {r.path for r in requests} == {"/v1/messages"}
    assert all(r.headers["x-api-key"] == KEY for r in requests)
    assert {r.body["model"] for r in requests} == {model}
    structured = [r.body for r in requests if openai_body(r.body).get("response_format")]
    assert len(structured) == len(requests) - 1  # all but answer correctness's TSV line


def test_embeddings_of_a_litellm_provider(tmp_path: Path) -> None:
    """``provider: mistral`` embeddings (LiteLLM, at the OpenAI-compatible test server's
    ``/embeddings``) give what the OpenAI client gets from the same server."""
    metrics = ["answer_relevance", "semantic_similarity"]
    with AnthropicServer(api_key=KEY) as server, JudgeServer() as openai_server:
        config = anthropic_config(server, tmp_path)
        config["llm"]["embedding"] = {
            "provider": "mistral",
            "model": "mistral-embed",
            "api_key": "mistral-test-key",
            "base_url": openai_server.url,
        }
        through_litellm = run_oslo({**config, "metrics": metrics})
        embedded = [r for r in openai_server.requests if r.path.endswith("/embeddings")]
        openai_config = {
            "llm": {
                "generation": {"provider": "openai-compatible", "base_url": openai_server.url},
                "embedding": {"provider": "openai-compatible", "base_url": openai_server.url},
                "cache": {"enabled": False},
            },
            "metrics": metrics,
        }
        through_openai = run_oslo(openai_config)
    assert embedded and all(r.body["model"] == "mistral-embed" for r in embedded)
    assert all(r.headers["authorization"] == "Bearer mistral-test-key" for r in embedded)
    assert through_litellm["answer_relevance"] == pytest.approx(through_openai["answer_relevance"])
    assert through_litellm["semantic_similarity_percentage"] == pytest.approx(
        through_openai["semantic_similarity_percentage"]
    )


def test_a_second_run_is_served_from_the_cache(tmp_path: Path) -> None:
    with AnthropicServer(api_key=KEY) as server:
        first = run_oslo(anthropic_config(server, tmp_path))
        made = server.count()
        second = run_oslo(anthropic_config(server, tmp_path))
        assert server.count() == made
    assert first == second


@pytest.mark.parametrize(
    ("prices", "per_million"),
    [
        (None, (1.0, 5.0)),  # LiteLLM's bundled price of claude-haiku-4-5
        ({"claude-haiku-4-5": {"input_per_million": 2.0, "output_per_million": 3.0}}, (2.0, 3.0)),
    ],
)
def test_costs_come_from_the_price_table(
    tmp_path: Path, prices: dict[str, Any] | None, per_million: tuple[float, float]
) -> None:
    """Priced from ``llm.prices``, else from LiteLLM's bundled price map."""
    server = AnthropicServer(api_key=KEY)
    config = anthropic_config(server, tmp_path, model="claude-haiku-4-5")
    if prices is not None:
        config["llm"]["prices"] = prices
    config["metrics"] = ["answer_correctness"]
    with server:
        result = run_oslo(config)
        [request] = server.requests
    # the tokens the server reported (about four characters a token), at that price
    usage = message(request.body)["usage"]
    spent = usage["input_tokens"] * per_million[0] + usage["output_tokens"] * per_million[1]
    assert result["answer_correctness_cost"] == pytest.approx(spent / 1e6)


def test_rate_limits_are_retried(tmp_path: Path) -> None:
    with AnthropicServer(api_key=KEY, rate_limit_first=2) as server:
        result = run_oslo({**anthropic_config(server, tmp_path), "metrics": ["answer_correctness"]})
        assert server.count("rate_limit") == 2
    assert result["answer_f1"] == pytest.approx(1.0)


def test_a_reply_cut_off_by_max_tokens_is_reported_as_such(tmp_path: Path) -> None:
    with AnthropicServer(api_key=KEY, max_tokens_first=10) as server:
        result = run_oslo({**anthropic_config(server, tmp_path), "metrics": ["answer_correctness"]})
    assert "cut off by the token limit" in result["answer_eval_error"]


def test_a_refused_key_stops_calls_and_is_never_shown(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    """The server echoes the wrong key in its 401: the run makes one call, every judged
    metric fails with the refusal, and the key is nowhere in the results or the logs."""
    wrong = "sk-ant-WRONG-9876543210fedcba"
    with AnthropicServer(api_key=KEY) as server:
        config = anthropic_config(server, tmp_path, api_key=wrong)
        config["llm"]["max_concurrency"] = 1  # no call in flight when the refusal comes
        result = run_oslo(config)
        assert server.count("unauthorized") == 1
    errors = [value for key, value in result.items() if key.endswith("_error")]
    assert errors and all("refused" in error for error in errors)
    printed = capfd.readouterr()
    assert wrong not in json.dumps(result) + caplog.text + printed.out + printed.err
    assert wrong not in (tmp_path / "cache.sqlite3").read_bytes().decode("latin-1")


def test_the_key_may_come_from_the_providers_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with AnthropicServer(api_key=KEY) as server:
        config = anthropic_config(server, tmp_path, api_key=None)
        del config["llm"]["generation"]["api_key"]
        result = run_oslo({**config, "metrics": ["answer_correctness"]})
    assert result["answer_f1"] == pytest.approx(1.0)


def test_without_a_key_the_run_stops_at_the_start(tmp_path: Path, capsys: Any) -> None:
    with AnthropicServer() as server:
        config = anthropic_config(server, tmp_path)
        del config["llm"]["generation"]["api_key"]
        with pytest.raises(ConfigError, match="set the environment variable ANTHROPIC_API_KEY"):
            run_oslo(config)
        assert server.count() == 0


@pytest.mark.parametrize(
    ("provider", "message"),
    [
        ("antropic", "unknown provider 'antropic': did you mean 'anthropic'?"),
        ("vertex", "did you mean 'vertex_ai'?"),
        ("Anthropic AI", "unknown provider 'Anthropic AI'"),
    ],
)
def test_a_misspelt_provider_is_a_config_error(provider: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config({"llm": {"generation": {"provider": provider, "model": MODEL}}})


def test_every_litellm_provider_is_accepted() -> None:
    litellm = import_litellm("generation", "anthropic")
    names = {str(getattr(name, "value", name)) for name in litellm.provider_list}
    for name in names - OPENAI_COMPATIBLE_PROVIDERS:
        load_config({"llm": {"generation": {"provider": name}}})


def write_run(tmp_path: Path, config: dict[str, Any]) -> list[str]:
    reference = tmp_path / "reference.yaml"
    questions = [{"id": "q1", "question_text": "Which?", "reference_answer": "OSLO T1"}]
    reference.write_text(yaml.safe_dump([{"template_id": "t", "questions": questions}]))
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps({"question_id": "q1", "actual_answer": "OSLO T1"}) + "\n")
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return [str(reference), str(responses), "-c", str(path), "-o", str(tmp_path / "out")]


def test_without_the_extra_the_config_error_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``litellm`` not importable: exit 2, one line that says what to install."""
    monkeypatch.setitem(sys.modules, "litellm", None)  # what Python does for a missing module
    config = {"llm": {"generation": {"provider": "anthropic", "model": MODEL, "api_key": KEY}}}
    assert main(["evaluate", *write_run(tmp_path, config), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "pip install 'graphrag-eval[litellm]'" in err
    assert "llm.generation.provider" in err


def test_an_unknown_litellm_provider_is_a_config_error(tmp_path: Path) -> None:
    config = {"llm": {"generation": {"provider": "no_such_provider", "model": "m"}}}
    with pytest.raises(ConfigError, match="unknown provider 'no_such_provider'"):
        run_oslo(config)


def test_litellm_is_imported_only_for_such_a_provider(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from graphrag_eval import run_evaluation\n"
        "run_evaluation(sys.argv[1], sys.argv[2], sys.argv[3])\n"
        "print('litellm' in sys.modules)\n"
    )
    with JudgeServer() as server:
        config = {"llm": {"generation": {"provider": "openai-compatible", "base_url": server.url}}}
        args = write_run(tmp_path, {**config, "metrics": ["answer_correctness"]})
        done = subprocess.run(
            [sys.executable, "-c", script, args[0], args[1], args[3]],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")},
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_litellm_never_reaches_the_internet(
    tmp_path: Path, dead_proxy: tuple[str, list[int]]
) -> None:
    """In a fresh process, with LiteLLM's own offline switches unset and every HTTP(S)
    request but the judge's sent to a dead proxy, a run through LiteLLM connects to nothing
    else (LiteLLM fetches its price map from the web unless told not to)."""
    proxy, connections = dead_proxy
    script = (
        "import json, sys\n"
        "from graphrag_eval import run_evaluation\n"
        "print(json.dumps(run_evaluation(sys.argv[1], sys.argv[2], sys.argv[3])))\n"
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("LITELLM_")}
    env = {key: value for key, value in env.items() if key.upper() != "NO_PROXY"}
    env.update(
        through_proxy(proxy),
        NO_PROXY="127.0.0.1",
        no_proxy="127.0.0.1",
        XDG_CACHE_HOME=str(tmp_path / "xdg-cache"),
    )
    with AnthropicServer(api_key=KEY) as server:
        config = anthropic_config(server, tmp_path)
        args = write_run(tmp_path, {**config, "metrics": ["answer_correctness"]})
        done = subprocess.run(
            [sys.executable, "-c", script, args[0], args[1], args[3]],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
        assert server.count() == 1
    assert done.returncode == 0, done.stderr
    [result] = json.loads(done.stdout)
    assert result["answer_f1"] == pytest.approx(1.0)
    assert connections == []


def test_a_refused_connection_is_retried_then_the_metrics_error(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as spare:
        closed_port = spare.getsockname()[1]  # nothing listens there once it is closed
    with AnthropicServer() as server:
        config = anthropic_config(server, tmp_path, base_url=f"http://127.0.0.1:{closed_port}")
    config["llm"]["max_retries"] = 2
    result = run_oslo({**config, "metrics": ["answer_correctness"]})
    assert "answer_f1" not in result
    assert "connection failed" in result["answer_eval_error"], result["answer_eval_error"]
    assert "(3 attempts)" in result["answer_eval_error"]


def test_request_parameters_reach_the_provider(tmp_path: Path) -> None:
    """Extra keys of ``llm.generation`` go to LiteLLM as they are, which sends them on."""
    with AnthropicServer(api_key=KEY) as server:
        config = anthropic_config(server, tmp_path, top_k=5, max_tokens=700)
        run_oslo({**config, "metrics": ["answer_correctness"]})
        [request] = server.requests
    assert request.body["top_k"] == 5
    assert request.body["max_tokens"] == 700
    assert request.body["temperature"] == 0
