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
from graphrag_eval.config import load_config
from graphrag_eval.llm.engine import build_engine

from builders import dataset, question, response
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
                    "db_password": "hunter22",
                    "routing_keyword": "abcd-1234",
                }
            }
        }
    )

    dumped = str(config.public_dump())

    for secret in ("tok-123456", "s3cr3t-value", "hunter22", "abcd-1234"):
        assert secret not in dumped
    assert "MY_JUDGE_KEY" in dumped  # the name of a variable, not a secret
