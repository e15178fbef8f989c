"""The ``traces:`` config section: how responses read from agent transcripts and traces
(OpenAI, LangChain, OpenTelemetry) become responses (docs/integrations.md)."""

from __future__ import annotations

from pydantic import Field, field_validator

from graphrag_eval.config.base import Section

__all__ = ["DEFAULT_QUESTION_ID_ATTRIBUTE", "TracesConfig"]

DEFAULT_QUESTION_ID_ATTRIBUTE = "question_id"


class TracesConfig(Section):
    """Reading responses from transcripts and traces (docs/integrations.md)."""

    tool_names: dict[str, str] = Field(default_factory=dict)
    """The agent's tool names and the step names they are (``run_sparql: sparql_query``);
    a tool not listed keeps its name."""

    question_id_attribute: str = DEFAULT_QUESTION_ID_ATTRIBUTE
    """The span (or resource) attribute of an OpenTelemetry trace that holds the question
    id."""

    @field_validator("tool_names")
    @classmethod
    def _names(cls, value: dict[str, str]) -> dict[str, str]:
        for tool, step in value.items():
            if not tool.strip() or not step.strip():
                raise ValueError("tool and step names must not be empty")
        return value

    @field_validator("question_id_attribute")
    @classmethod
    def _attribute(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value
