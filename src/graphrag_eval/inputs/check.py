"""Whether a run of these inputs would evaluate anything at all (docs/inputs.md).

Only a run that would evaluate nothing is an error: an empty reference dataset, or responses
none of which is for a reference question.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphrag_eval.errors import InputError, locate
from graphrag_eval.inputs.reference import ReferenceQuestion
from graphrag_eval.inputs.responses import ResponseSet
from graphrag_eval.inputs.shapes import SWAP_HINT

__all__ = ["check_evaluable"]


def check_evaluable(questions: Sequence[ReferenceQuestion], responses: ResponseSet) -> None:
    """Raise :class:`InputError` when a run of these inputs would evaluate nothing (see
    docs/inputs.md): no reference question, or responses none of which is for a reference
    question (most likely the two files were swapped, or belong to different datasets).

    Responses that are merely absent (an empty file) are not an error: every question is
    evaluated as missing, and counted so. Records none of which could be read (every line of
    a file in another encoding broken) are: their first problem is the message.
    """
    if not questions:
        raise InputError("the reference dataset has no questions: nothing to evaluate")
    known = {question.id for question in questions}
    readable = [qid for qid in responses.responses if qid not in responses.unreadable]
    if any(question_id in known for question_id in readable):
        return
    if readable:
        from graphrag_eval.config.model import EvaluationConfig, metric_sections  # (a cycle)

        sections = set(EvaluationConfig.model_fields) | set(metric_sections())
        if set(readable) <= sections:  # every "id" a config section
            raise InputError(
                "this looks like a config, not a responses file (a mapping of sections such "
                f"as {sorted(readable)[0]}:); give the config file with -c",
                file=responses.source,
            )
        count = len(readable)
        which = "its only response is not" if count == 1 else f"none of its {count} responses is"
        raise InputError(
            f"{which} for a question of the reference dataset, so nothing would be evaluated "
            f"({SWAP_HINT})",
            file=responses.source,
        )
    if responses.records:
        first = next((n for n in responses.notices if n.kind == "malformed_response"), None)
        reason = f"; {locate(None, first.item, first.field)}: {first.message}" if first else ""
        which = (
            "its only record is not"
            if responses.records == 1
            else f"none of its {responses.records} records is"
        )
        raise InputError(
            f"{which} a usable response, so nothing would be evaluated{reason}",
            file=responses.source,
        )
