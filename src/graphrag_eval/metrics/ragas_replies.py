"""The judge's replies of the RAGAS metrics (:mod:`.ragas`; docs/metrics.md), and how their
verdict lists are read (:mod:`.verdicts`)."""

from __future__ import annotations

from pydantic import BaseModel

from graphrag_eval.llm.replies import ReplyError
from graphrag_eval.metrics.verdicts import VerdictList

__all__ = [
    "CLAIM_VERDICTS",
    "CONTEXT_RELEVANCES",
    "STATEMENT_VERDICTS",
    "ClaimList",
    "ClaimVerdicts",
    "ContextRelevances",
    "StatementList",
    "StatementVerdicts",
]


class ClaimList(BaseModel):
    """The answer's atomic claims."""

    claims: list[str]


class ClaimVerdict(BaseModel):
    claim: int
    supported: bool
    reason: str


class ClaimVerdicts(BaseModel):
    """Whether the contexts support each claim, each verdict naming its claim."""

    verdicts: list[ClaimVerdict]


class StatementList(BaseModel):
    """The reference answer's statements."""

    statements: list[str]


class StatementVerdict(BaseModel):
    statement: int
    attributed: bool
    reason: str


class StatementVerdicts(BaseModel):
    """Whether each statement can be attributed to the contexts, each verdict naming its
    statement."""

    verdicts: list[StatementVerdict]


class ContextRelevance(BaseModel):
    context: int
    relevant: bool
    score: float
    reason: str


class ContextRelevances(BaseModel):
    """A relevance verdict per context, each naming its context's rank."""

    contexts: list[ContextRelevance]


def _score_in_range(verdict: ContextRelevance) -> None:
    if not 0 <= verdict.score <= 100:
        raise ReplyError(
            f"context {verdict.context}: score must be from 0 to 100, got {verdict.score:g}"
        )


CLAIM_VERDICTS = VerdictList(ClaimVerdicts, "verdicts", ClaimVerdict, "claim", "claim")
STATEMENT_VERDICTS = VerdictList(
    StatementVerdicts, "verdicts", StatementVerdict, "statement", "statement"
)
CONTEXT_RELEVANCES = VerdictList(
    ContextRelevances, "contexts", ContextRelevance, "context", "context", _score_in_range
)
