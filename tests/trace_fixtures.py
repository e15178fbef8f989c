"""Transcripts and traces made by the real libraries, offline (docs/integrations.md): the
OpenAI SDK's message and item types, LangChain's messages and serialisers, and the
OpenTelemetry SDK's spans encoded by the OTLP exporter's encoder into OTLP JSON.

Each conversation is the same small agent run: ``calls`` tool calls, each
``(name, args, output, failed)``, then the final answer."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

Call = tuple[str, dict[str, Any], str, bool]

SPARQL_OUTPUT = json.dumps(
    {
        "head": {"vars": ["s"]},
        "results": {"bindings": [{"s": {"type": "uri", "value": "http://example.org/a"}}]},
    }
)
CALLS: tuple[Call, ...] = (
    ("run_sparql", {"query": "SELECT ?s WHERE { ?s ?p ?o }"}, SPARQL_OUTPUT, False),
    ("run_sparql", {"query": "SELECT broken"}, "syntax error at line 1", True),
)
ANSWER = "The answer is a."


def openai_chat(
    question_id: str, calls: Sequence[Call] = CALLS, answer: str = ANSWER
) -> dict[str, Any]:
    """A Chat Completions conversation: the model's messages are the SDK's types."""
    from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageFunctionToolCall

    messages: list[dict[str, Any]] = [{"role": "user", "content": "Which s?"}]
    tool_calls = [
        ChatCompletionMessageFunctionToolCall(
            id=f"call_{index}",
            type="function",
            function={"name": name, "arguments": json.dumps(args)},
        )
        for index, (name, args, _, _) in enumerate(calls)
    ]
    messages.append(
        ChatCompletionMessage(role="assistant", content=None, tool_calls=tool_calls).model_dump(
            mode="json"
        )
    )
    for index, (_, _, output, _) in enumerate(calls):
        messages.append({"role": "tool", "tool_call_id": f"call_{index}", "content": output})
    messages.append(ChatCompletionMessage(role="assistant", content=answer).model_dump(mode="json"))
    return {
        "question_id": question_id,
        "messages": messages,
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
    }


def openai_responses(
    question_id: str, calls: Sequence[Call] = CALLS, answer: str = ANSWER
) -> dict[str, Any]:
    """Responses API items: function calls, their outputs, the final message."""
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseFunctionToolCallOutputItem,
        ResponseOutputMessage,
    )

    items: list[dict[str, Any]] = []
    for index, (name, args, output, _) in enumerate(calls):
        call = ResponseFunctionToolCall(
            type="function_call",
            id=f"fc_{index}",
            call_id=f"call_{index}",
            name=name,
            arguments=json.dumps(args),
            status="completed",
        )
        items.append(call.model_dump(mode="json", exclude_none=True))
        result = ResponseFunctionToolCallOutputItem(
            type="function_call_output",
            id=f"fco_{index}",
            call_id=f"call_{index}",
            output=output,
            status="completed",
        )
        items.append(result.model_dump(mode="json", exclude_none=True))
    message = ResponseOutputMessage(
        type="message",
        id="msg_1",
        role="assistant",
        status="completed",
        content=[{"type": "output_text", "text": answer, "annotations": []}],
    )
    items.append(message.model_dump(mode="json", exclude_none=True))
    return {"question_id": question_id, "items": items}


def langchain_messages(calls: Sequence[Call] = CALLS, answer: str = ANSWER) -> list[Any]:
    """The messages of a LangGraph agent's state."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    messages: list[Any] = [HumanMessage("Which s?")]
    messages.append(
        AIMessage(
            "",
            tool_calls=[
                {"name": name, "args": args, "id": f"call_{index}"}
                for index, (name, args, _, _) in enumerate(calls)
            ],
            usage_metadata={"input_tokens": 100, "output_tokens": 20, "total_tokens": 120},
        )
    )
    for index, (_, _, output, failed) in enumerate(calls):
        status = "error" if failed else "success"
        messages.append(ToolMessage(output, tool_call_id=f"call_{index}", status=status))
    messages.append(
        AIMessage(
            answer, usage_metadata={"input_tokens": 50, "output_tokens": 10, "total_tokens": 60}
        )
    )
    return messages


def langchain_dict(
    question_id: str, calls: Sequence[Call] = CALLS, answer: str = ANSWER
) -> dict[str, Any]:
    """A conversation as ``messages_to_dict`` writes it."""
    from langchain_core.messages import messages_to_dict

    return {
        "question_id": question_id,
        "messages": messages_to_dict(langchain_messages(calls, answer)),
    }


