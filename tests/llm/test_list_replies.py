"""List replies that do not fit what was asked (docs/llm.md, "Replies that don't fit"), end to
end through the real client and the HTTP judge server's list-shape faults: lists short of
entries, out of order, with duplicates or entries for items not asked, an item never judged,
and an endpoint whose structured output rejects the schema's list limits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from graphrag_eval import run_evaluation

from builders import contexts, dataset, question, response, step
from judge_server import Faults, JudgeServer

Config = dict[str, Any]
StartJudge = Callable[..., JudgeServer]
MakeConfig = Callable[..., Config]

LIST_METRICS = ("ragas_faithfulness", "ragas_context_precision", "ragas_context_recall")
ANSWERS = [
    "OSLO T1, OSLO T2 and OSLO T3",
    "OSLO T1 and BERGEN T4",
    "OSLO T2, OSLO T3, OSLO T4 and OSLO T5",
    "TROMSO T1 and OSLO T1",
]
CONTEXTS = [
    "Transformer OSLO T1 is in substation Oslo.",
    "The weather is sunny.",
    "OSLO T2 and OSLO T3 were installed in 2001.",
    "BERGEN T4 is in Bergen.",
]


def items(count: int = len(ANSWERS)) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``count`` questions with the same reference answer, each answered by one of
    :data:`ANSWERS`, with the :data:`CONTEXTS` both retrieved and in a retrieval step."""
    output = contexts(*((f"d{n}", text) for n, text in enumerate(CONTEXTS)))
    reference = dataset(
        *(
            question(f"q{n}", answer="OSLO T1, OSLO T2, OSLO T3", text="Which transformers?")
            for n in range(count)
        )
    )
    responses = [
        response(
            f"q{n}",
            [step("retrieval", output)],
            actual_answer=ANSWERS[n],
            retrieved_contexts=CONTEXTS,
        )
        for n in range(count)
    ]
    return reference, responses


def scores(results: list[dict[str, Any]]) -> dict[tuple[str, str], Any]:
    """Every list metric's value per item (the retrieval answer ones from the step)."""
    found: dict[tuple[str, str], Any] = {}
    for result in results:
        for name in LIST_METRICS:
            found[result["question_id"], name] = result.get(name)
        [scored] = result["actual_steps"]
        found[result["question_id"], "precision"] = scored.get("retrieval_answer_precision")
    return found


def config_for(server: JudgeServer, make_config: MakeConfig) -> Config:
    return {
        **make_config(server),
        "metrics": [*LIST_METRICS, "retrieval_answer"],
    }


def chat_count(server: JudgeServer) -> int:
    return server.count("chat/completions")


@pytest.fixture
def clean(judge: StartJudge, make_config: MakeConfig) -> tuple[dict[Any, Any], int]:
    """The scores of a judge whose lists fit, and how many chat requests they took."""
    server = judge()
    reference, responses = items()
    results = run_evaluation(reference, responses, config_for(server, make_config))
    values = scores(results)
    assert all(isinstance(value, float) for value in values.values())
    return values, chat_count(server)


@pytest.mark.parametrize(
    "faults",
    [
        Faults(reversed_list=1.0),
        Faults(duplicate_entry=1.0),
        Faults(out_of_range_entry=1.0),
    ],
    ids=["reversed", "duplicate", "out-of-range"],
)
def test_lists_out_of_order_or_with_extra_entries_are_used_as_they_are(
    faults: Faults,
    judge: StartJudge,
    make_config: MakeConfig,
    clean: tuple[dict[Any, Any], int],
) -> None:
    server = judge(faults=faults)
    reference, responses = items()

    results = run_evaluation(reference, responses, config_for(server, make_config))

    expected, clean_chats = clean
    assert scores(results) == pytest.approx(expected)
    assert chat_count(server) == clean_chats  # no re-ask, no follow-up
    assert not any(key.endswith("_error") for result in results for key in result)


