"""The judge engine against a live OpenAI-compatible server: retries, timeouts, re-asks,
structured output, cache, limits, secrets, cost limit, dry run and prices."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from graphrag_eval import ConfigError, run_evaluation
from graphrag_eval.config import ModelPrice
from graphrag_eval.errors import CallFailed, LLMError, MalformedReply
from graphrag_eval.evaluation.runner import evaluate
from graphrag_eval.evaluation.services import build_engine
from graphrag_eval.llm.budget import DRY_RUN_REPLY_TOKENS
from graphrag_eval.llm.engine import Judged, LLMEngine, ReplyError
from graphrag_eval.llm.pricing import PriceTable, TokenUsage, estimate_tokens
from graphrag_eval.llm.replies import json_reply
from graphrag_eval.metrics.loading import load_config

from builders import contexts, dataset, question, response, step
from judge_server import MALFORMED_REPLY, Faults, JudgeServer

Config = dict[str, Any]
StartJudge = Callable[..., JudgeServer]
MakeConfig = Callable[..., Config]
RunWithEngine = Callable[..., Any]

PLANTED_KEY = "sk-test-PLANTED-0123456789abcdef"
RIGHT_KEY = "sk-the-right-key-999999999999"
MESSAGES = [
    {"role": "system", "content": "You are a judge."},
    {"role": "user", "content": "Say anything."},
]
UNRECOGNISED = "I do not recognise this task."  # the rule judge's reply to MESSAGES

# One question with a reference answer, an actual answer and a retrieval step: every LLM
# metric applies to it. With the custom evaluation below that is five judge calls
# (correctness, relevance, fluency, retrieval recall and precision) and one embeddings call.
QUESTION_TEXT = "Which transformers are in substation Oslo?"
FULL_REFERENCE = dataset(question("q1", answer="OSLO T1, OSLO T2", text=QUESTION_TEXT))
FULL_RESPONSES = [
    response(
        "q1",
        [
            step(
                "retrieval",
                contexts(("1", "Transformer OSLO T1 is in Substation Oslo."), ("2", "Sunny.")),
                step_id="c1",
                args={"query": "oslo transformers"},
            )
        ],
        actual_answer="The transformers are OSLO T2 and OSLO T1.",
    )
]
FLUENCY = {
    "name": "fluency",
    "inputs": ["actual_answer"],
    "instructions": "Rate the fluency of the answer.",
    "outputs": {"fluency_score": "1-5"},
}
FULL_METRICS = [
    "answer_correctness",
    "answer_relevance",
    "fluency",
    "retrieval_answer_precision",
    "retrieval_answer_recall",
]


def full(config: Config) -> Config:
    return {**config, "custom_evaluations": [FLUENCY]}


def answers(count: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``count`` questions with a reference and an actual answer each (distinct texts, so
    distinct requests); the rule judge scores each recall 1/2, precision 1, f1 2/3."""
    reference = dataset(
        *(question(f"q{i}", answer=f"Unit {i}, Unit {i + 100}") for i in range(count))
    )
    responses = [response(f"q{i}", actual_answer=f"Unit {i}") for i in range(count)]
    return reference, responses


def correctness_only(config: Config) -> Config:
    """``config`` where answer correctness is the only metric of answer-only items."""
    return {**config, "answer_relevance": {"enabled": False}}


def judge_only(server: JudgeServer, **llm: Any) -> Config:
    """Only the judge model at ``server``, no cache, 1 ms backoff."""
    return {
        "llm": {
            "generation": {"provider": "openai-compatible", "base_url": server.url},
            "cache": {"enabled": False},
            "backoff_initial_s": 0.001,
            **llm,
        }
    }


def accept(text: str) -> str:
    return text


def call_judge(
    config: Mapping[str, Any],
    *,
    parse: Callable[[str], Any] = accept,
    schema: type[BaseModel] | None = None,
    calls: int = 1,
    **options: Any,
) -> tuple[Judged[Any] | LLMError, LLMEngine]:
    """``calls`` judge calls of ``MESSAGES``, one after another, through a fresh engine: the
    last reply or error, and the (closed) engine."""

    async def main() -> tuple[Judged[Any] | LLMError, LLMEngine]:
        engine = build_engine(load_config(config), **options)
        assert engine is not None
        outcome: Judged[Any] | LLMError | None = None
        try:
            for _ in range(calls):
                try:
                    outcome = await engine.judge(MESSAGES, parse, metric="probe", schema=schema)
                except LLMError as exc:
                    outcome = exc
        finally:
            await engine.aclose()
        assert outcome is not None
        return outcome, engine

    return asyncio.run(main())


def outcomes(server: JudgeServer) -> list[str]:
    return [request.outcome for request in server.requests]


