"""Malformed and hostile transcripts and traces: a located one-line notice on the item
concerned (file, item, field), the other items kept, never an exception; sizes and nesting
bounded as for any response (docs/integrations.md, docs/inputs.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trace_fixtures as fx
from graphrag_eval.inputs import load_responses, parse_responses
from graphrag_eval.inputs.traces import Reading


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def notices(found: Any) -> list[str]:
    return [str(notice) for notice in found.notices]


def test_bad_tool_calls_are_located_and_the_rest_is_kept(tmp_path: Path) -> None:
    broken = fx.openai_chat("q2")
    messages = broken["messages"]
    messages[1]["tool_calls"][0]["function"]["arguments"] = "{not json"
    messages[1]["tool_calls"][1]["function"]["name"] = None
    messages.insert(2, "a string")
    messages.append({"role": "tool", "tool_call_id": "call_9", "content": "late"})
    path = write_jsonl(tmp_path / "t.jsonl", [fx.openai_chat("q1"), broken])
    found = load_responses(path)
    assert notices(found) == [
        f"{path}: line 2 (question 'q2'): messages[1].tool_calls[0].function.arguments: "
        "arguments are not valid JSON; kept as text",
        f"{path}: line 2 (question 'q2'): messages[1].tool_calls[1].function.name: "
        "a tool call without a name; left out",
        f"{path}: line 2 (question 'q2'): messages[2]: expected a message, got a str; ignored",
        f"{path}: line 2 (question 'q2'): messages[4]: a tool result for no earlier call "
        "(call id 'call_1'); ignored",
        f"{path}: line 2 (question 'q2'): messages[6]: a tool result for no earlier call "
        "(call id 'call_9'); ignored",
    ]
    q2 = found.responses["q2"]
    assert [(s.name, s.args) for s in q2.actual_steps or ()] == [("run_sparql", "{not json")]
    assert q2.actual_answer == fx.ANSWER
    assert len(found.responses["q1"].actual_steps or ()) == 2


def test_a_call_without_a_result_is_a_failed_step() -> None:
    record = fx.openai_chat("q1")
    record["messages"] = record["messages"][:2]  # the run stopped before the tools answered
    steps = parse_responses([record]).responses["q1"].actual_steps or ()
    assert [(s.status, s.raw["error"]) for s in steps] == [
        ("error", "no tool result answers this call")
    ] * 2


def test_an_invalid_langchain_tool_call_is_a_failed_step() -> None:
    from langchain_core.messages import AIMessage, messages_to_dict

    message = AIMessage(
        "",
        invalid_tool_calls=[
            {"name": "run_sparql", "args": "{oops", "id": "c1", "error": "bad JSON"}
        ],
    )
    record = {"question_id": "q1", "messages": messages_to_dict([message])}
    steps = parse_responses([record]).responses["q1"].actual_steps or ()
    assert [(s.name, s.status, s.raw["error"], s.args) for s in steps] == [
        ("run_sparql", "error", "bad JSON", "{oops")
    ]


def test_a_record_without_a_question_id_is_reported_and_the_others_kept(tmp_path: Path) -> None:
    anonymous = fx.langchain_dict("q0")
    del anonymous["question_id"]
    path = write_jsonl(tmp_path / "t.jsonl", [anonymous, fx.langchain_dict("q1")])
    found = load_responses(path)
    assert notices(found) == [
        f"{path}: line 1: question_id: no question id (give the record a question_id, or "
        "metadata.question_id)"
    ]
    assert list(found.responses) == ["q1"]
    assert found.records == 2


def test_a_question_id_in_the_metadata() -> None:
    record = fx.openai_responses("x")
    del record["question_id"]
    record["metadata"] = {"question_id": "q7"}
    assert list(parse_responses([record]).responses) == ["q7"]


def test_a_record_that_cannot_be_converted_is_an_error_on_its_question(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "t.jsonl",
        [{"question_id": "q1", "messages": {"role": "user"}}, fx.openai_chat("q2")],
    )
    found = load_responses(path, reading=Reading("openai-chat"))
    q1 = found.responses["q1"]
    assert q1.is_error
    assert q1.error == f"{path}: line 1 (question 'q1'): messages: expected a list, got a mapping"
    assert notices(found) == [q1.error]
    assert not found.responses["q2"].is_error


def test_broken_and_deep_lines_cost_their_line_only(tmp_path: Path) -> None:
    deep: Any = "x"
    for _ in range(150):
        deep = [deep]
    lines = [
        json.dumps(fx.openai_chat("q1")),
        '{"question_id": "q2", "messages": [',
        json.dumps({"question_id": "q3", "messages": deep}),
        json.dumps(fx.openai_chat("q4")),
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    found = load_responses(path)
    assert sorted(found.responses) == ["q1", "q2", "q3", "q4"]
    assert found.responses["q2"].is_error and found.responses["q3"].is_error
    assert "JSON nested more than 100 levels deep" in (found.responses["q3"].error or "")
    assert not found.responses["q4"].is_error


def _span_document(spans: list[Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def test_malformed_otlp_is_located_and_the_other_traces_kept(tmp_path: Path) -> None:
    good = fx.otlp_traces(["q1"])
    no_question = fx.otlp_traces(["q2"], attribute="other")
    bad_spans = _span_document(["a span?", {"spanId": "01"}])
    path = write_jsonl(
        tmp_path / "t.jsonl", [good, {"resourceSpans": "none"}, bad_spans, no_question]
    )
    found = load_responses(path, reading=Reading("otlp"))
    trace_id = no_question["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    assert notices(found) == [
        f"{path}: line 2: resourceSpans: expected a list, got a str",
        f"{path}: line 3: resourceSpans[0].scopeSpans[0].spans[0]: expected a mapping, got a "
        "str; ignored",
        f"{path}: line 3: resourceSpans[0].scopeSpans[0].spans[1]: a span without traceId or "
        "spanId; ignored",
        f"{path}: trace {trace_id}: no span has the attribute 'question_id' "
        "(traces.question_id_attribute); ignored",
    ]
    assert list(found.responses) == ["q1"]


def test_hostile_attribute_values_are_bounded() -> None:
    nested: dict[str, Any] = {"stringValue": "x"}
    for _ in range(60):  # deeper than an attribute value is read (32 levels)
        nested = {"arrayValue": {"values": [nested]}}
    huge = "y" * 5_000_000
    span = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "name": "tool",
        "startTimeUnixNano": 10**30,  # past what a fixed64 holds: left out
        "endTimeUnixNano": "9" * 400,  # no number: left out
        "attributes": [
            {"key": "question_id", "value": {"intValue": "7"}},
            {"key": "openinference.span.kind", "value": {"stringValue": "TOOL"}},
            {"key": "tool.name", "value": {"stringValue": "t"}},
            {"key": "input.value", "value": nested},
            {"key": "output.value", "value": {"stringValue": huge}},
        ],
        "status": {"code": 2},
    }
    found = parse_responses(_span_document([span]), reading=Reading("otlp"))
    assert found.notices == []
    (step,) = found.responses["7"].actual_steps or ()
    assert (step.status, step.raw["error"], len(step.output)) == (
        "error",
        "the span's status is ERROR",
        5_000_000,
    )
    assert step.execution_timestamp is None
    assert "elapsed_sec" not in step.raw


def test_an_unreadable_document_of_traces_is_one_located_error(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"resourceSpans": [', encoding="utf-8")
    try:
        load_responses(path, reading=Reading("otlp"))
    except Exception as exc:  # the reader of our own format's error: located, one line
        assert str(exc).startswith(str(path)) and "\n" not in str(exc)
    else:
        raise AssertionError("an unreadable file must raise InputError")


def test_arguments_nested_too_deeply_are_kept_as_text() -> None:
    record = fx.openai_chat("q1")
    deep = "[" * 101 + "]" * 101
    record["messages"][1]["tool_calls"][0]["function"]["arguments"] = deep
    found = parse_responses([record])
    (step, _) = found.responses["q1"].actual_steps or ()
    assert step.args == deep
    assert notices(found) == [
        "<responses>: responses[0] (question 'q1'): "
        "messages[1].tool_calls[0].function.arguments: arguments nested more than 100 levels; "
        "kept as text"
    ]


def test_values_of_the_wrong_kind_where_names_are_expected_are_no_error() -> None:
    items = fx.openai_responses("q1")
    items["items"][0]["type"] = ["function_call"]  # a list where a name is
    found = parse_responses([items, fx.openai_responses("q2")])
    assert sorted(found.responses) == ["q1", "q2"]
    document = fx.otlp_traces(["q3"], "genai")
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    for span in spans:
        for attribute in span["attributes"]:
            if attribute["key"] == "gen_ai.operation.name":
                attribute["value"] = {"arrayValue": {"values": [{"stringValue": "chat"}]}}
    traces = parse_responses(document, reading=Reading("otlp"))
    assert traces.responses["q3"].actual_steps == ()  # no span is a tool span now
