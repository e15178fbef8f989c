"""The Anthropic batch provider's shapes (docs/llm.md, "Anthropic Message Batches"): the
engine's chat-completions request as a Messages API request of a batch, a batch's message as
the chat completion the engine reads, and the API's statuses as the protocol's states."""

from __future__ import annotations

import json
from typing import Any

from graphrag_eval.config.llm import LLMConfig
from graphrag_eval.llm.batch.anthropic import ERROR_STATUS, AnthropicBatches, batch_status
from graphrag_eval.llm.batch.anthropic_api import MessageBatch
from graphrag_eval.llm.batch.anthropic_messages import (
    DEFAULT_MAX_TOKENS,
    message_params,
    reply_body,
)
from graphrag_eval.llm.redaction import Redactor
from graphrag_eval.llm.structured import response_format

from anthropic_server import openai_body

SCHEMA = {
    "type": "object",
    "properties": {"claims": {"type": "array", "items": {"type": "string"}}},
    "required": ["claims"],
}


def test_a_structured_request_is_a_forced_tool_and_the_system_prompt_is_system() -> None:
    fields: dict[str, Any] = {
        "model": "anthropic/claude-haiku-4-5",
        "messages": [
            {"role": "system", "content": "You are a judge."},
            {"role": "user", "content": "List the claims."},
        ],
        "temperature": 0.0,
        "seed": 7,
        "stop": "END",
        "response_format": response_format("ClaimList", SCHEMA),
        "extra_body": {"top_k": 5},  # the config's request parameters, as LiteLLM has them
    }
    params = message_params(fields)
    assert params == {
        "model": "claude-haiku-4-5",
        "max_tokens": DEFAULT_MAX_TOKENS,
        "messages": [{"role": "user", "content": "List the claims."}],
        "system": "You are a judge.",
        "temperature": 0.0,
        "stop_sequences": ["END"],
        "top_k": 5,
        "tools": [
            {
                "name": "ClaimList",
                "description": "Reply with this tool: its input is the reply.",
                "input_schema": SCHEMA,
            }
        ],
        "tool_choice": {"type": "tool", "name": "ClaimList"},
    }
    # The test server reads it as the request it stands for (as it reads LiteLLM's).
    assert openai_body(params)["response_format"]["json_schema"]["name"] == "ClaimList"


def test_a_tool_call_is_the_reply_s_json_and_usage_counts_cached_tokens() -> None:
    message = {
        "type": "message",
        "model": "claude-haiku-4-5",
        "content": [{"type": "tool_use", "name": "ClaimList", "input": {"claims": ["é"]}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 3},
    }
    reply = json.loads(reply_body(message))
    assert reply["choices"][0]["message"]["content"] == '{"claims": ["é"]}'
    assert reply["choices"][0]["finish_reason"] == "stop"
    assert reply["usage"] == {"prompt_tokens": 15, "completion_tokens": 3, "total_tokens": 18}


def test_a_reply_cut_off_by_max_tokens_is_length_and_no_usage_is_left_to_the_engine() -> None:
    message = {
        "type": "message",
        "content": [{"type": "text", "text": "A, "}, {"type": "text", "text": "B"}],
        "stop_reason": "max_tokens",
    }
    reply = json.loads(reply_body(message))
    assert reply["choices"][0] == {
        "index": 0,
        "message": {"role": "assistant", "content": "A, B"},
        "finish_reason": "length",
    }
    assert "usage" not in reply  # the engine estimates it


def batch(status: str, **counts: int) -> MessageBatch:
    full = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
    return MessageBatch("msgbatch_1", status, {**full, **counts}, None)


def test_the_api_s_statuses_are_the_protocol_s_states() -> None:
    running = batch_status(batch("in_progress", processing=3, succeeded=1, errored=1))
    assert (running.state, running.status, running.done, running.failed, running.total) == (
        "running",
        "in_progress",
        2,
        1,
        5,
    )
    assert batch_status(batch("canceling", processing=1)).state == "running"
    assert batch_status(batch("ended", succeeded=4)).state == "ended"
    expired = batch_status(batch("ended", succeeded=1, expired=3))
    assert (expired.state, expired.status, expired.done) == ("expired", "expired", 1)
    canceled = batch_status(batch("ended", canceled=2, expired=1))
    assert (canceled.state, canceled.status) == ("cancelled", "canceled")


def test_errored_lines_carry_the_status_of_their_type_and_no_key() -> None:
    redactor = Redactor()
    redactor.add("sk-ant-secret-123456789")
    provider = AnthropicBatches(None, LLMConfig(), redactor)  # type: ignore[arg-type]

    def line(kind: str, text: str = "no") -> dict[str, Any]:
        return {
            "type": "errored",
            "error": {"type": "error", "error": {"type": kind, "message": text}},
        }

    refused = provider._result("a", line("invalid_request_error", "bad sk-ant-secret-123456789"))
    assert refused is not None and refused.error is not None
    assert refused.error.status_code == 400 and refused.error.code == "invalid_request_error"
    assert "sk-ant-secret" not in refused.error.message
    overloaded = provider._result("a", line("overloaded_error"))
    assert overloaded is not None and overloaded.error is not None
    assert overloaded.error.status_code == ERROR_STATUS["overloaded_error"] == 529
    assert provider._result("a", {"type": "expired"}) is None
    assert provider._result("a", {"type": "canceled"}) is None
    broken = provider._result("a", {"type": "succeeded", "message": {"type": "nope"}})
    assert broken is not None and broken.error is not None and broken.error.status_code == 500
