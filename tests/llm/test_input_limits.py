"""Inputs the judge cannot take (docs/llm.md, max_input_tokens): a prompt over the context
window is the item's error before any call; a lone surrogate is replaced before the call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from graphrag_eval import run_evaluation
from graphrag_eval.llm.pricing import DEFAULT_CONTEXT_WINDOW, context_window

from builders import dataset, question, response
from judge_server import JudgeServer

Config = dict[str, Any]
MakeConfig = Callable[..., Config]


def correctness(config: Config) -> Config:
    return {**config, "answer_relevance": {"enabled": False}}


def test_an_answer_over_max_input_tokens_is_the_items_error_before_any_call(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = correctness(make_config(server, max_input_tokens=2000))
    reference = dataset(question("q1", answer="Unit 1"), question("q2", answer="Unit 2"))
    responses = [
        response("q1", actual_answer="Unit 1 " + "and more " * 1000),
        response("q2", actual_answer="Unit 2"),
    ]

    long, short = run_evaluation(reference, responses, config)

    assert "llm.max_input_tokens" in long["answer_eval_error"]
    assert "answer_eval_error" not in short
    assert server.count("chat/completions") == 1


def test_the_default_limit_is_the_models_context_window(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = correctness(make_config(server, generation={"model": "gpt-3.5-turbo-0125"}))
    reference = dataset(question("q1", answer="Unit 1"))
    responses = [response("q1", actual_answer="Unit 1 " + "word " * 16_000)]

    [result] = run_evaluation(reference, responses, config)

    assert "16385" in result["answer_eval_error"]
    assert server.count() == 0


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4o-mini-2024-07-18", 128_000),
        ("openai/gpt-4.1", 1_047_576),
        ("llama3.1:8b", DEFAULT_CONTEXT_WINDOW),
    ],
)
def test_context_windows_are_looked_up_like_prices(model: str, window: int) -> None:
    assert context_window(model) == window


def test_a_lone_surrogate_in_an_answer_is_replaced_before_the_call(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = correctness(make_config(server))
    reference = dataset(question("q1", answer="Unit 1, Unit 101"))
    responses = [response("q1", actual_answer="Unit 1 \ud800")]

    [result] = run_evaluation(reference, responses, config)

    assert "answer_eval_error" not in result
    assert result["answer_recall"] == pytest.approx(0.5)
    [sent] = server.requests
    assert "\ufffd" in str(sent.body["messages"])
