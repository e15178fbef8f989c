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
    "name",
    "args",
    "output_media_type",
    "ordered",
    "required_columns",
    "ignore_duplicates",
)
_JSON = msgspec.json.Decoder()
_SORTED = msgspec.json.Encoder(order="sorted")


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
    before: dict[str, tuple[Any, ...]] = {}
    for fields in _fields(results_a):
        before.setdefault(str(fields.get("question_id")), _inputs(fields))
    changes = InputChanges()
    seen: set[str] = set()
    for fields in _fields(results_b):
        question_id = str(fields.get("question_id"))
        then = before.get(question_id)
        if then is None or question_id in seen:
            continue
        seen.add(question_id)
        now = _inputs(fields)
        if then[:2] != now[:2] and not _same_reference(then, now):
            changes.reference.append(question_id)
        if then[2:] != now[2:] and not _same_response(then, now):
            changes.response.append(question_id)
    return changes


def _fields(results: Sequence[Mapping[str, Any]] | RunResult) -> Iterable[Mapping[str, Any]]:
    if isinstance(results, RunResult):
        return (result.fields for result in results.results)
    return (record for record in results if type(record) is dict or isinstance(record, Mapping))


def _inputs(fields: Mapping[str, Any]) -> tuple[Any, ...]:
    """A question's inputs as its record has them (compared as they are first: most are
    the same in both runs; the parts that differ are then compared in detail)."""
    get = fields.get
    return (
        get("reference_answer"),
        get("reference_steps"),
        get("status"),
        get("error"),
        get("actual_answer"),
        get("actual_steps"),
    )


def _same_reference(then: tuple[Any, ...], now: tuple[Any, ...]) -> bool:
    """Whether two references are the same: the answer, and each step but what the run
    added (``matches``, ``execution``...); outputs that are the same JSON written differently
    (a stored output and an executed one) are the same."""
    if then[0] != now[0]:
        return False
    groups_then, groups_now = _groups(then[1]), _groups(now[1])
    if [len(group) for group in groups_then] != [len(group) for group in groups_now]:
        return False
    return all(
        _same_reference_step(step_then, step)
        for group_then, group in zip(groups_then, groups_now, strict=True)
        for step_then, step in zip(group_then, group, strict=True)
    )


def _groups(steps: Any) -> list[list[Any]]:
    groups = steps if isinstance(steps, list) else ()
    return [group for group in groups if isinstance(group, list)]


def _same_reference_step(then: Any, now: Any) -> bool:
    if not isinstance(then, Mapping) or not isinstance(now, Mapping):
        return bool(then == now)
    return all(then.get(key) == now.get(key) for key in _REFERENCE_STEP_KEYS) and _same_json(
        then.get("output"), now.get("output")
    )


def _same_json(output: Any, output_then: Any) -> bool:
    """Whether two outputs are the same: equal, or the same JSON, or SPARQL results with
    the same variables and the same rows in another order."""
    if output == output_then:
        return True
    if not isinstance(output, str) or not isinstance(output_then, str):
        return False
    try:
        document, document_then = _JSON.decode(output), _JSON.decode(output_then)
    except msgspec.DecodeError:
        return False
    return bool(document == document_then) or _same_rows(document, document_then)


def _same_rows(document: Any, document_then: Any) -> bool:
    rows, rows_then = _bindings(document), _bindings(document_then)
    if rows is None or rows_then is None or len(rows) != len(rows_then):
        return False
    if _variables(document) != _variables(document_then):
        return False
    return sorted(map(_SORTED.encode, rows)) == sorted(map(_SORTED.encode, rows_then))


def _bindings(document: Any) -> list[Any] | None:
    results = document.get("results") if isinstance(document, dict) else None
    rows = results.get("bindings") if isinstance(results, dict) else None
    return rows if isinstance(rows, list) else None


def _variables(document: dict[str, Any]) -> Any:
    head = document.get("head")
    return head.get("vars") if isinstance(head, dict) else None


def _same_response(then: tuple[Any, ...], now: tuple[Any, ...]) -> bool:
    """Whether two responses are the same: status, error, answer, and each step's name,
    status, arguments and error, and its output unless either run executed its query (the
    output then came from the graph)."""
    if then[2:5] != now[2:5]:
        return False
    steps_then, steps_now = then[5], now[5]
    if not isinstance(steps_then, list) or not isinstance(steps_now, list):
        return bool(steps_then == steps_now)
    return len(steps_then) == len(steps_now) and all(
        _same_actual_step(step_then, step)
        for step_then, step in zip(steps_then, steps_now, strict=True)
    )


def _is_mapping(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)


def _said(step: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a response says of a step, its output aside."""
    get = step.get
    return get("name"), get("status"), get("args"), get("error")


def _same_actual_step(then: Any, now: Any) -> bool:
    if not (_is_mapping(then) and _is_mapping(now)):
        return bool(then == now)
    if _said(then) != _said(now):
        return False
    executed = "execution" in then or "execution" in now
    return executed or bool(then.get("output") == now.get("output"))
