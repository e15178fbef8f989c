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


def _judge_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> tuple[int, str, list[dict[str, str]]]:
    """Run ``answer-correctness`` on the TSV ``text``: its exit code, stderr and the rows
    written."""
    source, target = tmp_path / "in.tsv", tmp_path / "judged.tsv"
    source.write_bytes(text.encode())
    with JudgeServer() as server:
        config = write_judge_config(tmp_path, server.url, embedding=None)
        code = answer_correctness_main(["-i", str(source), "-o", str(target), "-c", str(config)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if not target.exists():
        return code, err, []
    limit = csv.field_size_limit(1 << 24)  # a long value is read back whole
    try:
        with target.open(newline="") as stream:
            return code, err, list(csv.DictReader(stream, delimiter="\t"))
    finally:
        csv.field_size_limit(limit)


def test_a_carriage_return_in_the_tsv_header_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "Question\tReference answer\r\tActual answer\nQ1?\tT1a\tT1a\n"
    code, err, _ = _judge_rows(tmp_path, capsys, text)
    assert code == 2
    assert err.count("\n") == 1
    assert f"{tmp_path / 'in.tsv'}: line 1: a carriage return inside a column name" in err


def test_an_unclosed_quote_in_a_tsv_cell_costs_that_row_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [f"Q{i}?\tT{i}a\tT{i}a" for i in range(1, 7)]
    lines[1] = 'Q2?\tT2a\t"T2a is the only one'  # a quote that nothing closes
    lines[4] = 'Q5?\tT5a\t"T5a,\nand T5b"'  # a quoted value over two lines: sound
    lines[5] = 'Q6?\tT6a\t"T6a'  # the last line too
    code, _, judged = _judge_rows(
        tmp_path, capsys, "Question\tReference answer\tActual answer\n" + "\n".join(lines) + "\n"
    )
    assert code == 0
    assert [row["Question"] for row in judged] == [f"Q{i}?" for i in range(1, 7)]
    assert judged[1]["answer_eval_error"] == (
        f"{tmp_path / 'in.tsv'}: line 3: Actual answer: a quote opens the value and no quote "
        'closes it (double it, "", or quote the whole value); not judged'
    )
    assert judged[4]["Actual answer"] == "T5a,\nand T5b"
    assert judged[5]["answer_eval_error"].startswith(f"{tmp_path / 'in.tsv'}: line 8: Actual")
    assert [row["answer_recall"] for row in judged] == ["1.0", "", "1.0", "1.0", "1.0", ""]


def test_a_tsv_cell_longer_than_the_csv_field_limit_is_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long_answer = "T2a " + "and more " * 20_000  # 180 KB: past the csv module's 128 KiB
    text = f"Question\tReference answer\tActual answer\nQ1?\tT1a\tT1a\nQ2?\tT2a\t{long_answer}\n"
    code, _, judged = _judge_rows(tmp_path, capsys, text)
    assert code == 0
    assert [row["answer_eval_error"] for row in judged] == ["", ""]
    assert judged[1]["answer_recall"] == "1.0"


def test_temporaries_a_killed_answer_correctness_or_report_left_are_removed_by_the_next(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``kill -9`` between writing a temporary file and putting it in place leaves it
    (``.judged.tsv.<12 hex digits>.tmp``); the next run of the command that writes that
    file removes it: answer-correctness its output, report its page. Only the temporaries
    of the file written go: another file's are not its own."""
    source, target = tmp_path / "in.tsv", tmp_path / "judged.tsv"
    write_tsv(source, [("Q1?", "T1a", "T1a")])
    stale = tmp_path / ".judged.tsv.0123456789ab.tmp"
    other = tmp_path / ".notes.txt.0123456789ab.tmp"
    for path in (stale, other):
        path.write_text("half written")
    with JudgeServer() as server:
        config = write_judge_config(tmp_path, server.url, embedding=None)
        code = answer_correctness_main(["-i", str(source), "-o", str(target), "-c", str(config)])
    assert code == 0, capsys.readouterr().err
    assert not stale.exists()
    assert other.exists()

    reference = write_reference(tmp_path)
    responses = tmp_path / "responses.jsonl"
    responses.write_text("".join(json.dumps(response(f"q{i}")) + "\n" for i in range(3)))
    out = tmp_path / "out"
    assert main(["evaluate", str(reference), str(responses), "-o", str(out), "-q"]) == 0
    stale_page = out / ".report.html.a1b2c3d4e5f6.tmp"
    elsewhere = tmp_path / "page.html"
    stale_elsewhere = tmp_path / ".page.html.a1b2c3d4e5f6.tmp"
    for path in (stale_page, stale_elsewhere):
        path.write_text("half written")
    assert main(["report", str(out)]) == 0
    assert main(["report", str(out), "-o", str(elsewhere)]) == 0
    assert not stale_page.exists()
    assert not stale_elsewhere.exists()
    # compare's page and a command's -o file
    page, summary = tmp_path / "comparison.html", tmp_path / "aggregates.json"
    stale_files = [tmp_path / f".{path.name}.0123456789ab.tmp" for path in (page, summary)]
    for path in stale_files:
        path.write_text("half written")
    assert main(["compare", str(out), str(out), "--html", str(page)]) == 0
    assert main(["aggregate", str(out), "-o", str(summary)]) == 0
    assert not any(path.exists() for path in stale_files)
    assert other.exists()
