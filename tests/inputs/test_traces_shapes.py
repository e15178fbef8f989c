"""Real-world transcript shapes the readers must not lose steps of: OpenAI's legacy
``function_call`` messages, call ids repeated in one turn or reused across turns
(docs/integrations.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from graphrag_eval.inputs import load_responses, parse_responses
from graphrag_eval.inputs.traces import Reading


def steps_of(record: dict[str, Any]) -> list[tuple[str, str, Any]]:
    found = parse_responses([record])
    steps = found.responses[record["question_id"]].actual_steps or ()
    return [(step.name, step.status, step.raw.get("output")) for step in steps]


def tool_call(call_id: str, name: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def test_legacy_function_call_messages_are_steps() -> None:
    """Before tool_calls, the Chat Completions API had one ``function_call`` per assistant
    message, answered by a ``function`` message naming the function (the SDK's types)."""
    from openai.types.chat import ChatCompletionMessage

    call = ChatCompletionMessage(
        role="assistant",
        content=None,
        function_call={"name": "run_sparql", "arguments": json.dumps({"query": "SELECT 1"})},
    ).model_dump(mode="json")
    unanswered = ChatCompletionMessage(
        role="assistant", content=None, function_call={"name": "lookup", "arguments": "{}"}
    ).model_dump(mode="json")
    record = {
        "question_id": "q1",
        "messages": [
            {"role": "user", "content": "Which s?"},
            call,
            {"role": "function", "name": "run_sparql", "content": "[1]"},
            unanswered,
            {"role": "assistant", "content": "S1"},
        ],
    }
    found = parse_responses([record])
    steps = found.responses["q1"].actual_steps or ()
    assert [(s.name, s.status, s.args, s.raw.get("output")) for s in steps] == [
        ("run_sparql", "success", {"query": "SELECT 1"}, "[1]"),
        ("lookup", "error", {}, None),
    ]
    assert "id" not in steps[0].raw  # no id made up
    assert found.responses["q1"].actual_answer == "S1"
    stray = {"question_id": "q2", "messages": [{"role": "function", "name": "x", "content": "1"}]}
    assert [str(n) for n in parse_responses([stray]).notices] == [
        "<responses>: responses[0] (question 'q2'): messages[0]: a function result for no "
        "earlier function_call (function 'x'); ignored"
    ]


def test_a_call_id_given_twice_answers_the_calls_in_order() -> None:
    """Parallel calls sharing an id (some gateways number them per turn): each result
    answers the earliest call still waiting; none is left a success without its output."""
    record = {
        "question_id": "q1",
        "messages": [
            {"role": "assistant", "tool_calls": [tool_call("c", "a"), tool_call("c", "b")]},
            {"role": "tool", "tool_call_id": "c", "content": "one"},
            {"role": "tool", "tool_call_id": "c", "content": "two"},
            {"role": "assistant", "content": None, "tool_calls": [tool_call("c", "d")]},
            {"role": "assistant", "content": "done"},
        ],
    }  # fmt: skip
    assert steps_of(record) == [
        ("a", "success", "one"),
        ("b", "success", "two"),
        ("d", "error", None),  # no result answered it
    ]


def test_a_call_id_reused_in_a_later_turn() -> None:
    record = {
        "question_id": "q1",
        "messages": [
            {"role": "assistant", "content": None, "tool_calls": [tool_call("call_0", "a")]},
            {"role": "tool", "tool_call_id": "call_0", "content": "one"},
            {"role": "assistant", "content": None, "tool_calls": [tool_call("call_0", "b")]},
            {"role": "tool", "tool_call_id": "call_0", "content": [{"type": "text", "text": "2"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        ],
    }  # fmt: skip
    assert steps_of(record) == [("a", "success", "one"), ("b", "success", "2")]


def test_a_span_with_an_empty_trace_id_is_a_notice_on_either_reader(tmp_path: Path) -> None:
    """The fast reader of OTLP JSON Lines and the ordinary one agree on a span whose
    ``traceId`` is empty: left out with a notice, not gathered into a trace of its own."""
    import trace_fixtures as fx

    document = fx.otlp_traces(["q1", "q2"])
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    [q2] = {
        span["traceId"]
        for span in spans
        for attribute in span["attributes"]
        if attribute == {"key": "question_id", "value": {"stringValue": "q2"}}
    }
    for span in spans:
        if span["traceId"] == q2:
            span["traceId"] = ""
    lines = tmp_path / "t.jsonl"
    lines.write_text(json.dumps(document) + "\n", encoding="utf-8")
    whole = tmp_path / "t.json"
    whole.write_text(json.dumps(document), encoding="utf-8")
    found = [load_responses(path, reading=Reading("otlp")) for path in (lines, whole)]
    for one in found:
        assert sorted(one.responses) == ["q1"]
        assert one.notices and all("without traceId" in str(n) for n in one.notices)
    assert [n.field for n in found[0].notices] == [n.field for n in found[1].notices]


def test_an_openinference_tool_span_gives_its_tool_id() -> None:
    """OpenInference names a tool span's call id ``tool.id`` (``SpanAttributes.TOOL_ID``):
    the step's id is that, not the span id."""
    from openinference.semconv.trace import SpanAttributes

    import trace_fixtures as fx

    document = fx.otlp_traces(["q1"])
    for span in document["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for attribute in span["attributes"]:
            if attribute["key"] == "tool_call.id":
                attribute["key"] = SpanAttributes.TOOL_ID
    found = parse_responses(document, reading=Reading("otlp"))
    steps = found.responses["q1"].actual_steps or ()
    assert [step.id for step in steps] == ["call_0", "call_1"]


def test_a_final_refusal_is_the_answer_not_an_earlier_remark() -> None:
    """The model's last message refuses (the SDK's ``refusal``, ``content`` null): that is
    its final answer, not the remark it made before calling a tool."""
    from openai.types.chat import ChatCompletionMessage

    refusal = ChatCompletionMessage(role="assistant", content=None, refusal="I can't help.")
    record = {
        "question_id": "q1",
        "messages": [
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": "Let me look.", "tool_calls": [tool_call("c", "a")]},
            {"role": "tool", "tool_call_id": "c", "content": "one"},
            refusal.model_dump(mode="json"),
        ],
    }
    assert parse_responses([record]).responses["q1"].actual_answer == "I can't help."


def test_a_responses_refusal_part_is_the_answer() -> None:
    from openai.types.responses import ResponseOutputMessage, ResponseOutputRefusal

    message = ResponseOutputMessage(
        id="msg_1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputRefusal(type="refusal", refusal="No.")],
    )
    record = {"question_id": "q1", "items": [message.model_dump(mode="json")]}
    assert parse_responses([record]).responses["q1"].actual_answer == "No."


def test_an_llm_span_inside_another_is_one_call_counted_once() -> None:
    """Two instrumentations of one call (a framework's LLM span and, inside it, the
    provider SDK's): the tokens are the call's, not twice its."""
    import trace_fixtures as fx

    document = fx.otlp_traces(["q1"])
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    [llm] = [span for span in spans if span["name"] == "llm"]
    inner = json.loads(json.dumps(llm))
    inner["spanId"], inner["parentSpanId"] = "f" * 16, llm["spanId"]
    spans.append(inner)
    response = parse_responses(document, reading=Reading("otlp")).responses["q1"]
    assert (response.input_tokens, response.output_tokens, response.total_tokens) == (100, 20, 120)


def test_a_chat_custom_tool_call_is_a_step() -> None:
    """Chat Completions' custom tools (``type: custom``, free-form ``input``), as the
    Responses API's ``custom_tool_call`` is read."""
    from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageCustomToolCall

    call = ChatCompletionMessageCustomToolCall(
        id="call_9", type="custom", custom={"name": "run_sparql", "input": '{"query": "Q"}'}
    )
    message = ChatCompletionMessage(role="assistant", content=None, tool_calls=[call])
    record = {
        "question_id": "q1",
        "messages": [
            message.model_dump(mode="json"),
            {"role": "tool", "tool_call_id": "call_9", "content": "[1]"},
        ],
    }
    found = parse_responses([record])
    assert found.notices == []
    [step] = found.responses["q1"].actual_steps or ()
    assert (step.name, step.id, step.args, step.status) == (
        "run_sparql",
        "call_9",
        {"query": "Q"},
        "success",
    )
