"""One hostile record costs that record only (docs/inputs.md, docs/security.md): a response
nested deeper than the parsers go, one with a ``!!python/object`` tag, a TSV row with a bare
carriage return. Each through the command line; the other records are scored."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from graphrag_eval.cli import answer_correctness_main, main
from test_security import read_results, response, write_reference

from builders import write_judge_config, write_tsv
from judge_server import JudgeServer

DEPTH = 1_100  # past Python's recursion limit and libyaml's 1,000 levels
TOO_DEEP = "nested more than 100 levels deep"


def deep_list(depth: int = DEPTH) -> str:
    return "[" * depth + "]" * depth


AT_ITEM_1 = "responses[1] (question 'q1')"
AT_Q1 = "question 'q1'"
RefusedQ1 = Callable[[str, str, str, str], None]


@pytest.fixture
def refused_q1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> RefusedQ1:
    """``refused_q1(name, text, where, problem)``: evaluate the responses ``text`` (in a file
    ``name``) to q0, q1 and q2 of the reference: the run exits 0 with no traceback, q0 and q2
    are scored, and q1 alone is refused in one message naming the file, ``where`` in it and
    the ``problem``."""

    def check(name: str, text: str, where: str, problem: str) -> None:
        reference = write_reference(tmp_path)
        responses = tmp_path / name
        responses.write_text(text)
        out = tmp_path / "out"
        code = main(["evaluate", str(reference), str(responses), "-o", str(out), "-q"])
        assert "Traceback" not in capsys.readouterr().err
        assert code == 0
        results = read_results(out)
        assert results["q0"]["steps_score"] == pytest.approx(1.0)
        assert results["q2"]["steps_score"] == pytest.approx(1.0)
        assert results["q1"]["status"] == "error"
        assert results["q1"]["error"] == f"{responses}: {where}: unparsable response: {problem}"

    return check


def test_a_json_response_nested_past_the_parser_costs_that_item_only(refused_q1: RefusedQ1) -> None:
    deep = f'{{"question_id": "q1", "actual_answer": "a", "x": {deep_list()}}}'
    text = f"[{json.dumps(response('q0'))}, {deep}, {json.dumps(response('q2'))}]"
    refused_q1("responses.json", text, AT_ITEM_1, f"{TOO_DEEP} (in the field 'x')")


def test_a_json_mapping_value_nested_past_the_parser_costs_that_question_only(
    refused_q1: RefusedQ1,
) -> None:
    text = json.dumps({"q0": response("q0"), "q1": "DEEP", "q2": response("q2")})
    text = text.replace('"DEEP"', f'{{"x": "]}}[", "y": {deep_list()}}}')
    refused_q1("responses.json", text, AT_Q1, f"{TOO_DEEP} (in the field 'y')")


def test_a_yaml_response_nested_past_libyaml_costs_that_item_only(refused_q1: RefusedQ1) -> None:
    # q2's steps are an alias of q0's: anchors still work when the document is read again.
    text = (
        "- {question_id: q0, actual_answer: a, actual_steps: &steps "
        f"{json.dumps(response('q0')['actual_steps'])}}}\n"
        f"- {{question_id: q1, actual_answer: a, x: {deep_list()}}}\n"
        "- {question_id: q2, actual_answer: a, actual_steps: *steps}\n"
    )
    refused_q1("responses.yaml", text, AT_ITEM_1, f"{TOO_DEEP} (in the field 'x')")


def test_a_deep_yaml_response_in_block_style_costs_that_question_only(
    refused_q1: RefusedQ1,
) -> None:
    deep = "".join(" " * (2 * level) + "a:\n" for level in range(1, DEPTH))
    text = (
        yaml.safe_dump({"q0": response("q0")})
        + "q1:\n  question_id: q1\n  x:\n"
        + "\n".join("  " + line for line in deep.splitlines())
        + " 1\n"
        + yaml.safe_dump({"q2": response("q2")})
    )
    refused_q1("responses.yaml", text, AT_Q1, f"{TOO_DEEP} (in the field 'x')")


def test_a_python_object_tag_costs_that_item_only(refused_q1: RefusedQ1) -> None:
    first = yaml.safe_dump([response("q0")])
    text = (
        first
        + "- {question_id: q1, actual_answer: !!python/object/apply:os.system [echo owned]}\n"
        + yaml.safe_dump([response("q2")])
    )
    line = len(first.splitlines()) + 1
    refused_q1(
        "responses.yaml",
        text,
        AT_ITEM_1,
        f"line {line}, column 36: cannot be read: could not determine a constructor for the "
        "tag 'tag:yaml.org,2002:python/object/apply:os.system'",
    )


def test_a_python_object_tag_in_the_reference_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = tmp_path / "reference.yaml"
    reference.write_text("- !!python/object:os.system {template_id: t, questions: []}\n")
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps(response("q0")) + "\n")
    code = main(["evaluate", str(reference), str(responses), "-o", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "could not determine a constructor for the tag" in err


def test_a_bare_carriage_return_in_a_tsv_cell_costs_that_row_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, target = tmp_path / "in.tsv", tmp_path / "judged.tsv"
    write_tsv(source, [("Q1?", "T1a", "T1a"), ("Q2?", "T2a\rT2b", "T2a"), ("Q3?", "T3a", "T3a")])
    assert b"T2a\rT2b\t" in source.read_bytes()
    with JudgeServer() as server:
        config = write_judge_config(tmp_path, server.url, embedding=None)
        code = answer_correctness_main(["-i", str(source), "-o", str(target), "-c", str(config)])
        assert server.count("/chat/completions") == 2  # the refused row was not sent
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Traceback" not in captured.err
    assert "3 answers judged (1 failed)" in captured.out
    with target.open(newline="") as stream:
        judged = list(csv.DictReader(stream, delimiter="\t"))
    assert [row["Question"] for row in judged] == ["Q1?", "Q2?", "Q3?"]
    assert judged[0]["answer_recall"] == "1.0"
    assert judged[2]["answer_recall"] == "1.0"
    assert judged[1]["Reference answer"] == "T2a\rT2b"  # quoted, so it reads back whole
    assert judged[1]["answer_recall"] == ""
    assert judged[1]["answer_eval_error"] == (
        f"{source}: line 3: Reference answer: a carriage return inside the value (quote the "
        "value, or remove the carriage return); not judged"
    )


def test_a_row_with_more_values_than_columns_costs_that_row_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, target = tmp_path / "in.tsv", tmp_path / "judged.tsv"
    write_tsv(source, [("Q1?", "T1a", "T1a"), ("Q2?", "T2a", "T2a")])
    source.write_text(source.read_text() + "Q3?\tT3a\tT3a\textra\n")
    with JudgeServer() as server:
        config = write_judge_config(tmp_path, server.url, embedding=None)
        code = answer_correctness_main(["-i", str(source), "-o", str(target), "-c", str(config)])
    assert code == 0, capsys.readouterr().err
    with target.open(newline="") as stream:
        judged = list(csv.DictReader(stream, delimiter="\t"))
    assert [row["answer_recall"] for row in judged] == ["1.0", "1.0", ""]
    assert judged[2]["Question"] == "Q3?"
    assert judged[2]["answer_eval_error"] == (
        f"{source}: line 4: more values than columns (a tab inside a value?); not judged"
    )
