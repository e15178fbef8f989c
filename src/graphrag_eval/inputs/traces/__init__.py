"""Responses read from what agents and their observability write: OpenAI Chat Completions
and Responses API transcripts, LangChain/LangGraph message lists and OpenTelemetry traces in
OTLP JSON (OpenInference and GenAI conventions), converted to responses of our own format
(docs/integrations.md).

The readers parse JSON only; they import none of those libraries. :mod:`.formats` tells
the format and converts; :mod:`.openai`, :mod:`.langchain` and :mod:`.otlp` (over
:mod:`.spans`, and :mod:`.otlp_lines` for JSON Lines) read one format each; :mod:`.calls`
and :mod:`.common` are what they share.
"""

from graphrag_eval.inputs.traces.formats import (
    AUTO,
    FORMATS,
    NATIVE,
    Converted,
    Reading,
    convert_data,
    convert_jsonl,
    detect_format,
)

__all__ = [
    "AUTO",
    "FORMATS",
    "NATIVE",
    "Converted",
    "Reading",
    "convert_data",
    "convert_jsonl",
    "detect_format",
]
