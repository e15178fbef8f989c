"""What besides the system under test can move a comparison (docs/knowledge-graph.md, "The
graph's identity"): the graph the runs executed SPARQL queries against (``run.yaml``'s
``graph``), and, per question, whether its reference changed (the reference answer, or a
reference step's output used for scoring: the stored one, or the one executed) or its
response did (the answer, or a step: its name, status, arguments, and its output unless the
run executed the step's query, which then says nothing of the response)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from graphrag_eval.results.model import RunResult

__all__ = ["InputChanges", "graph_difference", "input_changes"]

_REFERENCE_STEP_KEYS = (
    "output",
    "name",
    "args",
    "output_media_type",
    "ordered",
    "required_columns",
    "ignore_duplicates",
)
_ACTUAL_STEP_KEYS = ("name", "status", "args", "error")
_JSON = msgspec.json.Decoder()


@dataclass(frozen=True, slots=True)
class InputChanges:
    """The questions of both runs whose reference or response differs (ids, in run B's
    order)."""

    reference: list[str] = field(default_factory=list)
    response: list[str] = field(default_factory=list)

    def cause(self, question_id: str) -> str:
        """What changed in the question's inputs, in a few words (empty when neither)."""
        changed = [
            part
            for part, ids in (("reference", self.reference), ("response", self.response))
            if question_id in ids
        ]
        return f"{' and '.join(changed)} changed" if changed else ""


def graph_difference(
    graph_a: Mapping[str, Any] | None, graph_b: Mapping[str, Any] | None
) -> str | None:
    """The warning when the runs were scored against different graphs (or one against none),
    from each run's ``run.yaml`` ``graph``; ``None`` when they agree."""
    if graph_a is None and graph_b is None:
        return None
    if graph_a is not None and graph_b is not None and _identity(graph_a) == _identity(graph_b):
        return None
    return (
        f"the runs were scored against different graphs (A: {_described(graph_a)}; B: "
        f"{_described(graph_b)}): a score may have moved with the graph, not the system"
    )


def _identity(graph: Mapping[str, Any]) -> Any:
    """What tells one graph from another: its content fingerprint when it has one, else all
    that identifies it but its label."""
    fingerprint = graph.get("fingerprint")
    if fingerprint is not None:
        return fingerprint
    return {key: value for key, value in graph.items() if key != "label"}


def _described(graph: Mapping[str, Any] | None) -> str:
    if graph is None:
        return "no store"
    text = str(graph.get("label") or graph.get("kind") or "a store")
    triples = graph.get("triples")
    return f"{text}, {triples:,} triples" if isinstance(triples, int) else text


def input_changes(
    results_a: Sequence[Mapping[str, Any]] | RunResult,
    results_b: Sequence[Mapping[str, Any]] | RunResult,
) -> InputChanges:
    """The questions both runs have whose reference or response differs."""
    before: dict[str, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}
    for fields in _fields(results_a):
        before.setdefault(str(fields.get("question_id")), (_reference(fields), _response(fields)))
    changes = InputChanges()
    seen: set[str] = set()
    for fields in _fields(results_b):
        question_id = str(fields.get("question_id"))
        earlier = before.get(question_id)
        if earlier is None or question_id in seen:
            continue
        seen.add(question_id)
        if not _same_reference(earlier[0], _reference(fields)):
            changes.reference.append(question_id)
        if not _same_response(earlier[1], _response(fields)):
            changes.response.append(question_id)
    return changes


def _fields(results: Sequence[Mapping[str, Any]] | RunResult) -> Iterable[Mapping[str, Any]]:
    if isinstance(results, RunResult):
        return (result.fields for result in results.results)
    return (record for record in results if isinstance(record, Mapping))


def _reference(fields: Mapping[str, Any]) -> tuple[Any, ...]:
    steps = fields.get("reference_steps")
    groups = steps if isinstance(steps, list) else ()
    return (
        fields.get("reference_answer"),
        [
            [_picked(step, _REFERENCE_STEP_KEYS) for step in group]
            for group in groups
            if isinstance(group, list)
        ],
    )


def _same_reference(before: tuple[Any, ...], after: tuple[Any, ...]) -> bool:
    """Whether two references are the same; outputs that are the same JSON written
    differently (a stored output and an executed one) are the same."""
    if before[0] != after[0] or [len(group) for group in before[1]] != [
        len(group) for group in after[1]
    ]:
        return False
    return all(
        step == step_then
        or (
            isinstance(step, tuple)
            and isinstance(step_then, tuple)
            and step[1:] == step_then[1:]
            and _same_json(step[0], step_then[0])
        )
        for group, group_then in zip(after[1], before[1], strict=True)
        for step, step_then in zip(group, group_then, strict=True)
    )


def _same_json(output: Any, output_then: Any) -> bool:
    if not isinstance(output, str) or not isinstance(output_then, str):
        return bool(output == output_then)
    try:
        return bool(_JSON.decode(output) == _JSON.decode(output_then))
    except msgspec.DecodeError:
        return False


def _response(fields: Mapping[str, Any]) -> tuple[Any, ...]:
    steps = fields.get("actual_steps")
    return (
        fields.get("status"),
        fields.get("error"),
        fields.get("actual_answer"),
        [_actual(step) for step in steps] if isinstance(steps, list) else None,
    )


def _actual(step: Any) -> tuple[Any, Any, bool]:
    """A step as compared: what the response says of it, its output, whether the run
    executed its query (the output then came from the graph)."""
    if not isinstance(step, Mapping):
        return step, None, False
    return _picked(step, _ACTUAL_STEP_KEYS), step.get("output"), "execution" in step


def _same_response(before: tuple[Any, ...], after: tuple[Any, ...]) -> bool:
    """Whether two responses are the same; a step executed in either run is compared
    without its output."""
    if before[:3] != after[:3] or (before[3] is None) != (after[3] is None):
        return False
    steps_before, steps_after = before[3] or [], after[3] or []
    return len(steps_before) == len(steps_after) and all(
        said == said_then and (executed or executed_then or output == output_then)
        for (said, output, executed), (said_then, output_then, executed_then) in zip(
            steps_after, steps_before, strict=True
        )
    )


def _picked(step: Any, keys: tuple[str, ...]) -> Any:
    if not isinstance(step, Mapping):
        return step
    return tuple(step.get(key) for key in keys)
