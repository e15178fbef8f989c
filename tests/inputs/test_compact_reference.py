"""``evaluate`` keeps a large JSON reference compact (inputs/compact.py): each question is
validated when the file is read, kept as its encoded JSON, and parsed again when scored;
what it gives, the notices and the errors are those of reading the file the ordinary way."""

from __future__ import annotations

import dataclasses
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval.errors import InputError
from graphrag_eval.evaluation.runner import prepare_reference
from graphrag_eval.inputs import Diagnostics, ReferenceQuestion
from graphrag_eval.inputs.reference import CompactQuestion
from graphrag_eval.steps.sparql_values import parse_sparql_results, sparql_results_vars

from builders import dataset, question, ref_step, sparql, sparql_ref


def _fields(item: ReferenceQuestion) -> dict[str, Any]:
    fields = {f.name: getattr(item, f.name) for f in dataclasses.fields(ReferenceQuestion)}
    fields["reference_steps"] = [
        [(step.name, step.output, dict(step.raw)) for step in group]
        for group in item.reference_steps or ()
    ]
    return fields


def _read(path: Path, compact: bool) -> tuple[list[ReferenceQuestion], list[str]]:
    diagnostics = Diagnostics()
    questions = prepare_reference(path, diagnostics, (), compact_above=0 if compact else None)
    return questions, [str(notice) for notice in diagnostics.notices]


def test_compact_questions_load_as_read_the_ordinary_way(tmp_path: Path) -> None:
    reference = dataset(
        question("q1", [[sparql_ref(sparql(["a"], [["é"]]))]], answer="T1"),
        question("q2", [[sparql_ref("not SPARQL JSON")]], text="second?"),  # a notice
        question("q3", [[ref_step("retrieval", "[]")], [ref_step("x", extra=1)]]),
        template_id="t1",
    ) + dataset(question("q4", answer="4", text="  spaced  "), template_id="t2")
    reference[0]["unknown"] = {"nested": [1, 2.5]}  # an unused field: a notice
    path = tmp_path / "reference.json"
    path.write_text(json.dumps(reference, ensure_ascii=False), encoding="utf-8")
    ordinary, ordinary_notices = _read(path, compact=False)
    compact, compact_notices = _read(path, compact=True)
    assert all(isinstance(item, CompactQuestion) for item in compact)
    assert [(q.id, q.template_id, q.question_text) for q in compact] == [
        (q.id, q.template_id, q.question_text) for q in ordinary
    ]
    assert compact_notices == ordinary_notices
    assert len(compact_notices) == 3  # the SPARQL output, the step field, the template field
    for kept, whole in zip(compact, ordinary, strict=True):
        assert isinstance(kept, CompactQuestion)
        assert _fields(kept.load()) == _fields(whole)


@pytest.mark.parametrize(
    "text",
    [
        '[{"template_id": "t", "questions": [{"id": "q1", "question_text": "?", "x": NaN}]}]',
        '{"template_id": "t", "questions": []}',
        '[{"template_id": "t", "questions": {"id": "q1"}}]',
        '[{"template_id": "t", "questions": [{"id": "q1", "question_text": "?", "x": '
        + "[" * 250
        + "]" * 250
        + "}]}]",
    ],
    ids=["nan", "not_a_list", "questions_not_a_list", "too_deep"],
)
def test_what_the_compact_path_does_not_read_is_read_the_ordinary_way(
    tmp_path: Path, text: str
) -> None:
    path = tmp_path / "reference.json"
    path.write_text(text)
    outcomes = []
    for compact in (False, True):
        try:
            questions, notices = _read(path, compact)
        except InputError as exc:
            outcomes.append(("error", str(exc)))
        else:
            outcomes.append(("read", [q.id for q in questions], notices))
            assert not any(isinstance(q, CompactQuestion) for q in questions)
    assert outcomes[0] == outcomes[1]


def test_a_structural_error_is_the_ordinary_one(tmp_path: Path) -> None:
    """The compact path stops at the first bad question; the ordinary path reports the
    error it always did (here the nesting, found before any question is read)."""
    deep = {"id": "q9", "question_text": "?", "x": json.loads("[" * 250 + "]" * 250)}
    reference = dataset(question("q1"), {"id": "", "question_text": "?"}, deep)
    path = tmp_path / "reference.json"
    path.write_text(json.dumps(reference))
    errors = []
    for compact in (False, True):
        with pytest.raises(InputError) as caught:
            _read(path, compact)
        errors.append(str(caught.value))
    assert errors[0] == errors[1]
    assert "nested" in errors[0]


def test_a_reference_up_to_the_size_is_read_the_ordinary_way(tmp_path: Path) -> None:
    path = tmp_path / "reference.json"
    path.write_text(json.dumps(dataset(question("q1"))))
    size = path.stat().st_size
    assert not isinstance(prepare_reference(path, None, (), compact_above=size)[0], CompactQuestion)
    assert isinstance(prepare_reference(path, None, (), compact_above=size - 1)[0], CompactQuestion)