@pytest.fixture(scope="module")
def flaky_seed() -> int:
    """A server seed under which the ``MESSAGES`` request fails the first time it is sent
    and succeeds the second time, when faults take half of all requests.

    Faults are rolled per (seed, request body, times the body was seen) and the roll does
    not depend on the kind of fault, so this seed gives [fault, ok] for every kind.
    """
    server = JudgeServer(faults=Faults(rate_limit=0.5, retry_after_ms=0)).start()

    async def search() -> int:
        engine = build_engine(load_config(judge_only(server, max_retries=1)))
        assert engine is not None
        try:
            for seed in range(200):
                with server.state.lock:  # a fresh server, as far as fault rolls go
                    server.state.seed = seed
                    server.state.seen.clear()
                server.reset()
                with contextlib.suppress(LLMError):
                    await engine.judge(MESSAGES, accept, metric="probe")
                if outcomes(server) == ["rate_limit", "ok"]:
                    return seed
        finally:
            await engine.aclose()
        raise AssertionError("no seed fails the first request and passes the second")

    try:
        return asyncio.run(search())
    finally:
        # As conftest's judge fixture: stop() waits for the server loop's half-second poll.
        threading.Thread(target=server.stop, daemon=True).start()


@pytest.fixture
def half_failing(judge: StartJudge, flaky_seed: int) -> Callable[..., JudgeServer]:
    """``half_failing(kind, **faults)``: a server whose first ``MESSAGES`` request fails
    with ``kind`` and whose second succeeds."""

    def start(kind: str, **faults: Any) -> JudgeServer:
        return judge(seed=flaky_seed, faults=Faults(**{kind: 0.5}, **faults))

    return start


