"""Loading and validating reference datasets and responses (docs/inputs.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval import InputError, load_reference, load_responses, run_evaluation
from graphrag_eval.evaluation.runner import prepare_reference
from graphrag_eval.inputs import Diagnostics, check_evaluable, parse_reference, parse_responses
from graphrag_eval.steps.rules import check_reference_step

from builders import dataset, question, ref_step, response, sparql, sparql_ref, step

LATIN_1_HINT = "; it looks like Windows-1252/Latin-1: re-save the file as UTF-8"

# ---------------------------------------------------------------- reference: structural errors


def _error(data: Any) -> str:
    with pytest.raises(InputError) as caught:
        parse_reference(data, source="ref.yaml")
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_reference_must_be_a_list() -> None:
    assert _error({"template_id": "t"}) == "ref.yaml: expected a list of templates, got a mapping"


def test_template_without_id() -> None:
    assert (
        _error([{"questions": []}])
        == "ref.yaml: templates[0]: template_id: missing or not a string"
    )


def test_template_without_questions() -> None:
    message = _error([{"template_id": "t1"}])
    assert (
        message == "ref.yaml: template 't1': questions: expected a list of questions, got nothing"
    )


def test_question_without_id() -> None:
    message = _error(dataset({"question_text": "why?"}))
    assert message == "ref.yaml: template 't1', questions[0]: id: missing or not a string"


def test_question_without_text() -> None:
    message = _error(dataset({"id": "q1"}))
    assert message == "ref.yaml: question 'q1': question_text: missing or not a non-empty string"


def test_duplicate_question_ids_across_templates() -> None:
    data = dataset(question("q1")) + dataset(question("q1"), template_id="t2")
    assert (
        _error(data) == "ref.yaml: question 'q1': id: duplicate question id (also in template 't1')"
    )


def test_duplicate_template_ids() -> None:
    data = dataset(question("q1")) + dataset(question("q2"))
    assert _error(data) == "ref.yaml: template 't1': template_id: duplicate template_id"


def test_flat_step_list_gets_a_hint() -> None:
    data = dataset({"id": "q1", "question_text": "x?", "reference_steps": [ref_step("a")]})
    message = _error(data)
    assert message.startswith("ref.yaml: question 'q1': reference_steps[0]: expected a group")
    assert "list of lists" in message


def test_step_without_name_is_located() -> None:
    data = dataset(question("q1", [[ref_step("a"), {"output": "x"}]]))
    assert _error(data) == "ref.yaml: question 'q1': reference_steps[0][1].name: missing"


def test_step_field_of_wrong_type_is_located() -> None:
    data = dataset(question("q1", [[ref_step("sparql_query", required_columns="abc")]]))
    message = _error(data)
    assert message.startswith("ref.yaml: question 'q1': reference_steps[0][0].required_columns: ")
    assert "'abc'" in message


def test_reference_answer_must_be_text() -> None:
    data = dataset({"id": "q1", "question_text": "x?", "reference_answer": ["a"]})
    assert (
        _error(data) == "ref.yaml: question 'q1': reference_answer: expected a string, got a list"
    )


def test_numeric_ids_become_strings() -> None:
    questions = parse_reference(dataset({"id": 7, "question_text": "x?", "reference_answer": 3}))
    assert questions[0].id == "7"
    assert questions[0].reference_answer == "3"


# ---------------------------------------------------------------- reference: data problems


def test_unparsable_sparql_output_is_a_notice_and_the_step_cannot_match() -> None:
    diagnostics = Diagnostics()
    data = dataset(question("q1", [[sparql_ref("{not json")]]))
    questions = parse_reference(
        data, source="ref.yaml", check_step=check_reference_step, diagnostics=diagnostics
    )
    broken = questions[0].reference_steps[0][0]  # type: ignore[index]
    assert broken.problem is not None and "not SPARQL results JSON" in broken.problem
    [notice] = diagnostics.notices
    assert notice.kind == "reference_data"
    assert str(notice).startswith(
        "ref.yaml: question 'q1': reference_steps[0][0]: output is not SPARQL results JSON: "
    )


def test_required_column_missing_from_reference_vars_is_a_notice() -> None:
    diagnostics = Diagnostics()
    data = dataset(question("q1", [[sparql_ref(sparql(["a"], [["x"]]), required_columns=["b"])]]))
    parse_reference(data, check_step=check_reference_step, diagnostics=diagnostics)
    assert "required_columns b" in diagnostics.notices[0].message


def test_unknown_reference_fields_are_reported_once_with_a_count() -> None:
    diagnostics = Diagnostics()
    data = dataset(
        {"id": "q1", "question_text": "a?", "reference_anwser": "x"},
        {"id": "q2", "question_text": "b?", "reference_anwser": "y"},
    )
    parse_reference(data, diagnostics=diagnostics)
    [notice] = diagnostics.notices
    assert notice.kind == "unused_field"
    assert notice.field == "question.reference_anwser"
    assert "2 times" in notice.message


# ---------------------------------------------------------------- reference files


def test_yaml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "ref.yaml"
    path.write_text("- template_id: t1\n  questions: [\n")
    with pytest.raises(InputError, match=r"ref.yaml: line \d+, column \d+: invalid YAML"):
        load_reference(path)


def test_json_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "ref.json"
    path.write_text('[{"template_id": "t1",\n "questions": [}]')
    with pytest.raises(InputError, match=r"ref.json: line 2, column \d+: invalid JSON"):
        load_reference(path)


def test_missing_reference_file() -> None:
    with pytest.raises(InputError, match=r"nope\.yaml: file not found"):
        load_reference("nope.yaml")


def test_reference_file_paths_are_used_in_messages(tmp_path: Path) -> None:
    path = tmp_path / "ref.json"
    path.write_text(json.dumps(dataset({"id": "q1"})))
    with pytest.raises(InputError) as caught:
        prepare_reference(path)
    assert str(caught.value) == (
        f"{path}: question 'q1': question_text: missing or not a non-empty string"
    )


# ---------------------------------------------------------------- responses


def test_dict_list_jsonl_and_yaml_forms_agree(tmp_path: Path) -> None:
    records = [response("q1", actual_answer="a"), response("q2", actual_answer="b")]
    (tmp_path / "r.json").write_text(json.dumps(records))
    (tmp_path / "d.json").write_text(json.dumps({r["question_id"]: r for r in records}))
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (tmp_path / "r.yaml").write_text(
        "- question_id: q1\n  actual_answer: a\n- question_id: q2\n  actual_answer: b\n"
    )
    loaded = [load_responses(tmp_path / name) for name in ("r.json", "d.json", "r.jsonl", "r.yaml")]
    for response_set in loaded:
        assert sorted(response_set.responses) == ["q1", "q2"]
        assert response_set.responses["q2"].actual_answer == "b"
        assert response_set.notices == []


def test_dict_key_supplies_a_missing_question_id() -> None:
    parsed = parse_responses({"q1": {"actual_answer": "a"}})
    assert parsed.responses["q1"].question_id == "q1"


def test_dict_key_wins_over_a_different_question_id_and_it_is_reported() -> None:
    parsed = parse_responses({"q1": {"question_id": "q9", "actual_answer": "a"}})
    assert parsed.responses["q1"].problems
    assert "differs from its key" in parsed.responses["q1"].problems[0]


def test_error_record() -> None:
    parsed = parse_responses([{"question_id": "q1", "status": "error", "error": "boom"}])
    assert parsed.responses["q1"].is_error
    assert parsed.responses["q1"].error == "boom"


def test_malformed_field_is_dropped_and_reported_the_rest_kept() -> None:
    parsed = parse_responses(
        [response("q1", input_tokens="many", output_tokens=5, actual_answer="a")],
        source="resp.json",
    )
    item = parsed.responses["q1"]
    assert item.input_tokens is None
    assert item.output_tokens == 5
    assert item.actual_answer == "a"
    assert item.problems[0].startswith("resp.json: responses[0] (question 'q1'): input_tokens: ")
    assert parsed.notices[0].kind == "malformed_response"


def test_negative_elapsed_is_malformed() -> None:
    parsed = parse_responses([response("q1", elapsed_sec=-1)])
    assert parsed.responses["q1"].elapsed_sec is None
    assert "elapsed_sec" in parsed.responses["q1"].problems[0]


def test_malformed_step_is_kept_with_its_problem() -> None:
    parsed = parse_responses(
        [response("q1", [{"name": "sparql_query", "output": "x"}])], source="resp.json"
    )
    [bad] = parsed.responses["q1"].actual_steps  # type: ignore[misc]
    assert not bad.succeeded
    assert bad.problem == "actual_steps[0].status: missing"
    notice = parsed.notices[0]
    assert notice.kind == "malformed_step"
    assert str(notice).startswith("resp.json: responses[0] (question 'q1'): actual_steps[0].status")


def test_step_that_is_not_a_mapping() -> None:
    parsed = parse_responses([response("q1", ["sparql_query"])])
    [bad] = parsed.responses["q1"].actual_steps  # type: ignore[misc]
    assert bad.problem == "actual_steps[0]: expected a step mapping, got a str"


def test_response_without_question_id_in_a_list_is_reported_and_skipped() -> None:
    parsed = parse_responses([{"actual_answer": "a"}, response("q2")], source="resp.json")
    assert list(parsed.responses) == ["q2"]
    assert str(parsed.notices[0]) == "resp.json: responses[0]: question_id: missing"


def test_response_that_is_not_a_mapping_in_a_dict_becomes_an_error_item() -> None:
    parsed = parse_responses({"q1": "oops"}, source="resp.json")
    assert parsed.responses["q1"].is_error
    assert "expected a response mapping, got a str" in (parsed.responses["q1"].error or "")


def test_duplicate_responses_keep_the_later_and_say_so() -> None:
    parsed = parse_responses(
        [response("q1", actual_answer="first"), response("q1", actual_answer="second")]
    )
    assert parsed.responses["q1"].actual_answer == "second"
    assert parsed.notices[0].kind == "duplicate_response"


def test_unused_response_fields_are_counted() -> None:
    parsed = parse_responses([response("q1", timestamp=1), response("q2", timestamp=2)])
    [notice] = parsed.notices
    assert notice.kind == "unused_field"
    assert notice.field == "timestamp"
    assert "2 responses" in notice.message


def test_broken_jsonl_line_with_readable_id_becomes_that_items_error(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(
        json.dumps(response("q1"))
        + "\n"
        + '{"question_id": "q2", "actual_answer": "cut off\n'
        + json.dumps(response("q3"))
        + "\n"
    )
    parsed = load_responses(path)
    assert sorted(parsed.responses) == ["q1", "q2", "q3"]
    broken = parsed.responses["q2"]
    assert broken.is_error
    assert broken.error is not None and "line 2" in broken.error and "invalid JSON" in broken.error
    assert str(parsed.notices[0]).startswith(f"{path}: line 2 (question 'q2'): invalid JSON")


def test_broken_jsonl_line_without_id_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text("{{{\n" + json.dumps(response("q1")) + "\n\n")
    parsed = load_responses(path)
    assert list(parsed.responses) == ["q1"]
    assert str(parsed.notices[0]).startswith(f"{path}: line 1: invalid JSON")


def test_responses_of_the_wrong_shape_raise() -> None:
    with pytest.raises(InputError, match="expected a mapping of question id to response"):
        parse_responses("nope")


def test_parsing_never_mutates_the_input() -> None:
    data = {"q1": {"actual_steps": [step("sparql_query", sparql(["a"], [["x"]]))]}}
    snapshot = json.loads(json.dumps(data))
    parse_responses(data)
    assert data == snapshot


def test_repeated_required_columns_are_reported_and_counted_once() -> None:
    diagnostics = Diagnostics()
    output = sparql(["a"], [["x"]])
    data = dataset(question("q1", [[sparql_ref(output, required_columns=["a", "a"])]]))
    [parsed] = parse_reference(data, check_step=check_reference_step, diagnostics=diagnostics)
    assert parsed.reference_steps is not None
    assert parsed.reference_steps[0][0].required_columns == ("a",)
    assert parsed.reference_steps[0][0].problem is None
    [notice] = diagnostics.notices
    assert notice.field == "reference_steps[0][0].required_columns"
    assert "lists a more than once" in notice.message


@pytest.mark.parametrize("status", ["Success", "ok", "done"])
def test_unknown_step_status_is_malformed(status: str) -> None:
    parsed = parse_responses([response("q1", [step("sparql_query", "x", "s", status=status)])])
    [bad] = parsed.responses["q1"].actual_steps  # type: ignore[misc]
    assert bad.problem is not None and bad.problem.startswith("actual_steps[0].status: ")
    assert parsed.notices[0].kind == "malformed_step"


@pytest.mark.parametrize(
    ("field", "value"),
    [("elapsed_sec", float("inf")), ("input_tokens", True), ("total_tokens", -1)],
)
def test_implausible_usage_values_are_malformed(field: str, value: object) -> None:
    parsed = parse_responses([response("q1", **{field: value})])
    assert getattr(parsed.responses["q1"], field) is None
    assert (
        parsed.responses["q1"]
        .problems[0]
        .startswith(f"<responses>: responses[0] (question 'q1'): {field}: ")
    )


# ---------------------------------------------------------------- text that is not UTF-8


def test_jsonl_line_that_is_not_utf8_is_that_lines_malformed_response(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(
        json.dumps(response("q1", actual_answer="fine")).encode()
        + b"\n"
        + b'{"question_id": "q2", "actual_answer": "caf\xe9"}\n'  # Latin-1, not UTF-8
        + json.dumps(response("q3", actual_answer="also fine")).encode()
        + b"\n"
    )
    parsed = load_responses(path)
    assert sorted(parsed.responses) == ["q1", "q2", "q3"]
    assert parsed.responses["q1"].actual_answer == "fine"
    assert parsed.responses["q3"].actual_answer == "also fine"
    broken = parsed.responses["q2"]
    assert broken.is_error
    assert broken.error is not None and "line 2" in broken.error
    assert [str(notice) for notice in parsed.notices] == [
        f"{path}: line 2 (question 'q2'): not UTF-8 text at column 44 (byte 0xe9){LATIN_1_HINT}"
    ]
    assert parsed.notices[0].kind == "malformed_response"


def test_jsonl_bad_byte_without_a_readable_id_costs_only_its_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(response("q1")).encode() + b"\n\xff\xfe{}\n")
    parsed = load_responses(path)
    assert list(parsed.responses) == ["q1"]
    assert [str(notice) for notice in parsed.notices] == [
        f"{path}: line 2: not UTF-8 text at column 1 (byte 0xff)"
    ]


def test_json_responses_that_are_not_utf8_name_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(b'[\n  {"question_id": "q1",\n   "actual_answer": "\xff"}\n]\n')
    with pytest.raises(InputError) as caught:
        load_responses(path)
    assert str(caught.value) == (
        f"{path}: line 3, column 22: not UTF-8 text (byte 0xff){LATIN_1_HINT}"
    )


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_reference_that_is_not_utf8_names_line_and_column(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"ref{suffix}"
    text = json.dumps(dataset(question("q1", text="naïve?")), indent=1, ensure_ascii=False)
    line = next(n for n, row in enumerate(text.splitlines(), start=1) if "na\u00efve" in row)
    column = text.splitlines()[line - 1].index("\u00ef") + 1
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("latin-1"))  # a BOM, then Latin-1
    with pytest.raises(InputError) as caught:
        load_reference(path)
    message = str(caught.value)
    assert message == (
        f"{path}: line {line}, column {column}: not UTF-8 text (byte 0xef){LATIN_1_HINT}"
    )
    assert "codec" not in message and "position" not in message


def test_utf16_reference_gets_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "ref.json"
    path.write_bytes(json.dumps(dataset(question("q1"))).encode("utf-16"))
    with pytest.raises(InputError, match=r"line 1, column 1: .*looks UTF-16: save it as UTF-8"):
        load_reference(path)


def test_bad_byte_on_the_first_line_after_a_bom_counts_columns_without_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ref.yaml"
    path.write_bytes(b"\xef\xbb\xbf- template_id: \xff\n")
    with pytest.raises(InputError, match=r"ref\.yaml: line 1, column 16: not UTF-8 text"):
        load_reference(path)


# ---------------------------------------------------------------- inputs that evaluate nothing


def test_empty_reference_dataset_is_an_error() -> None:
    assert (
        _error([]) == "ref.yaml: the reference dataset is empty (no templates): nothing to evaluate"
    )


def test_reference_whose_templates_have_no_questions_is_an_error() -> None:
    data = [{"template_id": "t1", "questions": []}, {"template_id": "t2", "questions": []}]
    assert _error(data) == (
        "ref.yaml: the reference dataset has no questions (2 templates, without questions): "
        "nothing to evaluate"
    )


SWAP = "did you swap REFERENCE and RESPONSES?"


@pytest.mark.parametrize(
    "data",
    [
        [response("q1", actual_answer="a"), response("q2")],
        {"q1": {"actual_answer": "a"}, "q2": {"actual_answer": "b"}},
        response("q1", [step("sparql_query", "x")]),
    ],
    ids=["list", "dict-by-id", "one-response"],
)
def test_responses_given_as_the_reference_get_the_swap_hint(data: Any) -> None:
    message = _error(data)
    assert message.startswith("ref.yaml: this looks like a responses file, not a reference")
    assert message.endswith(SWAP)


def test_responses_file_given_as_the_reference_gets_the_swap_hint(tmp_path: Path) -> None:
    as_json = tmp_path / "responses.json"
    as_json.write_text(json.dumps({"q1": response("q1", actual_answer="a")}))
    as_jsonl = tmp_path / "responses.jsonl"
    as_jsonl.write_text(json.dumps(response("q1")) + "\n" + json.dumps(response("q2")) + "\n")
    for path in (as_json, as_jsonl):
        with pytest.raises(InputError) as caught:
            load_reference(path)
        assert str(caught.value).startswith(f"{path}: ")
        assert SWAP in str(caught.value)


def test_a_malformed_reference_without_response_keys_gets_no_swap_hint() -> None:
    assert SWAP not in _error([{"id": "q1", "question_text": "a flat list of questions?"}])


def _questions() -> list[Any]:
    return parse_reference(dataset(question("q1"), question("q2")), source="ref.yaml")


def test_responses_for_no_reference_question_are_an_error_with_the_swap_hint() -> None:
    responses = parse_responses([response("x1"), response("x2")], source="r.jsonl")
    with pytest.raises(InputError) as caught:
        check_evaluable(_questions(), responses)
    assert str(caught.value) == (
        "r.jsonl: none of its 2 responses is for a question of the reference dataset, so "
        f"nothing would be evaluated ({SWAP})"
    )


def test_one_matching_response_is_enough() -> None:
    responses = parse_responses([response("x1"), response("q2")], source="r.jsonl")
    check_evaluable(_questions(), responses)  # does not raise: q1 missing, x1 unknown


def test_empty_responses_are_all_missing_not_an_error() -> None:
    check_evaluable(_questions(), parse_responses([]))
    check_evaluable(_questions(), parse_responses({}))


def test_responses_none_of_which_is_usable_are_an_error(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"\xff\n{oops\n")
    with pytest.raises(InputError) as caught:
        check_evaluable(_questions(), load_responses(path))
    assert str(caught.value) == (
        f"{path}: none of its 2 records is a usable response, so nothing would be evaluated; "
        f"line 1: not UTF-8 text at column 1 (byte 0xff){LATIN_1_HINT}"
    )


def test_a_reference_given_as_the_responses_gets_the_swap_hint() -> None:
    responses = parse_responses(dataset(question("q1")), source="ref.json")
    with pytest.raises(InputError) as caught:
        check_evaluable(_questions(), responses)
    assert str(caught.value).startswith("ref.json: its only record is not a usable response")
    assert "this looks like a reference template" in str(caught.value)
    assert str(caught.value).endswith(f"{SWAP})")


def test_run_evaluation_raises_for_a_run_that_evaluates_nothing() -> None:
    reference = dataset(question("q1"), question("q2"))
    with pytest.raises(InputError, match="did you swap"):
        run_evaluation(reference, {"x1": response("x1")})
    with pytest.raises(InputError, match="the reference dataset is empty"):
        run_evaluation([], {"q1": response("q1")})
    missing = run_evaluation(reference, {})
    assert [result["missing_response"] for result in missing] == [True, True]


def test_a_field_unused_once_is_counted_in_the_singular() -> None:
    parsed = parse_responses([response("q1", timestamp=1), response("q2")])
    [notice] = parsed.notices
    assert notice.message == "field not used by graphrag-eval, ignored (1 response)"
    diagnostics = Diagnostics()
    parse_reference(
        dataset({"id": "q1", "question_text": "a?", "reference_anwser": "x"}),
        diagnostics=diagnostics,
    )
    [notice] = diagnostics.notices
    assert notice.message == "field not used by graphrag-eval, ignored (1 time)"
