"""Responses read from transcripts and traces made by the real libraries (OpenAI's types,
LangChain's serialisers, the OpenTelemetry SDK with the OTLP encoder): steps, answer,
tokens and timing, the tool names mapped, the format told from the content
(docs/integrations.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import trace_fixtures as fx
from graphrag_eval.config.traces import TracesConfig
from graphrag_eval.errors import InputError
from graphrag_eval.inputs import Response, load_responses, parse_responses
from graphrag_eval.inputs.traces import Reading

TRANSCRIPTS: dict[str, Callable[[str], dict[str, Any]]] = {
    "openai-chat": fx.openai_chat,
    "openai-responses": fx.openai_responses,
    "langchain": fx.langchain_dict,
    "langchain-dumpd": fx.langchain_dumpd,
}


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def steps_of(response: Response) -> list[tuple[Any, ...]]:
    return [(s.name, s.status, s.id, s.args, s.output) for s in response.actual_steps or ()]


@pytest.mark.parametrize("kind", sorted(TRANSCRIPTS))
def test_a_transcript_is_read_as_steps_and_the_last_assistant_message(
    tmp_path: Path, kind: str
) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [TRANSCRIPTS[kind](q) for q in ("q1", "q2")])
    found = load_responses(path)
    assert found.notices == []
    assert sorted(found.responses) == ["q1", "q2"]
    response = found.responses["q2"]
    assert response.actual_answer == fx.ANSWER
    assert not response.is_error
    names, statuses, ids, args, outputs = zip(*steps_of(response), strict=True)
    assert names == ("run_sparql", "run_sparql")
    assert ids == ("call_0", "call_1")
    assert args == ({"query": "SELECT ?s WHERE { ?s ?p ?o }"}, {"query": "SELECT broken"})
    assert outputs == (fx.SPARQL_OUTPUT, "syntax error at line 1")
    # Only LangChain's tool messages say a tool failed.
    failed = "error" if kind.startswith("langchain") else "success"
    assert statuses == ("success", failed)


def test_the_tokens_of_a_transcript_are_its_usage() -> None:
    chat = parse_responses([fx.openai_chat("q1")]).responses["q1"]
    assert (chat.input_tokens, chat.output_tokens, chat.total_tokens) == (120, 30, 150)
    langchain = parse_responses([fx.langchain_dumpd("q1")]).responses["q1"]
    # The two AI messages' usage_metadata, summed.
    assert (langchain.input_tokens, langchain.output_tokens, langchain.total_tokens) == (
        150,
        30,
        180,
    )


@pytest.mark.parametrize("conventions", ["openinference", "genai"])
def test_an_otlp_trace_is_read_as_steps_with_errors_timing_and_tokens(
    tmp_path: Path, conventions: str
) -> None:
    document = fx.otlp_traces(["q1", "q2"], conventions)
    path = tmp_path / "traces.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    found = load_responses(path)
    assert found.notices == []
    response = found.responses["q2"]
    assert response.actual_answer == fx.ANSWER
    assert (response.input_tokens, response.output_tokens, response.total_tokens) == (100, 20, 120)
    assert response.elapsed_sec is not None and response.elapsed_sec > 0
    steps = response.actual_steps or ()
    assert [(s.name, s.status, s.id, s.args) for s in steps] == [
        ("run_sparql", "success", "call_0", {"query": "SELECT ?s WHERE { ?s ?p ?o }"}),
        ("run_sparql", "error", "call_1", {"query": "SELECT broken"}),
    ]
    assert steps[1].raw["error"] == "syntax error at line 1"
    assert steps[0].output == fx.SPARQL_OUTPUT
    assert all(s.raw["elapsed_sec"] >= 0 for s in steps)
    assert all(str(s.execution_timestamp).endswith("Z") for s in steps)


def test_otlp_json_lines_group_the_spans_of_a_trace_across_lines(tmp_path: Path) -> None:
    document = fx.otlp_traces(["q1"])
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    lines = []
    for span in spans:  # one span per export, as a batching exporter may write them
        line = json.loads(json.dumps(document))
        line["resourceSpans"][0]["scopeSpans"][0]["spans"] = [span]
        lines.append(line)
    found = load_responses(write_jsonl(tmp_path / "t.jsonl", lines))
    assert found.notices == []
    assert len(found.responses["q1"].actual_steps or ()) == 2


def test_the_question_id_attribute_and_the_tool_names_come_from_the_config() -> None:
    document = fx.otlp_traces(["q1"], attribute="app.question")
    traces = TracesConfig(
        tool_names={"run_sparql": "sparql_query"}, question_id_attribute="app.question"
    )
    found = parse_responses(document, reading=Reading("otlp", traces))
    assert [s.name for s in found.responses["q1"].actual_steps or ()] == ["sparql_query"] * 2
    without = parse_responses(document, reading=Reading("otlp"))
    assert without.responses == {}
    assert "no span has the attribute 'question_id'" in str(without.notices[0])


def test_a_mapping_by_question_id_of_message_lists() -> None:
    found = parse_responses({"q1": fx.openai_chat("x")["messages"]})
    assert found.notices == []
    assert found.responses["q1"].actual_answer == fx.ANSWER


def test_our_own_format_is_read_as_before(tmp_path: Path) -> None:
    native = {"question_id": "q1", "actual_answer": "a", "actual_steps": []}
    path = write_jsonl(tmp_path / "r.jsonl", [native, {"question_id": "q2", "status": "error"}])
    assert sorted(load_responses(path).responses) == ["q1", "q2"]
    assert sorted(load_responses(path, reading=Reading("native")).responses) == ["q1", "q2"]


def test_a_format_that_cannot_be_told_is_an_error_saying_how_to_choose(tmp_path: Path) -> None:
    empty = write_jsonl(tmp_path / "e.jsonl", [{"question_id": "q1", "messages": []}])
    with pytest.raises(
        InputError,
        match="line 1 could be langchain or openai-chat; choose it with --responses-format",
    ):
        load_responses(empty)
    assert load_responses(empty, reading=Reading("langchain")).responses["q1"].actual_steps == ()
    mixed = write_jsonl(
        tmp_path / "m.jsonl",
        [{"question_id": "q1", "actual_answer": "a"}, fx.openai_chat("q2")],
    )
    with pytest.raises(InputError, match=r"different formats .*line 1 looks like native"):
        load_responses(mixed)


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(InputError, match="unknown responses format 'otel'"):
        Reading("otel")


def test_otlp_json_lines_are_read_alike_by_the_typed_and_the_ordinary_reader(
    tmp_path: Path,
) -> None:
    documents = [fx.otlp_traces(["q1", "q2"]), fx.otlp_traces(["q3"], "genai")]
    documents[1]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"].append(
        {"key": "nested", "value": {"kvlistValue": {"values": [{"key": "a", "value": {}}]}}}
    )
    lines = write_jsonl(tmp_path / "t.jsonl", documents)  # typed, line by line
    # A lone carriage return: the whole file is read the ordinary way.
    text = lines.read_text(encoding="utf-8")
    ordinary = tmp_path / "cr.jsonl"
    ordinary.write_text(text.replace("\n", "\r", 1), encoding="utf-8", newline="")
    as_list = parse_responses(documents, reading=Reading("otlp"))
    for path in (lines, ordinary):
        found = load_responses(path, reading=Reading("otlp"))
        assert found.notices == []
        assert {q: r.raw for q, r in found.responses.items()} == {
            q: r.raw for q, r in as_list.responses.items()
        }


def test_a_yaml_list_of_conversations(tmp_path: Path) -> None:
    import yaml

    path = tmp_path / "conversations.yaml"
    path.write_text(yaml.safe_dump([fx.langchain_dict("q1"), fx.openai_chat("q2")["messages"]]))
    with pytest.raises(InputError, match="different formats"):
        load_responses(path)
    path.write_text(yaml.safe_dump([fx.langchain_dict("q1"), fx.langchain_dumpd("q2")]))
    found = load_responses(path)
    assert found.notices == []
    assert [r.actual_answer for r in found.responses.values()] == [fx.ANSWER, fx.ANSWER]


def test_the_traces_section_is_checked() -> None:
    from graphrag_eval.config import parse_config
    from graphrag_eval.errors import ConfigError

    config = parse_config({"traces": {"tool_names": {"run_sparql": "sparql_query"}}})
    assert config.traces.tool_names == {"run_sparql": "sparql_query"}
    assert config.traces.question_id_attribute == "question_id"
    for section in ({"tool_names": {"run_sparql": " "}}, {"question_id_atribute": "x"}):
        with pytest.raises(ConfigError, match="traces"):
            parse_config({"traces": section})


def test_the_library_maps_tool_names_through_the_config_as_the_command_line_does() -> None:
    """``run_evaluation`` given a trace file reads it with the config's ``traces:`` section:
    the agent's ``run_sparql`` is scored as ``sparql_query``, as ``evaluate`` scores it."""
    from graphrag_eval import run_evaluation
    from graphrag_eval.config import parse_config

    examples = Path(__file__).resolve().parents[2] / "examples" / "traces"
    config = parse_config({"traces": {"tool_names": {"run_sparql": "sparql_query"}}})
    results = run_evaluation(
        examples / "reference.yaml", examples / "otlp-genai.jsonl", config=config
    )
    names = {step["name"] for result in results for step in result.get("actual_steps", [])}
    assert "sparql_query" in names and "run_sparql" not in names
    unmapped = run_evaluation(examples / "reference.yaml", examples / "otlp-genai.jsonl")
    assert "run_sparql" in {
        step["name"] for result in unmapped for step in result.get("actual_steps", [])
    }
