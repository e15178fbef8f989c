"""Write the example transcripts and traces of docs/integrations.md, made by the real
libraries offline (the OpenAI SDK's types, LangChain's serialisers, the OpenTelemetry SDK
with the OTLP exporter's encoder), into this directory (or the one given).

Run from the repository root (the libraries are in the ``dev`` extra)::

    python examples/traces/make_examples.py [DIRECTORY]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

import trace_fixtures as fx

QUESTIONS = ("q1", "q2")


def write_jsonl(path: Path, records: list[object]) -> None:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")


def main(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    write_jsonl(directory / "openai-chat.jsonl", [fx.openai_chat(q) for q in QUESTIONS])
    write_jsonl(directory / "openai-responses.jsonl", [fx.openai_responses(q) for q in QUESTIONS])
    write_jsonl(directory / "langchain.jsonl", [fx.langchain_dict(q) for q in QUESTIONS])
    write_jsonl(directory / "langchain-dumpd.jsonl", [fx.langchain_dumpd(q) for q in QUESTIONS])
    openinference = fx.otlp_traces(QUESTIONS, "openinference")
    (directory / "otlp-openinference.json").write_text(
        json.dumps(openinference, indent=1), encoding="utf-8"
    )
    # One export per line, as the OpenTelemetry collector's file exporter writes them.
    write_jsonl(directory / "otlp-genai.jsonl", [fx.otlp_traces([q], "genai") for q in QUESTIONS])


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)
