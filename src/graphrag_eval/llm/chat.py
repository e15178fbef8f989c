"""One chat-completion call to the judge endpoint (with its retries): the request with the
reply's schema (as ``response_format``, or in the prompt for endpoints that reject it), and
the reading of the completion: its text, its token usage, a reply cut off by the token limit.
See docs/llm.md (what the engine does with each call).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from graphrag_eval.config.llm import GenerationConfig
from graphrag_eval.errors import BudgetExhausted, CallFailed, NotCalled, TruncatedReply
from graphrag_eval.llm.budget import DRY_RUN_REPLY_TOKENS
from graphrag_eval.llm.client import Endpoint, json_body, request
from graphrag_eval.llm.context import CallContext
from graphrag_eval.llm.failures import StatusError
from graphrag_eval.llm.pricing import TokenUsage, estimate_tokens
from graphrag_eval.llm.retrying import status_text
from graphrag_eval.llm.structured import (
    TIGHT_KEYWORDS,
    about_structured_output,
    response_format,
    with_schema_in_prompt,
)

__all__ = ["chat"]

logger = logging.getLogger("graphrag_eval")


async def chat(
    calls: CallContext,
    endpoint: Endpoint,
    messages: list[dict[str, str]],
    params: Mapping[str, Any],
    schema: type[BaseModel] | None,
    schema_json: dict[str, Any] | None,
    metric: str,
    loose_json: dict[str, Any] | None = None,
) -> tuple[str, TokenUsage]:
    """One judge call (with retries): the reply text and its usage. The call is counted in
    the run's statistics; a failure raises an :class:`~graphrag_eval.errors.LLMError`.
    ``loose_json``: ``schema_json`` without its list limits, sent instead to an endpoint
    that rejects them."""
    limits = loose_json is not None and loose_json != schema_json
    while True:
        structured, options, sent = _request(endpoint, messages, params, schema, schema_json)
        # What the request may cost, reserved under the cost limit while it is in flight.
        guess = TokenUsage(
            estimate_tokens("".join(m["content"] for m in sent)),
            int(options.get("max_tokens") or DRY_RUN_REPLY_TOKENS),
        )
        estimate = guess.input_tokens + guess.output_tokens
        loose = options
        if structured and limits and schema is not None and loose_json is not None:
            loose = {**options, "response_format": response_format(schema.__name__, loose_json)}
        create = _Create(endpoint, sent, options, loose, limits)
        try:
            cost = _reserved_cost(calls, endpoint, guess, options)
            completion = await calls.sender.send(endpoint, estimate, create, cost)
        except (BudgetExhausted, NotCalled):
            raise
        except Exception as exc:
            refused = isinstance(exc, StatusError) and exc.status_code == 400
            if refused and structured:
                if create.tight and _drop_keywords(calls, endpoint, exc):
                    continue
                if _fall_back_to_prompt(calls, endpoint, exc):
                    continue
            calls.stats.record_failure(metric)
            if refused:
                message = f"the judge refused the request: {status_text(exc)}"
                raise CallFailed(calls.redactor.redact(message)) from None
            raise calls.sender.failure(endpoint, exc) from None
        return _read_completion(calls, endpoint, completion, sent, options, metric)


@dataclass(slots=True)
class _Create:
    """The request as it leaves: with the schema's list limits or without, decided then (it
    may have waited for a slot while another call found that the endpoint rejects them)."""

    endpoint: Endpoint
    sent: list[dict[str, str]]
    options: dict[str, Any]
    loose: dict[str, Any]
    limits: bool
    tight: bool = False
    """Whether the request sent had the limits."""

    def __call__(self) -> Awaitable[Any]:
        self.tight = self.limits and self.endpoint.schema_keywords
        chosen = self.options if self.tight else self.loose
        body = {"model": self.endpoint.model, "messages": self.sent}
        return request(self.endpoint, "/chat/completions", body, chosen)()


def _request(
    endpoint: Endpoint,
    messages: list[dict[str, str]],
    params: Mapping[str, Any],
    schema: type[BaseModel] | None,
    schema_json: dict[str, Any] | None,
) -> tuple[bool, dict[str, Any], list[dict[str, str]]]:
    """Whether the schema goes as ``response_format``, the request's options and messages."""
    structured = schema_json is not None and endpoint.structured != "prompt"
    options: dict[str, Any] = dict(params)
    sent = messages
    if schema is not None and schema_json is not None:
        if structured:
            options["response_format"] = response_format(schema.__name__, schema_json)
        else:
            sent = with_schema_in_prompt(messages, schema.__name__, schema_json)
    return structured, options, sent