def langchain_dumpd(
    question_id: str, calls: Sequence[Call] = CALLS, answer: str = ANSWER
) -> dict[str, Any]:
    """A conversation as ``dumpd`` writes it."""
    from langchain_core.load import dumpd

    messages = [dumpd(message) for message in langchain_messages(calls, answer)]
    return {"question_id": question_id, "messages": messages}


class _Collector:
    """A span exporter that keeps what it is given."""

    def __init__(self) -> None:
        self.spans: list[Any] = []

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        self.spans.extend(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def otlp_traces(
    question_ids: Sequence[str],
    conventions: str = "openinference",
    calls: Sequence[Call] = CALLS,
    answer: str = ANSWER,
    attribute: str = "question_id",
) -> dict[str, Any]:
    """One agent run per question, traced by the OpenTelemetry SDK, as one OTLP JSON
    document (``ExportTraceServiceRequest``, ids hex, enums as numbers)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    collector = _Collector()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(collector))
    tracer = provider.get_tracer("agent")
    for question_id in question_ids:
        _agent_run(tracer, question_id, conventions, calls, answer, attribute)
    provider.shutdown()
    return encode_otlp_json(collector.spans)


def _conventions() -> tuple[Any, Any, Any]:
    """The attribute names, from the conventions' own packages."""
    from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes

    return SpanAttributes, OpenInferenceSpanKindValues, gen_ai_attributes


def _agent_run(
    tracer: Any,
    question_id: str,
    conventions: str,
    calls: Sequence[Call],
    answer: str,
    attribute: str,
) -> None:
    from opentelemetry.trace import Status, StatusCode

    oi, kinds, genai = _conventions()
    openinference = conventions == "openinference"
    root_attributes = {attribute: question_id}
    root_attributes.update(
        {oi.OPENINFERENCE_SPAN_KIND: kinds.AGENT.value}
        if openinference
        else {genai.GEN_AI_OPERATION_NAME: genai.GenAiOperationNameValues.INVOKE_AGENT.value}
    )
    with tracer.start_as_current_span("agent", attributes=root_attributes):
        for index, (name, args, output, failed) in enumerate(calls):
            if openinference:
                attributes = {
                    oi.OPENINFERENCE_SPAN_KIND: kinds.TOOL.value,
                    oi.TOOL_NAME: name,
                    "tool_call.id": f"call_{index}",
                    oi.INPUT_VALUE: json.dumps(args),
                    oi.INPUT_MIME_TYPE: "application/json",
                    oi.OUTPUT_VALUE: output,
                }
            else:
                attributes = {
                    genai.GEN_AI_OPERATION_NAME: genai.GenAiOperationNameValues.EXECUTE_TOOL.value,
                    genai.GEN_AI_TOOL_NAME: name,
                    genai.GEN_AI_TOOL_CALL_ID: f"call_{index}",
                    genai.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps(args),
                    genai.GEN_AI_TOOL_CALL_RESULT: output,
                }
            span_name = name if openinference else f"execute_tool {name}"
            with tracer.start_as_current_span(span_name, attributes=attributes) as span:
                if failed:
                    span.set_status(Status(StatusCode.ERROR, output))
        _llm_span(tracer, openinference, answer)


def _llm_span(tracer: Any, openinference: bool, answer: str) -> None:
    oi, kinds, genai = _conventions()
    if openinference:
        from openinference.semconv.trace import MessageAttributes

        message_0 = f"{oi.LLM_OUTPUT_MESSAGES}.0."
        attributes: dict[str, Any] = {
            oi.OPENINFERENCE_SPAN_KIND: kinds.LLM.value,
            message_0 + MessageAttributes.MESSAGE_ROLE: "assistant",
            message_0 + MessageAttributes.MESSAGE_CONTENT: answer,
            oi.LLM_TOKEN_COUNT_PROMPT: 100,
            oi.LLM_TOKEN_COUNT_COMPLETION: 20,
            oi.LLM_TOKEN_COUNT_TOTAL: 120,
        }
    else:
        message = {"role": "assistant", "parts": [{"type": "text", "content": answer}]}
        attributes = {
            genai.GEN_AI_OPERATION_NAME: genai.GenAiOperationNameValues.CHAT.value,
            genai.GEN_AI_OUTPUT_MESSAGES: json.dumps([message]),
            genai.GEN_AI_USAGE_INPUT_TOKENS: 100,
            genai.GEN_AI_USAGE_OUTPUT_TOKENS: 20,
        }
    with tracer.start_as_current_span("llm", attributes=attributes):
        pass


def encode_otlp_json(spans: Sequence[Any]) -> dict[str, Any]:
    """Spans encoded by the OTLP exporter's encoder, then written as OTLP JSON: the protobuf
    JSON mapping with enums as numbers and trace and span ids as hex."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    document = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource in document.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return document
