"""A large JSON Lines responses file is read item by item (inputs/responses.py, LazyResponses):
each response is validated when the file is loaded, then parsed again from its line when the
run asks for it, so the responses are never all held; what it gives is what reading the
file whole gave."""

from __future__ import annotations

import codecs
import dataclasses
import json
from pathlib import Path
from typing import Any

from graphrag_eval.inputs import load_responses, parse_responses
from graphrag_eval.inputs.responses import LazyResponses, Response

from builders import response, sparql, step


def _fields(item: Response) -> dict[str, Any]:
    fields = dataclasses.asdict(item)
    fields.pop("problems")  # they name where the item is: a line, or a key
    return fields


def test_responses_parsed_again_are_those_read_whole(tmp_path: Path) -> None:
    items = [
        response("q1", [step("sparql_query", sparql(["a"], [["x"]]), "s")], input_tokens=5),
        {"question_id": "q2", "status": "error", "error": "timed out"},
        response("q3", [step("sparql_query", "not json", "s")], actual_answer="é\u2028"),
        {"question_id": "q4", "actual_answer": "first"},
        {"question_id": "q4", "actual_answer": "later, and used", "input_tokens": "x"},
    ]
    lines = [json.dumps(item, ensure_ascii=False) for item in items]
    path = tmp_path / "responses.jsonl"
    # A byte order mark, a lone carriage return that splits a line, a blank and a broken line.
    text = lines[0] + "\n" + lines[1] + "\r" + lines[2] + "\n\n{broken\n" + "\n".join(lines[3:])
    path.write_bytes(codecs.BOM_UTF8 + text.encode("utf-8"))
    loaded = load_responses(path, lazy_above=0)
    assert isinstance(loaded.responses, LazyResponses)
    assert not isinstance(load_responses(path).responses, LazyResponses)  # small: held
    whole = parse_responses({item["question_id"]: item for item in items})
    assert list(loaded.responses) == ["q1", "q2", "q3", "q4"]
    for qid in ("q1", "q2", "q3", "q4"):
        assert _fields(loaded.responses[qid]) == _fields(whole.responses[qid]), qid
    assert loaded.responses["q4"].problems == (
        f"{path}: line 7 (question 'q4'): input_tokens: input should be a valid integer, "
        "unable to parse string as an integer (got 'x')",
    )
    assert [notice.kind for notice in loaded.notices] == [
        "malformed_response",  # line 5, {broken
        "malformed_response",  # line 7, input_tokens
        "duplicate_response",  # line 7, q4 again
    ]
    assert loaded.records == 6
    assert loaded.responses.pop("q1").question_id == "q1"
    assert "q1" not in loaded.responses
    assert len(loaded.responses) == 3


def test_a_line_changed_since_it_was_read_gives_an_unusable_response(tmp_path: Path) -> None:
    path = tmp_path / "responses.jsonl"
    first = json.dumps({"question_id": "q1", "actual_answer": "a"})
    second = json.dumps({"question_id": "q2", "actual_answer": "b"})
    path.write_text(first + "\n" + second + "\n")
    loaded = load_responses(path, lazy_above=0)
    path.write_text(second + "\n" + first + "\n")  # the same lengths, swapped
    changed = loaded.responses["q1"]
    assert changed.is_error
    assert changed.error == f"{path}: line 1: the file changed while it was read"
    path.unlink()
    assert loaded.responses["q2"].is_error