def _drop_keywords(calls: CallContext, endpoint: Endpoint, exc: Any) -> bool:
    """Whether a 400 is the endpoint rejecting the list limits of a tight schema (it names one
    of them): if so, they are left out of its requests from now on."""
    text = status_text(exc).lower()
    if not any(keyword.lower() in text for keyword in TIGHT_KEYWORDS):
        return False
    if not endpoint.schema_keywords:
        return True  # another call found it first
    logger.warning(
        "%s rejected the schema's list limits (%s); sending schemas without %s for the rest "
        "of the run",
        endpoint.identity,
        calls.redactor.redact(status_text(exc)),
        ", ".join(TIGHT_KEYWORDS),
    )
    endpoint.schema_keywords = False
    return True


def _fall_back_to_prompt(calls: CallContext, endpoint: Endpoint, exc: Any) -> bool:
    """Whether a 400 means the endpoint does not take a JSON schema and the config lets the
    engine describe it in the prompt instead, from now on (``structured_output: auto``)."""
    settings = endpoint.settings
    auto = isinstance(settings, GenerationConfig) and settings.structured_output == "auto"
    if not (auto and about_structured_output(exc)):
        return False
    logger.warning(
        "%s rejected structured output (%s); asking with the schema in the prompt for the "
        "rest of the run",
        endpoint.identity,
        calls.redactor.redact(status_text(exc)),
    )
    endpoint.structured = "prompt"
    return True


def _read_completion(
    calls: CallContext,
    endpoint: Endpoint,
    response: Any,
    sent: Sequence[Mapping[str, str]],
    options: Mapping[str, Any],
    metric: str,
) -> tuple[str, TokenUsage]:
    """The reply text and usage of a raw chat-completion response, counted as spent; an error
    for what is not a chat completion or was cut off by the token limit."""
    completion = json_body(response)
    try:
        choices = completion["choices"]
        choice = choices[0] if choices else None
        text = (choice["message"]["content"] if choice is not None else None) or ""
        finish_reason = choice.get("finish_reason") if choice is not None else None
        if not isinstance(text, str):
            raise TypeError(text)
    except (KeyError, IndexError, TypeError):
        # A 200 that is not a chat completion (an HTML page from a proxy, say).
        calls.stats.record_failure(metric)
        reply = calls.redactor.redact(repr(response[:200]))
        raise CallFailed(f"the judge's reply is not a chat completion: {reply}") from None
    usage = _usage(completion.get("usage"), sent, text)
    calls.stats.record_call(metric, usage, calls.cost_usd(endpoint.model, usage))
    if finish_reason == "length":
        calls.stats.record_failure(metric)
        limit = options.get("max_tokens")
        raise TruncatedReply(
            "the judge's reply was cut off by the token limit"
            + (f" (max_tokens={limit})" if limit else "")
            + "; raise llm.generation.max_tokens"
        )
    # A key the judge echoes (in a reason, a generated question) goes no further.
    return calls.redactor.redact(text), usage


def _reserved_cost(
    calls: CallContext, endpoint: Endpoint, guess: TokenUsage, options: Mapping[str, Any]
) -> float:
    """What a request may cost (its messages, schema and reply at ``max_tokens`` or 300
    tokens), reserved under the cost limit while it is in flight (docs/llm.md, cost); 0
    without a limit."""
    if calls.budget.max_cost_usd is None:
        return 0.0
    schema = options.get("response_format")
    if schema is not None:
        guess += TokenUsage(estimate_tokens(json.dumps(schema)), 0)
    return calls.cost_usd(endpoint.model, guess)


def _usage(usage: Any, messages: Sequence[Mapping[str, str]], text: str) -> TokenUsage:
    prompt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    reply = usage.get("completion_tokens") if isinstance(usage, dict) else None
    if isinstance(prompt, int) and isinstance(reply, int):
        return TokenUsage(prompt, reply)
    # The endpoint reported no usage: estimate it, so costs are not silently zero.
    return TokenUsage(
        estimate_tokens("".join(m["content"] for m in messages)), estimate_tokens(text)
    )
