"""Input files of the wrong kind get one line that says what they most likely are and what to
do (docs/inputs.md): another encoding than UTF-8, a CSV or binary file, a reference dataset
given as the config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from graphrag_eval.cli import main

from builders import dataset, question, ref_step, response, step

LATIN_1 = "it looks like Windows-1252/Latin-1: re-save the file as UTF-8"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    code = main([str(arg) for arg in args])
    return code, capsys.readouterr().err


def assert_one_line(stderr: str, expected: str) -> None:
    assert stderr == f"graphrag-eval: error: {expected}\n"


@pytest.fixture
def reference(tmp_path: Path) -> Path:
    path = tmp_path / "reference.yaml"
    questions = [
        question(f"q{i}", [[ref_step("lookup", "x")]], text="Où est-il?") for i in range(3)
    ]
    path.write_text(yaml.safe_dump(dataset(*questions), allow_unicode=True))
    return path


@pytest.fixture
def responses(tmp_path: Path) -> Path:
    path = tmp_path / "responses.jsonl"
    records = [response(f"q{i}", [step("lookup", "x")], actual_answer="été") for i in range(3)]
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_a_jsonl_file_saved_as_windows_1252_evaluates_nothing_and_names_the_encoding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reference: Path
) -> None:
    path = tmp_path / "responses.jsonl"
    records = [response(f"q{i}", [step("lookup", "x")], actual_answer="café") for i in range(3)]
    text = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    path.write_bytes(text.encode("cp1252"))
    out = tmp_path / "out"
    code, err = run(capsys, "evaluate", reference, path, "-o", out)
    assert code == 2
    column = json.dumps(records[0], ensure_ascii=False).index("é") + 1
    assert_one_line(
        err,
        f"{path}: none of its 3 records is a usable response, so nothing would be evaluated; "
        f"line 1 (question 'q0'): not UTF-8 text at column {column} (byte 0xe9); {LATIN_1}",
    )
    assert not (out / "results.jsonl").exists()


def test_a_reference_saved_as_windows_1252_names_the_encoding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reference: Path, responses: Path
) -> None:
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(reference.read_text(encoding="utf-8").encode("cp1252"))
    code, err = run(capsys, "evaluate", latin, responses, "-o", tmp_path / "out")
    assert code == 2
    rows = reference.read_text(encoding="utf-8").splitlines()
    line = next(n for n, text in enumerate(rows, start=1) if "ù" in text)
    column = rows[line - 1].index("ù") + 1
    assert_one_line(
        err, f"{latin}: line {line}, column {column}: not UTF-8 text (byte 0xf9); {LATIN_1}"
    )


def test_one_line_in_another_encoding_still_costs_that_line_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reference: Path, responses: Path
) -> None:
    lines = responses.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].decode("utf-8").encode("cp1252")
    responses.write_bytes(b"".join(lines))
    code, err = run(capsys, "evaluate", reference, responses, "-o", tmp_path / "out", "-q")
    assert code == 0, err


@pytest.mark.parametrize("suffix", [".csv", ".tsv"])
def test_a_csv_responses_file_is_not_supported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reference: Path, suffix: str
) -> None:
    path = tmp_path / f"responses{suffix}"
    path.write_text("question_id,actual_answer\nq0,a\n")
    code, err = run(capsys, "evaluate", reference, path, "-o", tmp_path / "out")
    assert code == 2
    kind = suffix[1:].upper()
    assert_one_line(err, f"{path}: {kind} is not supported: use JSONL, JSON or YAML")


def test_a_csv_reference_is_not_supported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], responses: Path
) -> None:
    path = tmp_path / "reference.csv"
    path.write_text("id,question_text\nq0,Q?\n")
    code, err = run(capsys, "validate", path, responses)
    assert code == 2
    assert_one_line(err, f"{path}: CSV is not supported: use YAML or JSON")


@pytest.mark.parametrize("name", ["responses.png", "responses.jsonl", "responses.json"])
def test_a_png_as_responses_is_a_binary_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reference: Path, name: str
) -> None:
    path = tmp_path / name
    path.write_bytes(PNG)
    code, err = run(capsys, "evaluate", reference, path, "-o", tmp_path / "out")
    assert code == 2
    kind = "a JSON Lines text file" if name.endswith(".jsonl") else "a YAML or JSON text file"
    assert_one_line(err, f"{path}: a binary file (a PNG image), not {kind}")


def test_a_binary_reference_or_config_is_a_binary_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reference: Path, responses: Path
) -> None:
    spreadsheet = tmp_path / "reference.yaml"
    spreadsheet.write_bytes(b"PK\x03\x04\x14\x00\x06\x00" + bytes(200))
    code, err = run(capsys, "validate", spreadsheet, responses)
    assert code == 2
    assert_one_line(
        err,
        f"{spreadsheet}: a binary file (a ZIP archive: an Excel or Word file?), "
        "not a YAML or JSON text file",
    )
    blob = tmp_path / "config.yaml"
    blob.write_bytes(b"llm:\x00\x01\x02" * 10)
    code, err = run(capsys, "validate", reference, responses, "-c", blob)
    assert code == 2
    assert_one_line(
        err, f"{blob}: a binary file (it holds NUL bytes), not a YAML or JSON text file"
    )


def test_a_reference_given_as_the_config_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reference: Path, responses: Path
) -> None:
    code, err = run(capsys, "evaluate", reference, responses, "-c", reference, "-o", tmp_path / "o")
    assert code == 2
    assert_one_line(
        err,
        f"{reference}: this looks like a reference dataset, not a config (a mapping of "
        "sections such as llm: and steps:); give the config file with -c",
    )


def test_responses_given_as_the_config_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reference: Path
) -> None:
    listed = tmp_path / "responses.yaml"
    listed.write_text(yaml.safe_dump([response("q0", [step("lookup", "x")])]))
    code, err = run(capsys, "validate", reference, listed, "-c", listed)
    assert code == 2
    assert "this looks like a responses file, not a config" in err
    assert err.count("\n") == 1
    lines = tmp_path / "responses.jsonl"
    lines.write_text(json.dumps(response("q0")) + "\n" + json.dumps(response("q1")) + "\n")
    code, err = run(capsys, "validate", reference, lines, "-c", lines)
    assert code == 2
    assert_one_line(
        err,
        f"{lines}: this looks like a responses file (JSON Lines), not a config (a mapping of "
        "sections such as llm: and steps:); give the config file with -c",
    )


def test_a_config_given_as_the_responses_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reference: Path
) -> None:
    """`evaluate reference.yaml config.yaml`: its sections read as responses for questions
    'steps' and 'aggregation' are not "did you swap REFERENCE and RESPONSES?"."""
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"steps": {"score_mode": "all_groups"}, "aggregation": {}}))
    for arguments in (["evaluate", reference, config, "-o", tmp_path / "o"],
                      ["validate", reference, config]):  # fmt: skip
        code, err = run(capsys, *arguments)
        assert code == 2
        assert_one_line(
            err,
            f"{config}: this looks like a config, not a responses file (a mapping of sections "
            "such as aggregation:); give the config file with -c",
        )
