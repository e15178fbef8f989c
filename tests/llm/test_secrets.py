"""Secrets go nowhere (docs/security.md, docs/llm.md secrets): a key the judge echoes, the
credentials in a ``base_url``, values under secret-looking names, and misspelt options."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval import ConfigError, run_evaluation
from graphrag_eval.evaluation.services import build_engine
from graphrag_eval.metrics.loading import load_config

from builders import dataset, failing_metric, question, response
from judge_server import Faults, JudgeServer

Config = dict[str, Any]
StartJudge = Callable[..., JudgeServer]
MakeConfig = Callable[..., Config]

KEY = "custom-token-Zq93kLm20xYw"  # not shaped like an OpenAI key: redacted as the key
URL_SECRET = "pa55-Wq81xLm02"
MESSAGES = [{"role": "user", "content": "Say anything."}]


def test_a_key_the_judge_echoes_reaches_neither_the_metric_nor_the_cache(
    judge: StartJudge, make_config: MakeConfig, tmp_path: Path
) -> None:
    server = judge(api_key=KEY, responder=lambda body: f"The reason: my key is {KEY}.")
    config = make_config(server, generation={"api_key": KEY})

    async def main() -> str:
        engine = build_engine(load_config(config))
        assert engine is not None
        try:
            judged = await engine.judge(MESSAGES, lambda text: text, metric="probe")
        finally:
            await engine.aclose()
        return judged.value

    value = asyncio.run(main())

    assert value == "The reason: my key is ***."
    assert KEY.encode() not in (tmp_path / "llm-cache.sqlite3").read_bytes()


def test_credentials_in_base_url_are_masked_in_the_config_dump_and_messages(
    judge: StartJudge,
) -> None:
    server = judge(faults=Faults(server_error=1.0))
    url = server.url.replace("http://", f"http://judge:{URL_SECRET}@")
    config = {
        "llm": {
            "generation": {"provider": "openai-compatible", "base_url": url},
            "cache": {"enabled": False},
            "max_retries": 0,
        },
        "answer_relevance": {"enabled": False},
    }

    [result] = run_evaluation(
        dataset(question("q1", answer="Unit 1")), [response("q1", actual_answer="Unit 1")], config
    )

    dumped = str(load_config(config).public_dump())
    assert URL_SECRET not in dumped
    assert "http://***@127.0.0.1" in dumped
    assert "answer_eval_error" in result
    assert URL_SECRET not in str(result)


def test_connection_failure_message_masks_the_url_credentials() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = {
        "llm": {
            "generation": {
                "provider": "openai-compatible",
                "base_url": f"http://judge:{URL_SECRET}@127.0.0.1:{port}/v1",
            },
            "cache": {"enabled": False},
            "max_retries": 0,
        },
        "answer_relevance": {"enabled": False},
    }

    [result] = run_evaluation(
        dataset(question("q1", answer="Unit 1")), [response("q1", actual_answer="Unit 1")], config
    )

    assert "answer_eval_error" in result
    assert URL_SECRET not in str(result)


@pytest.mark.parametrize(
    ("option", "suggestion"),
    [("api_kye", "api_key"), ("temprature", "temperature"), ("top_q", "top_p")],
)
def test_a_misspelt_option_is_a_config_error_with_a_did_you_mean(
    option: str, suggestion: str
) -> None:
    config = {"llm": {"generation": {"provider": "openai", option: 0.5}}}

    with pytest.raises(ConfigError, match=f"did you mean '{suggestion}'"):
        load_config(config)


def test_other_extra_keys_stay_request_parameters() -> None:
    config = load_config({"llm": {"generation": {"provider": "openai", "guidance_scale": 2}}})

    assert config.llm.generation is not None
    assert config.llm.generation.request_parameters == {"guidance_scale": 2}


def test_values_under_names_with_key_token_secret_or_password_are_masked() -> None:
    config = load_config(
        {
            "llm": {
                "generation": {
                    "provider": "openai",
                    "api_key_env": "MY_JUDGE_KEY",
                    "extra_headers": {"X-Access-Token-Id": "tok-123456"},
                    "user_secret_value": "s3cr3t-value",
                    "extra_body": {"db_password": "hunter22"},
                    "routing_keyword": "abcd-1234",
                }
            }
        }
    )

    dumped = str(config.public_dump())

    for secret in ("tok-123456", "s3cr3t-value", "hunter22", "abcd-1234"):
        assert secret not in dumped
    assert "MY_JUDGE_KEY" in dumped  # the name of a variable, not a secret


@pytest.mark.parametrize(
    "option", ["key", "openai_api_key", "access_token", "X-Api-Key", "clientSecret", "password"]
)
@pytest.mark.parametrize("provider", ["openai", "openai-compatible", "vllm"])
def test_a_secret_looking_request_parameter_is_a_config_error_saying_where_a_key_belongs(
    option: str, provider: str
) -> None:
    endpoint = {"provider": provider, "base_url": "http://127.0.0.1:9/v1", option: KEY}

    with pytest.raises(ConfigError) as raised:
        load_config({"llm": {"generation": endpoint}})

    message = str(raised.value)
    assert "\n" not in message
    assert f"'{option}' looks like a secret" in message
    assert "api_key_env" in message
    assert "extra_headers" in message
    assert KEY not in message


def test_a_secret_looking_parameter_never_reaches_the_endpoint(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = make_config(server, generation={"openai_api_key": KEY})
    config["answer_relevance"] = {"enabled": False}

    with pytest.raises(ConfigError, match="'openai_api_key' looks like a secret"):
        run_evaluation(
            dataset(question("q1", answer="Unit 1")),
            [response("q1", actual_answer="Unit 1")],
            config,
        )

    assert server.count() == 0


@pytest.mark.parametrize(
    ("provider", "parameters"),
    [
        ("openai", {"prompt_cache_key": "evaluation-1"}),  # OpenAI's: not a credential
        ("openai", {"max_tokens": 64, "stop_token_ids": [2], "routing_keyword": "x"}),
        ("openai", {"extra_body": {"access_token": "asked-for-in-the-body"}}),
        ("bedrock", {"aws_secret_access_key": "LiteLLM's own parameter"}),
    ],
)
def test_parameters_that_are_not_credentials_or_are_explicit_stay_request_parameters(
    provider: str, parameters: dict[str, Any]
) -> None:
    config = load_config({"llm": {"generation": {"provider": provider, **parameters}}})

    assert config.llm.generation is not None
    assert (
        config.llm.generation.request_parameters.items()
        >= {k: v for k, v in parameters.items() if k != "max_tokens"}.items()
    )


def test_a_metric_bug_whose_message_carries_the_key_fails_without_it(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(api_key=KEY)
    config = make_config(server, generation={"api_key": KEY})
    config["metrics"] = ["leaky_bug"]
    with failing_metric("leaky_bug", f"request with key {KEY} went wrong"):
        [result] = run_evaluation(
            dataset(question("q1", answer="Paris")), [response("q1", actual_answer="Paris")], config
        )

    assert result["leaky_bug_error"] == (
        "internal error in leaky_bug: RuntimeError('request with key *** went wrong')"
    )


def test_credentials_in_a_proxy_url_are_redacted(
    judge: StartJudge, make_config: MakeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = judge()
    # A proxy with credentials that the judge's own address bypasses.
    monkeypatch.setenv("HTTPS_PROXY", f"http://proxyuser:{URL_SECRET}@127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    engine = build_engine(load_config(make_config(server)))
    assert engine is not None
    try:
        shown = engine.redact(f"407 from the proxy: proxyuser:{URL_SECRET} refused")
    finally:
        asyncio.run(engine.aclose())
    assert URL_SECRET not in shown
    assert shown == "407 from the proxy: *** refused"
