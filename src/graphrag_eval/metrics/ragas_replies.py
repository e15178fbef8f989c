"""The judge's replies of the RAGAS metrics (:mod:`.ragas`; docs/metrics.md), and the
checks that re-ask a reply whose verdicts do not line up with what was asked."""

from __future__ import annotations

from pydantic import BaseModel

from graphrag_eval.llm.replies import ReplyError

__all__ = [
    "ClaimList",
    "ClaimVerdicts",
    "ContextRelevances",
    "StatementList",
    "StatementVerdicts",
    "claims_check",
    "relevance_check",
    "statements_check",
]


class ClaimList(BaseModel):
    """The answer's atomic claims."""

    claims: list[str]


class ClaimVerdict(BaseModel):
    claim: int
    supported: bool
    reason: str


class ClaimVerdicts(BaseModel):
    """Whether the contexts support each claim, in order."""

    verdicts: list[ClaimVerdict]


class StatementList(BaseModel):
    """The reference answer's statements."""

    statements: list[str]


class StatementVerdict(BaseModel):
    statement: int
    attributed: bool
    reason: str


class StatementVerdicts(BaseModel):
    """Whether each statement can be attributed to the contexts, in order."""

    verdicts: list[StatementVerdict]


class ContextRelevance(BaseModel):
    context: int
    relevant: bool
    score: float
    reason: str


class ContextRelevances(BaseModel):
    """A relevance verdict per context, in rank order."""

    contexts: list[ContextRelevance]


def _numbered(count: int, numbers: list[int], what: str) -> None:
    if len(numbers) != count:
        raise ReplyError(f"expected {count} verdicts (one per {what}), got {len(numbers)}")
    if numbers != list(range(1, count + 1)):
        raise ReplyError(f"verdicts must be for {what}s 1 to {count} in order, got {numbers}")


def claims_check(reply: ClaimVerdicts, count: int) -> None:
    _numbered(count, [verdict.claim for verdict in reply.verdicts], "claim")


def statements_check(reply: StatementVerdicts, count: int) -> None:
    _numbered(count, [verdict.statement for verdict in reply.verdicts], "statement")


def relevance_check(reply: ContextRelevances, count: int) -> None:
    _numbered(count, [verdict.context for verdict in reply.contexts], "context")
    for verdict in reply.contexts:
        if not 0 <= verdict.score <= 100:
            raise ReplyError(
                f"context {verdict.context}: score must be from 0 to 100, got {verdict.score:g}"
            )