def test_items_a_short_list_leaves_out_are_asked_again_in_one_follow_up(
    judge: StartJudge, make_config: MakeConfig, clean: tuple[dict[Any, Any], int]
) -> None:
    server = judge(faults=Faults(short_list=1.0))
    reference, responses = items()

    results = run_evaluation(reference, responses, config_for(server, make_config))

    expected, _ = clean
    assert scores(results) == pytest.approx(expected)  # every value kept, as a fitting judge's
    follow_ups = [
        request.body
        for request in server.requests
        if request.path.endswith("chat/completions")
        and "Contexts:\n[4] BERGEN T4 is in Bergen." in request.body["messages"][-1]["content"]
    ]
    # Context precision and retrieval answer precision: one follow-up each, listing only the
    # last context (the items ask the same of the contexts: their calls are shared).
    assert len(follow_ups) == 2
    for body in follow_ups:
        schema = body["response_format"]["json_schema"]["schema"]
        field = next(iter(schema["properties"]))
        assert schema["properties"][field]["minItems"] == 1


def test_an_item_never_judged_leaves_the_metric_over_the_others_and_says_so(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(faults=Faults(drop_item=2))
    reference, responses = items()

    results = run_evaluation(reference, responses, config_for(server, make_config))

    for result in results:
        assert result["ragas_context_precision"] == pytest.approx(100 * 2 / 3)
        assert result["ragas_context_precision_reason"].endswith("3 of 4 contexts judged")
        assert result["ragas_context_recall_reason"].endswith("2 of 3 statements judged")
        [scored] = result["actual_steps"]
        assert scored["retrieval_answer_precision_reason"].endswith("3 of 4 contexts judged")
    first = results[0]
    assert first["ragas_faithfulness_reason"].splitlines()[1] == "[not judged] OSLO T2"
    assert first["ragas_faithfulness_reason"].endswith("2 of 3 claims judged")
    assert first["ragas_faithfulness"] == pytest.approx(100.0)  # OSLO T1 and OSLO T3


def test_the_schema_names_the_items_asked_and_the_list_length(
    server: JudgeServer, make_config: MakeConfig
) -> None:
    reference, responses = items(1)

    run_evaluation(reference, responses, config_for(server, make_config))

    [body] = [
        request.body
        for request in server.requests
        if request.body.get("response_format", {}).get("json_schema", {}).get("name")
        == "ContextRelevances"
    ]
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["contexts"]["minItems"] == 4
    assert schema["properties"]["contexts"]["maxItems"] == 4
    assert schema["$defs"]["ContextRelevance"]["properties"]["context"]["enum"] == [1, 2, 3, 4]


def test_an_endpoint_that_rejects_list_limits_is_asked_without_them_from_then_on(
    judge: StartJudge, make_config: MakeConfig, clean: tuple[dict[Any, Any], int]
) -> None:
    server = judge(faults=Faults(reject_schema_keywords=True))
    reference, responses = items()
    # One call at a time: calls already sent when the rejection comes back meet it too.
    config = config_for(server, make_config)
    config["llm"] = {**config["llm"], "max_concurrency": 1}

    results = run_evaluation(reference, responses, config)

    expected, clean_chats = clean
    assert scores(results) == pytest.approx(expected)
    assert server.count(outcome="schema_keyword") == 1  # once per endpoint, remembered
    assert chat_count(server) == clean_chats + 1
    outcomes = [request.outcome for request in server.requests]
    rejected = outcomes.index("schema_keyword")
    assert set(outcomes[rejected + 1 :]) == {"ok"}


def test_answer_relevance_uses_the_questions_a_short_list_has(
    judge: StartJudge, make_config: MakeConfig
) -> None:
    server = judge(faults=Faults(short_list=1.0))
    reference, responses = items(1)
    config = {**make_config(server), "metrics": ["answer_relevance", "ragas_answer_relevance"]}

    [result] = run_evaluation(reference, responses, config)

    assert result["answer_relevance_reason"].splitlines()[-1] == "(2 of 3 questions written)"
    assert len(result["answer_relevance_reason"].splitlines()) == 3
    assert result["ragas_answer_relevance"] == pytest.approx(100 * result["answer_relevance"])
    assert server.count("chat/completions") == 1  # used as it is: no re-ask