@pytest.fixture
def free_url() -> Iterator[str]:
    """A URL at which nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    yield f"http://127.0.0.1:{port}/v1"


# ------------------------------------------------------------------------------ retries


@pytest.mark.parametrize("kind", ["rate_limit", "server_error"])
def test_transient_failure_is_retried_and_the_call_succeeds(
    half_failing: Callable[..., JudgeServer], kind: str
) -> None:
    server = half_failing(kind, retry_after_ms=0)

    judged, engine = call_judge(judge_only(server))

    assert outcomes(server) == [kind, "ok"]
    assert isinstance(judged, Judged)
    assert judged.value == UNRECOGNISED
    assert (engine.stats.calls, engine.stats.requests, engine.stats.retries) == (1, 2, 1)


def test_retry_after_of_a_rate_limit_is_honoured(half_failing: Callable[..., JudgeServer]) -> None:
    # Backoff alone would wait about 1 ms; the server asks for 250 ms.
    server = half_failing("rate_limit", retry_after_ms=250)

    started = time.monotonic()
    judged, _ = call_judge(judge_only(server))
    elapsed = time.monotonic() - started

    assert outcomes(server) == ["rate_limit", "ok"]
    assert isinstance(judged, Judged)
    assert elapsed >= 0.25


def test_retry_after_is_capped_by_backoff_max(half_failing: Callable[..., JudgeServer]) -> None:
    # The server asks for a minute; backoff_max_s caps the wait at 10 ms.
    server = half_failing("rate_limit", retry_after_ms=60_000)

    started = time.monotonic()
    judged, _ = call_judge(judge_only(server, backoff_max_s=0.01))

    assert isinstance(judged, Judged)
    assert time.monotonic() - started < 30


def test_persistent_rate_limit_fails_after_the_configured_retries(judge: StartJudge) -> None:
    server = judge(faults=Faults(rate_limit=1.0, retry_after_ms=0))

    error, engine = call_judge(judge_only(server, max_retries=2))

    assert isinstance(error, CallFailed)
    assert str(error) == (
        "generation call failed: 429 Error code: 429 - Rate limit reached (3 attempts)"
    )
    assert outcomes(server) == ["rate_limit"] * 3
    assert (engine.stats.failed, engine.stats.retries) == (1, 2)


def test_no_retries_means_a_single_attempt(judge: StartJudge) -> None:
    server = judge(faults=Faults(server_error=1.0))

    error, _ = call_judge(judge_only(server, max_retries=0))

    assert isinstance(error, CallFailed)
    assert str(error) == (
        "generation call failed: 500 Error code: 500 - The server had an error (1 attempt)"
    )
    assert server.count() == 1


def test_request_that_hangs_past_the_timeout_is_retried(
    half_failing: Callable[..., JudgeServer],
) -> None:
    server = half_failing("hang", hang_s=2.0)

    judged, engine = call_judge(judge_only(server, timeout_s=0.3))

    assert outcomes(server) == ["hang", "ok"]
    assert isinstance(judged, Judged)
    assert engine.stats.retries == 1


def test_hangs_beyond_the_retries_fail_with_a_timeout_message(judge: StartJudge) -> None:
    server = judge(faults=Faults(hang=1.0, hang_s=2.0))

    error, _ = call_judge(judge_only(server, timeout_s=0.3, max_retries=1))

    assert isinstance(error, CallFailed)
    assert str(error) == "generation call failed: timed out after 0.3 s (2 attempts)"
    assert outcomes(server) == ["hang", "hang"]


def test_connection_refused_is_retried_then_fails(free_url: str) -> None:
    config = {
        "llm": {
            "generation": {"provider": "openai-compatible", "base_url": free_url},
            "cache": {"enabled": False},
            "backoff_initial_s": 0.001,
            "max_retries": 1,
        }
    }

    error, engine = call_judge(config)

    assert isinstance(error, CallFailed)
    assert str(error).startswith("generation call failed: connection failed")
    assert str(error).endswith("(2 attempts)")
    assert engine.stats.requests == 2


# ------------------------------------------------------------------- malformed replies


def test_malformed_reply_is_asked_again_once_then_the_metric_fails(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(faults=Faults(malformed=1.0))
    reference, responses = answers(1)

    [result] = run_evaluation(reference, responses, correctness_only(make_config(server)))

    assert result["answer_eval_error"].startswith("malformed judge reply (after one re-ask): ")
    assert "answer_f1" not in result
    first, second = (request.body["messages"] for request in server.requests)
    assert second[: len(first)] == first
    assert second[len(first)] == {"role": "assistant", "content": MALFORMED_REPLY}
    assert second[-1]["role"] == "user"
    assert second[-1]["content"].startswith("Your reply could not be used: ")
    assert len(second) == len(first) + 2


def test_reask_tells_the_judge_what_was_wrong(server: JudgeServer) -> None:
    def parse(text: str) -> str:
        raise ReplyError("the reply must be the word 'yes'")

    error, _ = call_judge(judge_only(server), parse=parse)

    assert isinstance(error, MalformedReply)
    assert str(error) == (
        "malformed judge reply (after one re-ask): the reply must be the word 'yes'"
    )
    reask = server.requests[1].body["messages"][-1]["content"]
    assert "the reply must be the word 'yes'" in reask


def test_reply_repaired_by_the_reask_is_cached_under_the_original_request(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    replies = iter(["I would rather chat."])  # garbage once, then the rule judge
    server = judge(responder=lambda body: next(replies, None))
    reference, responses = answers(1)
    config = correctness_only(make_config(server))
    [first] = run_evaluation(reference, responses, config)
    assert server.count("chat/completions") == 2
    server.reset()

    [second] = run_evaluation(reference, responses, config)

    assert first["answer_f1"] == pytest.approx(2 / 3)
    assert server.count() == 0
    assert second == first  # the cost of both calls included, as when they were made


def test_truncated_reply_fails_saying_it_was_cut_off(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(faults=Faults(truncated=1.0))
    reference, responses = answers(1)
    config = correctness_only(make_config(server, generation={"max_tokens": 50}))

    [result] = run_evaluation(reference, responses, config)

    assert result["answer_eval_error"] == (
        "the judge's reply was cut off by the token limit (max_tokens=50); "
        "raise llm.generation.max_tokens"
    )
    assert server.count("chat/completions") == 1  # not asked again: it would be cut again


def test_truncated_reply_is_not_cached(judge: StartJudge, make_config: MakeConfig) -> None:
    server = judge(faults=Faults(truncated=1.0))
    reference, responses = answers(1)
    config = correctness_only(make_config(server))
    run_evaluation(reference, responses, config)
    server.state.faults = Faults()
    server.reset()

    [result] = run_evaluation(reference, responses, config)

    assert server.count("chat/completions") == 1
    assert result["answer_f1"] == pytest.approx(2 / 3)


def test_cached_reply_the_parser_now_rejects_is_asked_again(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = make_config(server)
    call_judge(config)  # caches the rule judge's reply to MESSAGES
    server.reset()

    def stricter(text: str) -> str:
        raise ReplyError("not what this parser reads")

    error, engine = call_judge(config, parse=stricter)

    assert isinstance(error, MalformedReply)
    assert server.count("chat/completions") == 2  # the call and its re-ask
    assert engine.stats.cache_hits == 0


# ------------------------------------------------------------------- structured output


class Verdict(BaseModel):
    verdict: str
    score: int


def test_schema_calls_ask_for_strict_json_schema_output(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(responder=lambda body: '{"verdict": "ok", "score": 3}')

    judged, _ = call_judge(make_config(server), parse=json_reply(Verdict), schema=Verdict)

    assert isinstance(judged, Judged)
    assert judged.value == Verdict(verdict="ok", score=3)
    response_format = server.requests[0].body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "Verdict"
    assert response_format["json_schema"]["strict"] is True
    schema = response_format["json_schema"]["schema"]
    assert schema["additionalProperties"] is False
    assert sorted(schema["required"]) == ["score", "verdict"]


def test_judge_metrics_with_a_fixed_reply_shape_send_their_schema(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    [result] = run_evaluation(FULL_REFERENCE, FULL_RESPONSES, make_config(server))

    assert "answer_relevance" in result
    names = [
        request.body.get("response_format", {}).get("json_schema", {}).get("name")
        for request in server.requests
        if request.path.endswith("chat/completions")
    ]
    assert sorted(name for name in names if name) == [
        "AttributedStatements",
        "ContextVerdicts",
        "GeneratedQuestions",
    ]
    assert names.count(None) == 1  # answer correctness: a tab-separated line


def test_endpoint_without_json_schema_gets_the_schema_in_the_prompt(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(json_schema=False)
    reference = dataset(question("q1", text="Which transformers are in substation Oslo?"))
    responses = [response("q1", actual_answer="The transformers in substation Oslo")]

    [result] = run_evaluation(reference, responses, make_config(server))

    assert result["answer_relevance"] > 0.5
    assert "answer_relevance_error" not in result
    chats = [r for r in server.requests if r.path.endswith("chat/completions")]
    assert [r.outcome for r in chats] == ["bad_request", "ok"]
    assert "response_format" not in chats[1].body
    assert "schema name: GeneratedQuestions" in chats[1].body["messages"][-1]["content"]


def test_after_a_rejection_later_calls_go_straight_to_the_prompt_schema(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(json_schema=False, responder=lambda body: '{"verdict": "ok", "score": 1}')
    config = make_config(server, cache={"enabled": False})

    judged, _ = call_judge(config, parse=json_reply(Verdict), schema=Verdict, calls=3)

    assert isinstance(judged, Judged)
    assert outcomes(server) == ["bad_request", "ok", "ok", "ok"]


def test_json_schema_mode_does_not_fall_back(judge: StartJudge, make_config: MakeConfig) -> None:
    server = judge(json_schema=False)
    config = make_config(server, generation={"structured_output": "json_schema"})

    error, _ = call_judge(config, parse=json_reply(Verdict), schema=Verdict)

    assert isinstance(error, CallFailed)
    assert str(error) == (
        "the judge refused the request: 400 Error code: 400 - "
        "response_format json_schema is not supported"
    )
    assert outcomes(server) == ["bad_request"]


def test_prompt_mode_never_sends_a_response_format(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(responder=lambda body: '{"verdict": "ok", "score": 2}')
    config = make_config(server, generation={"structured_output": "prompt"})

    judged, _ = call_judge(config, parse=json_reply(Verdict), schema=Verdict)

    assert isinstance(judged, Judged)
    assert judged.value == Verdict(verdict="ok", score=2)
    [request] = server.requests
    assert "response_format" not in request.body
    assert "schema name: Verdict" in request.body["messages"][-1]["content"]


# ---------------------------------------------------------------------------- cache


def _costs(result: dict[str, Any]) -> dict[str, float]:
    found = {key: value for key, value in result.items() if key.endswith("_cost")}
    for step_result in result.get("actual_steps", ()):
        found.update({k: v for k, v in step_result.items() if k.endswith("_cost")})
    return found


def test_second_identical_run_is_served_from_the_cache(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = full(make_config(server))
    first = run_evaluation(FULL_REFERENCE, FULL_RESPONSES, config)
    # The one embeddings request is sent twice: on a new endpoint, a second reply confirms
    # the vectors' dimension (the cache keeps it for the runs after).
    assert (server.count("chat/completions"), server.count("embeddings")) == (5, 2)
    server.reset()

    second = run_evaluation(FULL_REFERENCE, FULL_RESPONSES, config)

    assert server.count() == 0
    assert second == first


def test_cached_results_keep_their_nominal_cost(
    server: JudgeServer, make_config: MakeConfig, run_with_engine: RunWithEngine
) -> None:
    config = full(make_config(server))
    first, first_engine = run_with_engine(FULL_REFERENCE, FULL_RESPONSES, config)

    second, second_engine = run_with_engine(FULL_REFERENCE, FULL_RESPONSES, config)

    costs = _costs(first.results[0])
    assert set(costs) == {
        "answer_correctness_cost",
        "answer_relevance_cost",
        "fluency_cost",
        "retrieval_answer_recall_cost",
        "retrieval_answer_precision_cost",
        "retrieval_answer_f1_cost",
    }
    assert all(cost > 0 for cost in costs.values())
    assert _costs(second.results[0]) == costs
    assert first_engine.stats.cost_usd > 0
    assert second_engine.stats.cost_usd == 0  # what was actually spent
    assert second_engine.stats.cache_hits == 6
    assert second_engine.stats.requests == 0


def test_disabled_cache_calls_the_endpoint_again(
    server: JudgeServer, make_config: MakeConfig, tmp_path: Path
) -> None:
    config = full(make_config(server, cache={"enabled": False}))
    run_evaluation(FULL_REFERENCE, FULL_RESPONSES, config)
    server.reset()

    run_evaluation(FULL_REFERENCE, FULL_RESPONSES, config)

    # Without the cache, the embedding dimension is confirmed again: 5 + 2 requests.
    assert server.count() == 7
    assert not (tmp_path / "llm-cache.sqlite3").exists()


def test_engine_option_overrides_the_cache_setting(
    server: JudgeServer, make_config: MakeConfig, run_with_engine: RunWithEngine
) -> None:
    reference, responses = answers(1)
    config = correctness_only(make_config(server))
    run_evaluation(reference, responses, config)
    server.reset()

    run_with_engine(reference, responses, config, use_cache=False)

    assert server.count() == 1


def test_failed_calls_are_not_cached_and_are_made_again(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(faults=Faults(server_error=1.0))
    reference, responses = answers(1)
    config = correctness_only(make_config(server, max_retries=0))
    [failed] = run_evaluation(reference, responses, config)
    server.state.faults = Faults()

    [repaired] = run_evaluation(reference, responses, config)

    assert "answer_eval_error" in failed
    assert "answer_eval_error" not in repaired
    assert outcomes(server) == ["server_error", "ok"]


def test_embeddings_are_cached_per_text(server: JudgeServer, make_config: MakeConfig) -> None:
    config = make_config(server)

    async def main() -> LLMEngine:
        engine = build_engine(load_config(config))
        assert engine is not None
        try:
            await engine.embedding.embed(["alpha", "beta"], metric="m")
            server.reset()
            embedded = await engine.embedding.embed(["beta", "gamma", "alpha"], metric="m")
            assert len(embedded.vectors) == 3
        finally:
            await engine.aclose()
        return engine

    asyncio.run(main())

    [request] = server.requests
    assert request.body["input"] == ["gamma"]


@pytest.mark.parametrize(
    "change",
    [
        {"generation": {"model": "gpt-4o"}},
        {"generation": {"temperature": 0.5}},
        {"generation": {"max_tokens": 500}},
        {"generation": {"seed": 7}},  # a provider request parameter
        {"generation": {"base_url": "http://localhost:{port}/v1"}},
    ],
    ids=["model", "temperature", "max_tokens", "request-parameter", "endpoint"],
)
def test_cache_key_includes_what_can_change_the_reply(
    server: JudgeServer, make_config: MakeConfig, change: dict[str, Any]
) -> None:
    reference, responses = answers(1)
    run_evaluation(reference, responses, correctness_only(make_config(server)))
    server.reset()
    port = server.url.split(":")[-1].split("/")[0]
    changed = json.loads(json.dumps(change).replace("{port}", port))

    run_evaluation(reference, responses, correctness_only(make_config(server, **changed)))

    assert server.count("chat/completions") == 1


def test_cache_key_excludes_the_api_key_and_call_limits(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    reference, responses = answers(1)
    run_evaluation(reference, responses, correctness_only(make_config(server)))
    server.reset()
    other = make_config(
        server,
        generation={"api_key": "sk-other-key-000000000000"},
        max_concurrency=2,
        timeout_s=30,
        max_retries=1,
    )

    run_evaluation(reference, responses, correctness_only(other))

    assert server.count() == 0


def test_api_key_is_never_written_to_the_cache_or_results(
    judge: StartJudge, make_config: MakeConfig, tmp_path: Path
) -> None:
    server = judge(api_key=PLANTED_KEY)
    config = full(
        make_config(server, generation={"api_key": PLANTED_KEY}, embedding={"api_key": PLANTED_KEY})
    )

    results = run_evaluation(FULL_REFERENCE, FULL_RESPONSES, config)

    assert server.count(outcome="unauthorized") == 0
    assert "answer_f1" in results[0]
    assert "PLANTED" not in json.dumps(results)
    cache_files = list(tmp_path.glob("llm-cache.sqlite3*"))
    assert cache_files
    for path in cache_files:
        assert b"PLANTED" not in path.read_bytes()


def test_embedding_requests_are_split_into_batches(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    reference = dataset(question("q1", text=QUESTION_TEXT))
    responses = [response("q1", actual_answer="OSLO T1")]
    config = make_config(server, embedding={"batch_size": 3})

    [result] = run_evaluation(reference, responses, config)

    batches = [r.body["input"] for r in server.requests if r.path.endswith("embeddings")]
    # The question and three generated; the first batch twice, to confirm the dimension.
    assert [len(batch) for batch in batches] == [3, 3, 1]
    assert "answer_relevance" in result


# ---------------------------------------------------------------------- concurrency


def test_calls_run_concurrently_up_to_max_concurrency(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(latency_s=0.05)
    reference, responses = answers(12)
    config = correctness_only(make_config(server, max_concurrency=4))

    results = run_evaluation(reference, responses, config)

    assert all(result["answer_f1"] == pytest.approx(2 / 3) for result in results)
    assert 1 < server.max_in_flight <= 4


def test_max_concurrency_one_makes_calls_one_at_a_time(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(latency_s=0.02)
    reference, responses = answers(4)
    config = correctness_only(make_config(server, max_concurrency=1))

    run_evaluation(reference, responses, config)

    assert server.count() == 4
    assert server.max_in_flight == 1


def test_call_larger_than_the_token_rate_limit_still_goes_through(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    # The call's estimated tokens exceed the whole per-minute budget: it takes the full
    # bucket rather than waiting forever for more tokens than the bucket holds.
    reference, responses = answers(1)
    config = make_config(server, requests_per_minute=600, tokens_per_minute=10)

    [result] = run_evaluation(reference, responses, correctness_only(config))

    assert result["answer_f1"] == pytest.approx(2 / 3)


# ------------------------------------------------------------------------------ secrets


@pytest.mark.parametrize("key", [PLANTED_KEY, "custom-token-Zq93kLm20xYw"])
def test_refused_key_is_redacted_from_error_messages(
    judge: StartJudge, make_config: MakeConfig, key: str
) -> None:
    server = judge(api_key=RIGHT_KEY)
    reference, responses = answers(3)
    config = correctness_only(make_config(server, generation={"api_key": key}))

    results = run_evaluation(reference, responses, config)

    errors = [result["answer_eval_error"] for result in results]
    assert all(
        error.startswith("the generation endpoint refused the request: 401") for error in errors
    )
    assert key not in json.dumps(results)
    assert key[4:16] not in json.dumps(results)


def test_key_from_the_environment_is_sent_and_redacted(
    judge: StartJudge, make_config: MakeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED_KEY)
    server = judge(api_key=RIGHT_KEY)
    reference, responses = answers(1)

    [result] = run_evaluation(reference, responses, correctness_only(make_config(server)))

    assert server.requests[0].headers["authorization"] == f"Bearer {PLANTED_KEY}"
    assert "refused the request: 401" in result["answer_eval_error"]
    assert "PLANTED" not in result["answer_eval_error"]


def test_endpoint_is_not_called_again_after_refusing_a_request(judge: StartJudge) -> None:
    server = judge(api_key=RIGHT_KEY)
    config = judge_only(server, max_retries=3)
    config["llm"]["generation"]["api_key"] = PLANTED_KEY

    error, engine = call_judge(config, calls=3)

    assert outcomes(server) == ["unauthorized"]  # refusals are not retried either
    assert isinstance(error, CallFailed)
    assert str(error).startswith("the generation endpoint refused the request: 401")
    assert engine.stats.failed == 1


def test_calls_queued_behind_a_refused_call_are_not_sent(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(api_key=RIGHT_KEY)
    reference, responses = answers(5)
    config = correctness_only(
        make_config(server, generation={"api_key": PLANTED_KEY}, max_concurrency=1)
    )

    results = run_evaluation(reference, responses, config)

    assert all("refused the request: 401" in result["answer_eval_error"] for result in results)
    assert server.count(outcome="unauthorized") == 1


def test_openai_provider_without_a_key_is_a_config_error() -> None:
    reference, responses = answers(1)
    config = {"llm": {"generation": {"provider": "openai"}, "cache": {"enabled": False}}}

    with pytest.raises(ConfigError) as caught:
        run_evaluation(reference, responses, config)

    assert str(caught.value) == (
        "llm.generation: no API key: set the environment variable OPENAI_API_KEY "
        "(or llm.generation.api_key)"
    )


def test_missing_api_key_env_variable_is_named_in_the_config_error(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    reference, responses = answers(1)
    config = make_config(server, generation={"api_key_env": "JUDGE_KEY_FOR_TESTS"})

    with pytest.raises(ConfigError, match="JUDGE_KEY_FOR_TESTS"):
        run_evaluation(reference, responses, config)


def test_refused_key_never_reaches_the_log(
    judge: StartJudge, make_config: MakeConfig, caplog: pytest.LogCaptureFixture
) -> None:
    server = judge(api_key=RIGHT_KEY)
    reference, responses = answers(2)
    config = make_config(
        server, generation={"api_key": PLANTED_KEY}, embedding={"api_key": PLANTED_KEY}
    )

    with caplog.at_level("DEBUG", logger="graphrag_eval"):
        run_evaluation(reference, responses, config)

    assert server.count(outcome="unauthorized") >= 1
    assert all("PLANTED" not in record.getMessage() for record in caplog.records)


def test_azure_without_a_key_names_its_environment_variable(server: JudgeServer) -> None:
    reference, responses = answers(1)
    config = {"llm": {"generation": {"provider": "azure", "base_url": server.url}}}

    with pytest.raises(ConfigError, match="AZURE_OPENAI_API_KEY"):
        run_evaluation(reference, responses, config)


# ------------------------------------------------------------------- request content


def test_generation_settings_and_extra_parameters_are_sent(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = make_config(
        server, generation={"temperature": 0.2, "max_tokens": 300, "top_p": 0.5, "seed": 3}
    )

    call_judge(config)

    [request] = server.requests
    body = request.body
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("gpt-4o-mini", 0.2, 300)
    assert (body["top_p"], body["seed"]) == (0.5, 3)
    assert body["messages"] == MESSAGES


def test_temperature_defaults_to_zero(server: JudgeServer) -> None:
    call_judge(judge_only(server))

    assert server.requests[0].body["temperature"] == 0


def test_embedding_endpoint_accepts_api_base_and_extra_parameters(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    reference = dataset(question("q1", text=QUESTION_TEXT))
    responses = [response("q1", actual_answer="OSLO T1")]
    config = make_config(server, embedding={"base_url": None, "api_base": server.url, "user": "t"})

    [result] = run_evaluation(reference, responses, config)

    requests = [r for r in server.requests if r.path.endswith("embeddings")]
    assert len(requests) == 2  # the second confirms the vectors' dimension
    for request in requests:
        assert (request.body["model"], request.body["user"]) == ("text-embedding-3-small", "t")
    assert "answer_relevance" in result


# ---------------------------------------------------------------------- cost limit

LIMIT_REACHED = "not computed: the cost limit of $1e-09 was reached"


def _estimated_cost(body: dict[str, Any]) -> float:
    """What a judge request is reserved at under the cost limit (docs/llm.md, cost): its
    prompt at four characters a token and its reply at ``max_tokens`` (else 300) tokens."""
    prompt = estimate_tokens("".join(message["content"] for message in body["messages"]))
    reply = body.get("max_tokens") or DRY_RUN_REPLY_TOKENS
    return PriceTable().cost_usd(body["model"], TokenUsage(prompt, reply))


def test_cost_limit_stops_a_call_that_would_not_fit(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    _, responses = answers(2)
    config = correctness_only(make_config(server, cache={"enabled": False}))
    first_question = dataset(question("q0", answer="Unit 0, Unit 100"))
    run_evaluation(first_question, responses[:1], config)
    [request] = server.requests
    limit = _estimated_cost(request.body) * 1.001  # room for the first call's estimate only
    server.reset()

    async def main() -> tuple[list[dict[str, Any]], LLMEngine]:
        engine = build_engine(load_config(config), max_cost_usd=limit)
        assert engine is not None
        try:
            first = await evaluate(first_question, responses[:1], config, engine=engine)
            second = await evaluate(
                dataset(question("q1", answer="Unit 1, Unit 101")),
                responses[1:],
                config,
                engine=engine,
            )
        finally:
            await engine.aclose()
        return [*first.results, *second.results], engine

    [spent, stopped], engine = asyncio.run(main())

    assert spent["answer_f1"] == pytest.approx(2 / 3)
    # What was spent plus the second call's estimate would pass the limit: it is not sent.
    assert stopped["answer_eval_error"] == f"not computed: the cost limit of ${limit:g} was reached"
    assert "answer_f1" not in stopped
    assert engine.stats.budget_reached is True
    assert 0 < engine.stats.cost_usd <= limit
    assert engine.stats.as_dict()["budget_exceeded"] is False
    assert server.count() == 1


def test_calls_wait_for_room_the_calls_in_flight_reserved(
    server: JudgeServer, make_config: MakeConfig, run_with_engine: RunWithEngine
) -> None:
    # Eight calls at once reserve far more than they cost: the calls the reservations leave
    # no room for wait for the replies instead of failing, and all fit under the limit.
    reference, responses = answers(8)
    config = correctness_only(make_config(server, max_concurrency=8, cache={"enabled": False}))
    _, unlimited = run_with_engine(reference, responses, config)
    largest = max(_estimated_cost(request.body) for request in server.requests)
    limit = unlimited.stats.cost_usd + largest
    assert limit < 8 * largest  # the first eight calls' estimates would not fit at once

    run, engine = run_with_engine(reference, responses, config, max_cost_usd=limit)

    assert all(result["answer_f1"] == pytest.approx(2 / 3) for result in run.results)
    assert engine.stats.budget_reached is False
    assert engine.stats.cost_usd == pytest.approx(unlimited.stats.cost_usd)


def test_cost_limit_below_one_calls_estimate_sends_nothing(
    server: JudgeServer, make_config: MakeConfig, run_with_engine: RunWithEngine
) -> None:
    reference, responses = answers(5)
    config = correctness_only(make_config(server, max_concurrency=1))

    run, engine = run_with_engine(reference, responses, config, max_cost_usd=1e-9)

    errors = [result.get("answer_eval_error") for result in run.results]
    assert errors.count(LIMIT_REACHED) == 5
    assert engine.stats.budget_reached is True
    assert server.count() == 0


def test_cost_limit_can_come_from_the_config(
    server: JudgeServer, make_config: MakeConfig, run_with_engine: RunWithEngine
) -> None:
    reference, responses = answers(5)
    config = correctness_only(make_config(server, max_concurrency=1, max_cost_usd=1e-9))

    run, engine = run_with_engine(reference, responses, config)

    assert [r.get("answer_eval_error") for r in run.results].count(LIMIT_REACHED) == 5
    assert engine.stats.budget_reached is True


def test_cache_hits_do_not_count_towards_the_cost_limit(
    server: JudgeServer, make_config: MakeConfig, run_with_engine: RunWithEngine
) -> None:
    reference, responses = answers(3)
    config = correctness_only(make_config(server))
    run_evaluation(reference, responses, config)

    run, engine = run_with_engine(reference, responses, config, max_cost_usd=1e-9)

    assert all(result["answer_f1"] == pytest.approx(2 / 3) for result in run.results)
    assert engine.stats.budget_reached is False


# ------------------------------------------------------------------------------ dry run


def test_dry_run_makes_no_request_and_estimates_calls_and_cost(
    server: JudgeServer, make_config: MakeConfig, run_with_engine: RunWithEngine
) -> None:
    config = full(make_config(server))

    run, engine = run_with_engine(FULL_REFERENCE, FULL_RESPONSES, config, dry_run=True)

    assert server.count() == 0
    plan = engine.stats.plan_dict()
    assert plan["calls"] == 6  # five judge calls and the embeddings of answer relevance
    assert plan["cost_usd"] > 0
    assert plan["input_tokens"] > 0
    assert sorted(plan["by_metric"]) == FULL_METRICS
    assert plan["by_metric"]["answer_relevance"]["calls"] == 2
    assert run.results[0]["answer_eval_error"] == "dry run: the call was counted, not made"


def test_dry_run_reply_estimate_uses_max_tokens(
    server: JudgeServer, make_config: MakeConfig, run_with_engine: RunWithEngine
) -> None:
    reference, responses = answers(2)
    config = correctness_only(make_config(server, generation={"max_tokens": 40}))

    _, engine = run_with_engine(reference, responses, config, dry_run=True)

    assert engine.stats.plan_dict()["output_tokens"] == 80


def test_dry_run_counts_calls_the_cache_would_serve_as_cached(
    server: JudgeServer, make_config: MakeConfig, run_with_engine: RunWithEngine
) -> None:
    reference, responses = answers(2)
    config = correctness_only(make_config(server))
    run_evaluation(reference, responses, config)
    server.reset()

    run, engine = run_with_engine(reference, responses, config, dry_run=True)

    plan = engine.stats.plan_dict()
    assert server.count() == 0
    assert (plan["calls"], plan["cached"], plan["cost_usd"]) == (0, 2, 0)
    assert all(result["answer_f1"] == pytest.approx(2 / 3) for result in run.results)


# ------------------------------------------------------------------------------ pricing


@pytest.mark.parametrize(
    ("model", "price"),
    [
        ("gpt-4o-mini", (0.15, 0.60)),
        ("gpt-4o-mini-2024-07-18", (0.15, 0.60)),
        ("gpt-4o-2024-08-06", (2.50, 10.0)),
        ("openai/gpt-4o-mini", (0.15, 0.60)),
        ("gpt-4.1-mini-2025-04-14", (0.40, 1.60)),
        ("text-embedding-3-small", (0.02, 0.0)),
    ],
)
def test_price_lookup_strips_provider_prefix_and_snapshot_suffix(
    model: str, price: tuple[float, float]
) -> None:
    assert PriceTable().price(model) == price


def test_unknown_model_has_no_price_and_costs_nothing() -> None:
    table = PriceTable()

    assert table.price("llama3.1:8b") is None
    assert table.cost_usd("llama3.1:8b", TokenUsage(1000, 1000)) == pytest.approx(0.0)


def test_cost_is_tokens_times_price_per_million() -> None:
    cost = PriceTable().cost_usd("gpt-4o-mini", TokenUsage(1_000_000, 2_000_000))

    assert cost == pytest.approx(0.15 + 2 * 0.60)


def test_configured_prices_override_and_extend_the_table() -> None:
    table = PriceTable(
        {
            "gpt-4o-mini": ModelPrice(input_per_million=1.0, output_per_million=2.0),
            "llama3.1": ModelPrice(input_per_million=0.5),
        }
    )

    assert table.price("gpt-4o-mini-2024-07-18") == (1.0, 2.0)
    assert table.price("llama3.1:8b") == (0.5, 0.0)


def test_run_costs_come_from_reported_usage_and_configured_prices(
    server: JudgeServer, make_config: MakeConfig, run_with_engine: RunWithEngine
) -> None:
    reference, responses = answers(1)
    config = correctness_only(
        make_config(
            server,
            generation={"model": "my-judge"},
            prices={"my-judge": {"input_per_million": 1000, "output_per_million": 3000}},
        )
    )

    run, engine = run_with_engine(reference, responses, config)

    stats = engine.stats
    expected = (stats.input_tokens * 1000 + stats.output_tokens * 3000) / 1_000_000
    assert stats.input_tokens > 0
    assert stats.output_tokens > 0
    assert run.results[0]["answer_correctness_cost"] == pytest.approx(expected)
    assert stats.cost_usd == pytest.approx(expected)
    assert stats.unpriced_models == set()


def test_unpriced_model_costs_zero_and_is_reported(
    server: JudgeServer, make_config: MakeConfig, run_with_engine: RunWithEngine
) -> None:
    reference, responses = answers(1)
    config = correctness_only(make_config(server, generation={"model": "my-local-judge"}))

    run, engine = run_with_engine(reference, responses, config)

    assert run.results[0]["answer_correctness_cost"] == pytest.approx(0.0)
    assert engine.stats.unpriced_models == {"my-local-judge"}
    assert engine.stats.as_dict()["unpriced_models"] == ["my-local-judge"]


# ----------------------------------------------------------------------- call stats


def test_run_stats_count_calls_tokens_and_cost_per_metric(
    server: JudgeServer, make_config: MakeConfig, run_with_engine: RunWithEngine
) -> None:
    config = full(make_config(server))

    _, engine = run_with_engine(FULL_REFERENCE, FULL_RESPONSES, config)

    summary = engine.stats.as_dict()
    # The embeddings request is sent again once, to confirm its vectors' dimension.
    assert (summary["calls"], summary["requests"], summary["retries"]) == (7, 7, 1)
    assert (summary["cache_hits"], summary["failed_calls"]) == (0, 0)
    assert sorted(summary["by_metric"]) == FULL_METRICS
    assert summary["by_metric"]["answer_relevance"]["calls"] == 3  # 1 judge, 2 embeddings
    assert summary["cost_usd"] == pytest.approx(
        sum(metric["cost_usd"] for metric in summary["by_metric"].values()), abs=1e-6
    )


def test_no_engine_is_built_without_a_model() -> None:
    assert build_engine(load_config({"llm": {"max_concurrency": 2}})) is None


@pytest.mark.parametrize("model", ["o1-pro", "o3-pro", "gpt-5-pro", "gpt-4o-mini-search"])
def test_variants_are_not_priced_as_their_base_model(model: str) -> None:
    assert PriceTable().price(model) is None


def test_dry_run_counts_the_call_that_would_follow_a_reply_it_does_not_get(
    server: JudgeServer, make_config: MakeConfig, run_with_engine: RunWithEngine
) -> None:
    reference = dataset(question("q1", answer="Oslo"))
    responses = [
        response("q1", actual_answer="Oslo is the capital.", retrieved_contexts=["Oslo, Norway."])
    ]
    config = {**make_config(server), "metrics": ["ragas_faithfulness"]}

    run, engine = run_with_engine(reference, responses, config, dry_run=True)

    assert server.count() == 0
    assert engine.stats.plan_dict()["by_metric"]["ragas_faithfulness"]["calls"] == 2
    assert run.results[0]["ragas_faithfulness_error"] == "dry run: the call was counted, not made"
