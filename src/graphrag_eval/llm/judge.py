"""Asking the judge: the canonical request and its cache key, a reply served from the cache
(or from the same request already in flight), the dry-run count, and the call with its one
re-ask when the metric's parser rejects the reply. See docs/llm.md (what the engine does with
each call, cache).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from graphrag_eval.config.llm import GenerationConfig
from graphrag_eval.errors import CallFailed, MalformedReply
from graphrag_eval.llm.cache import request_key
from graphrag_eval.llm.chat import chat
from graphrag_eval.llm.client import Endpoint
from graphrag_eval.llm.context import CallContext
from graphrag_eval.llm.pricing import TokenUsage, context_window, estimate_tokens
from graphrag_eval.llm.repeat import current_repeat
from graphrag_eval.llm.replies import ReplyError
from graphrag_eval.llm.structured import ListShape, reask_messages, strict_schema, tightened

__all__ = ["Judge", "Judged"]

T = TypeVar("T")
Messages = Sequence[Mapping[str, str]]
"""A chat conversation: each message a ``role`` and a ``content``."""
Schema = type[BaseModel] | None
"""The reply's shape, when it has a fixed one."""

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class Judged(Generic[T]):
    """A parsed judge reply with what it cost."""

    value: T
    text: str
    usage: TokenUsage
    cost_usd: float
    """Nominal: what the calls behind this reply cost, whether served from the cache or not."""
    cached: bool


@dataclass(frozen=True, slots=True)
class _Request:
    """One judge request as sent (before the schema is added) and its cache key."""

    messages: list[dict[str, str]]
    params: dict[str, Any]
    schema: type[BaseModel] | None
    schema_json: dict[str, Any] | None
    """As asked: with the list limits of the reply's :class:`ListShape`, if it has one."""
    loose_json: dict[str, Any] | None
    """Without them, for an endpoint that rejects them."""
    key: str


class Judge:
    """The judge of a run: one generation endpoint and the run's shared call services."""

    def __init__(self, endpoint: Endpoint, calls: CallContext) -> None:
        assert isinstance(endpoint.settings, GenerationConfig)
        self.endpoint = endpoint
        self.settings: GenerationConfig = endpoint.settings
        self.calls = calls
        self.max_input_tokens = calls.config.max_input_tokens or context_window(endpoint.model)
        """The longest prompt sent (``llm.max_input_tokens``, docs/llm.md)."""

    async def judge(
        self,
        messages: Messages,
        parse: Callable[[str], T],
        metric: str,
        schema: Schema,
        shape: ListShape | None = None,
    ) -> Judged[T]:
        """Ask the judge; return the reply as ``parse`` reads it (see
        :meth:`graphrag_eval.llm.engine.LLMEngine.judge`)."""
        self.endpoint.ensure_usable()
        request = self._request(messages, schema, shape)
        self._check_length(request.messages)
        calls = self.calls
        # The same request already in flight (two metrics sharing a prompt): wait for it and
        # take its reply from the cache rather than pay twice.
        await calls.in_flight.wait_for([request.key])
        cached = self._from_cache(request.key, parse, metric)
        if cached is not None:
            return cached
        if calls.budget.first_time(request.key):
            calls.budget.plan_judge_call(
                metric,
                self.endpoint.model,
                request.messages,
                request.schema_json,
                request.params.get("max_tokens"),
            )
        calls.budget.check()
        with calls.in_flight.fetching([request.key]):
            return await self._ask(request, parse, metric)

    def plan_follow_up(self, metric: str, prompt: str) -> None:
        """Count a judge call in a dry run (see :meth:`LLMEngine.plan_follow_up`)."""
        self.calls.budget.plan_judge_call(
            metric, self.endpoint.model, [{"content": prompt}], None, self.settings.max_tokens
        )

    def _request(self, messages: Messages, schema: Schema, shape: ListShape | None) -> _Request:
        params: dict[str, Any] = {"temperature": self.settings.temperature}
        if self.settings.max_tokens is not None:
            params["max_tokens"] = self.settings.max_tokens
        params.update(self.endpoint.request_parameters)
        loose_json = strict_schema(schema) if schema is not None else None
        schema_json = (
            tightened(loose_json, shape)
            if loose_json is not None and shape is not None
            else loose_json
        )
        # A lone surrogate (from a badly decoded file) cannot be sent as UTF-8: replace it.
        sent: list[dict[str, str]] = [
            {key: _LONE_SURROGATE.sub("\ufffd", value) for key, value in message.items()}
            for message in messages
        ]
        request: dict[str, Any] = {
            "kind": "chat",
            "endpoint": self.endpoint.identity,
            "model": self.endpoint.model,
            "messages": sent,
            "params": params,
            "schema": schema_json,
        }
        repeat = current_repeat()
        if repeat:  # repeat 0 keeps the key of a run without repeats (docs/llm.md)
            request["repeat"] = repeat
        key = request_key(request)
        return _Request(sent, params, schema, schema_json, loose_json, key)

    def _check_length(self, messages: Sequence[Mapping[str, str]]) -> None:
        """:class:`CallFailed`, before any call, for a prompt over ``llm.max_input_tokens``."""
        tokens = estimate_tokens("".join(message["content"] for message in messages))
        if tokens > self.max_input_tokens:
            raise CallFailed(
                f"the judge prompt is about {tokens} tokens, over the limit of "
                f"{self.max_input_tokens} (llm.max_input_tokens, the model's context "
                "window): the answer or contexts are too long to judge; shorten them or "
                "raise llm.max_input_tokens"
            )

    def _from_cache(self, key: str, parse: Callable[[str], T], metric: str) -> Judged[T] | None:
        cache = self.calls.cache
        cached = cache.get_reply(key) if cache is not None else None
        if cached is None:
            return None
        try:
            value = parse(cached.text)
        except ReplyError:
            return None  # stored by an older parser; ask again
        self.calls.stats.record_cache_hit(metric)
        return Judged(value, cached.text, cached.usage, self._cost(cached.usage), True)

    async def _ask(self, request: _Request, parse: Callable[[str], T], metric: str) -> Judged[T]:
        """Make a judge call (with its one re-ask) and cache the reply that was used."""
        text, usage = await self._chat(request, request.messages, metric)
        try:
            value = parse(text)
        except ReplyError as problem:
            self.calls.budget.check()
            again = reask_messages(request.messages, text, problem)
            text, more = await self._chat(request, again, metric)
            usage = usage + more
            try:
                value = parse(text)
            except ReplyError as still:
                self.calls.stats.record_failure(metric)
                raise MalformedReply(
                    self.calls.redactor.redact(f"malformed judge reply (after one re-ask): {still}")
                ) from None
        if self.calls.cache is not None:
            self.calls.cache.put_reply(request.key, self.endpoint.model, text, usage)
        return Judged(value, text, usage, self._cost(usage), False)

    async def _chat(
        self, request: _Request, messages: list[dict[str, str]], metric: str
    ) -> tuple[str, TokenUsage]:
        return await chat(
            self.calls,
            self.endpoint,
            messages,
            request.params,
            request.schema,
            request.schema_json,
            metric,
            request.loose_json,
        )

    def _cost(self, usage: TokenUsage) -> float:
        return self.calls.cost_usd(self.endpoint.model, usage)