def test_a_json_reference_over_the_document_limit_is_kept_compact_up_to_its_own_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JSON reference kept compact costs about its size in memory, not a whole parsed
    document's: it may be larger than MAX_DOCUMENT_BYTES, up to MAX_COMPACT_DOCUMENT_BYTES
    (the limits made small here, the files stay small)."""
    reference = dataset(
        *(question(f"q{i}", [[sparql_ref(sparql(["a"], [["x"]]))]]) for i in range(20))
    )
    path = tmp_path / "reference.json"
    path.write_text(json.dumps(reference), encoding="utf-8")
    size = path.stat().st_size
    monkeypatch.setattr("graphrag_eval.files.bounded.MAX_DOCUMENT_BYTES", size // 2)
    with pytest.raises(InputError, match="over the limit of"):
        _read(path, compact=False)  # read whole: refused, as before
    monkeypatch.setattr("graphrag_eval.inputs.compact.MAX_COMPACT_DOCUMENT_BYTES", size)
    questions, _ = _read(path, compact=True)
    assert [item.id for item in questions] == [f"q{i}" for i in range(20)]
    assert all(isinstance(item, CompactQuestion) for item in questions)
    monkeypatch.setattr("graphrag_eval.inputs.compact.MAX_COMPACT_DOCUMENT_BYTES", size - 1)
    with pytest.raises(InputError, match="over the limit of"):
        _read(path, compact=True)  # over both limits: refused


def test_a_binary_file_over_the_document_limit_is_not_read_whole_to_be_kept_compact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "reference.json"
    with path.open("wb") as stream:
        stream.truncate(4 << 20)  # sparse: NUL bytes, nothing on disk
    monkeypatch.setattr("graphrag_eval.files.bounded.MAX_DOCUMENT_BYTES", 1 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match="over the limit of 1 MiB"):
            _read(path, compact=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # its 4 MiB were never read into memory


_OUTPUTS = [
    sparql(["a", "b"], [["x", "1"], ["y", None]]),
    sparql(["a", "a", "b"], [["x", "x", "1"]]),  # a repeated name is one column
    json.dumps({"results": {"bindings": [{"b": {"type": "literal", "value": "1"}}, {}]}}),
    json.dumps({"head": {}, "results": {"bindings": [{"c": {"type": "uri", "value": "u"}}]}}),
    json.dumps(
        {
            "head": {"vars": ["n"]},
            "results": {
                "bindings": [
                    {
                        "n": {
                            "type": "literal",
                            "value": "1e999",
                            "datatype": "http://www.w3.org/2001/XMLSchema#double",
                        }
                    }
                ]
            },
        }
    ),
    json.dumps({"head": {}, "boolean": True}),
    json.dumps({"head": {"vars": ["a"]}}),  # neither boolean nor results
    json.dumps({"head": {"vars": ["a"]}, "results": {"bindings": [{"a": {"value": 1}}]}}),
    json.dumps({"head": {"vars": "a"}, "results": {"bindings": []}}),
    json.dumps([1, 2]),
    "not SPARQL JSON",
    "",
    "{",
]


@pytest.mark.parametrize("output", _OUTPUTS)
def test_validating_a_sparql_output_finds_what_parsing_it_finds(output: str) -> None:
    """The compact path's first read only validates a reference's SPARQL output
    (``sparql_results_vars``): the same variables, and the same error, as parsing it."""
    try:
        parsed = parse_sparql_results(output)
    except ValueError as exc:
        with pytest.raises(ValueError) as caught:
            sparql_results_vars(output)
        assert str(caught.value) == str(exc)
    else:
        assert sparql_results_vars(output) == (None if parsed.is_ask else parsed.vars)


def test_compact_sparql_outputs_give_the_ordinary_notices(tmp_path: Path) -> None:
    """Reference SPARQL outputs, good and bad, with and without required columns: the
    compact read's notices and each question's steps, loaded again, are the ordinary ones."""
    questions = []
    for number, output in enumerate(_OUTPUTS):
        for required in (None, ["a"], ["a", "zz"]):
            fields = {} if required is None else {"required_columns": required}
            questions.append(question(f"q{number}-{required}", [[sparql_ref(output, **fields)]]))
    path = tmp_path / "reference.json"
    path.write_text(json.dumps(dataset(*questions)), encoding="utf-8")
    ordinary, ordinary_notices = _read(path, compact=False)
    compact, compact_notices = _read(path, compact=True)
    assert compact_notices == ordinary_notices
    assert sum("required_columns" in notice for notice in ordinary_notices) > 5
    assert sum("not SPARQL results JSON" in notice for notice in ordinary_notices) > 10
    for kept, whole in zip(compact, ordinary, strict=True):
        assert isinstance(kept, CompactQuestion)
        loaded = kept.load()
        assert [[step.problem for step in group] for group in loaded.reference_steps or ()] == [
            [step.problem for step in group] for group in whole.reference_steps or ()
        ]
