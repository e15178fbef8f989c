"""The dimension of an embedding endpoint's vectors is agreed by two sources (the
``dimensions`` request parameter, the cache's, or two replies), never fixed by the first
reply: a malformed reply of another dimension is a failed request, sent again, and every
value is scored (docs/llm.md, embeddings)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from graphrag_eval import run_evaluation
from graphrag_eval.errors import CallFailed
from graphrag_eval.evaluation.services import build_engine
from graphrag_eval.llm.providers import register_provider
from graphrag_eval.llm.wire import OPENAI_BASE_URL, Timeouts, WireClient
from graphrag_eval.metrics.loading import load_config

from builders import dataset, question, response
from judge_server import DIMENSIONS, Faults, JudgeServer

MakeConfig = Callable[..., dict[str, Any]]
StartJudge = Callable[..., JudgeServer]

QUESTIONS = 12


def similarity_run(config: dict[str, Any]) -> list[dict[str, Any]]:
    """Semantic similarity of ``QUESTIONS`` answers (one embeddings request per question)."""
    reference = dataset(
        *(question(f"q{i}", answer=f"Unit {i} and feeder {i + 50}") for i in range(QUESTIONS))
    )
    responses = [response(f"q{i}", actual_answer=f"Unit {i}") for i in range(QUESTIONS)]
    return run_evaluation(reference, responses, {**config, "metrics": ["semantic_similarity"]})


def similarities(results: list[dict[str, Any]]) -> list[Any]:
    return [result.get("semantic_similarity_percentage") for result in results]


@pytest.mark.parametrize("concurrency", [1, 16])
def test_a_malformed_first_reply_does_not_fix_the_dimension(
    judge: StartJudge, make_config: MakeConfig, concurrency: int
) -> None:
    healthy = judge()
    expected = similarities(
        similarity_run(make_config(healthy, max_concurrency=concurrency, cache={"enabled": False}))
    )
    faulty = judge(faults=Faults(half_dimension_first=True))

    results = similarity_run(
        make_config(faulty, max_concurrency=concurrency, cache={"enabled": False})
    )

    assert not [result for result in results if "semantic_similarity_error" in result]
    assert similarities(results) == pytest.approx(expected)
    assert None not in expected


def test_vectors_of_zeros_are_failed_values_not_a_zero_similarity(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    """A vector of zeros has no direction: its cosine with anything is undefined. Such
    replies were scored 0 on every question (exit 0, nothing counted as failed)."""
    server = judge(faults=Faults(zero_vectors=True))

    results = similarity_run(make_config(server, cache={"enabled": False}, max_retries=1))

    assert similarities(results) == [None] * QUESTIONS
    assert {result["semantic_similarity_error"] for result in results} == {
        "the embedding endpoint returned a vector of zeros"
    }


def test_a_cached_dimension_agrees_the_first_reply_without_another_request(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = make_config(server)
    first = similarity_run(config)
    server.reset()
    reference = dataset(question("new", answer="Feeder 7"))
    responses = [response("new", actual_answer="Feeder 7 and Unit 3")]

    [result] = run_evaluation(reference, responses, {**config, "metrics": ["semantic_similarity"]})

    assert "semantic_similarity_percentage" in result
    assert server.count("embeddings") == 1  # the cache kept the dimension the first run agreed
    assert "semantic_similarity_error" not in first[0]


def test_a_configured_dimension_refuses_replies_of_another(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge()
    wrong = DIMENSIONS * 2
    config = make_config(
        server, embedding={"dimensions": wrong}, cache={"enabled": False}, max_retries=2
    )

    results = similarity_run(config)

    errors = {result["semantic_similarity_error"] for result in results}
    assert errors == {
        f"the embedding endpoint returned vectors of dimension {DIMENSIONS}, the model's have "
        f"{wrong} (3 attempts)"
    }
    assert server.count("embeddings") == 3 * QUESTIONS  # each sent again max_retries times


def test_a_dimension_given_as_a_request_parameter_needs_no_confirming_request(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    config = make_config(server, embedding={"dimensions": DIMENSIONS}, cache={"enabled": False})

    results = similarity_run({**config, "llm": {**config["llm"], "max_concurrency": 1}})

    assert all("semantic_similarity_percentage" in result for result in results)
    assert server.count("embeddings") == QUESTIONS


class OpenAIAtTheServer:
    """The client of ``provider: openai`` at OpenAI's own API (its base URL), whose requests
    the production client (``llm/wire.py``) sends to the test server instead: a provider
    registered for the test (docs/llm.md, providers)."""

    base_url = OPENAI_BASE_URL

    def __init__(self, server_url: str) -> None:
        self._wire = WireClient(server_url, "sk-test", Timeouts(5.0, 30.0))
        self.request_parameters = self._wire.request_parameters
        self.post = self._wire.post
        self.price = self._wire.price
        self.close = self._wire.close


@pytest.fixture
def openai_at(server: JudgeServer) -> Iterator[JudgeServer]:
    """``provider: openai`` answered by ``server`` (OpenAI's base URL all the same)."""
    previous = register_provider("openai", lambda spec: OpenAIAtTheServer(server.url))
    try:
        yield server
    finally:
        assert previous is not None
        register_provider("openai", previous)


def openai_embeddings(**embedding: Any) -> Any:
    """An engine embedding with OpenAI's ``text-embedding-3-small`` at its own API."""
    config = {
        "llm": {
            "embedding": {"provider": "openai", "api_key": "sk-test", **embedding},
            "cache": {"enabled": False},
            "max_retries": 1,
        }
    }
    return build_engine(load_config(config))


@pytest.mark.parametrize(
    ("embedding", "outcome"),
    [
        ({}, "the embedding endpoint returned vectors of dimension 64, the model's have 1536"),
        ({"dimensions": DIMENSIONS}, None),
    ],
)
def test_openai_models_at_its_api_have_their_known_dimension(
    openai_at: JudgeServer, embedding: dict[str, Any], outcome: str | None
) -> None:
    async def main() -> Any:
        engine = openai_embeddings(**embedding)
        try:
            return await engine.embedding.embed(["a b", "c d"], metric="probe")
        except CallFailed as error:
            return error
        finally:
            await engine.aclose()

    result = asyncio.run(main())

    if outcome is None:  # the dimensions parameter: one request, no confirmation
        assert len(result.vectors) == 2
        assert openai_at.count("embeddings") == 1
    else:  # sent again once (max_retries), then the metric value fails
        assert str(result).startswith(outcome)
        assert openai_at.count("embeddings") == 2
