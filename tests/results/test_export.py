"""The per-question results as CSV and Parquet (docs/outputs.md, "Tables: CSV and Parquet"):
read back with pandas and pyarrow, every cell equals the value in ``results.jsonl``; text a
spreadsheet would run as a formula is neutralised in CSV; Parquet without pyarrow is one
line naming the extra, before the run."""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from graphrag_eval.cli import main
from graphrag_eval.results.export import spreadsheet_safe, table_columns, write_table

from builders import dataset, evaluate_cli, question, read_records, response

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_ARGS = (
    EXAMPLES / "reference.yaml",
    EXAMPLES / "responses.jsonl",
    "-c",
    EXAMPLES / "config.yaml",
    "-q",
)
JSON_COLUMNS = {"reference_steps", "actual_steps"}


@pytest.fixture(scope="module")
def example_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled example evaluated with ``--format csv``, then ``report --format parquet``
    of the same run (a run of 5 questions, one of them an error response)."""
    out = tmp_path_factory.mktemp("export") / "out"
    assert evaluate_cli(*EXAMPLE_ARGS, "-o", out, "--format", "csv") == 0
    assert main(["report", str(out), "--format", "parquet"]) == 0
    return out


def _same(cell: Any, value: Any, column: str) -> None:
    if column in JSON_COLUMNS:
        assert isinstance(cell, str) and json.loads(cell) == value, column
    elif value is None:
        assert cell is None or (isinstance(cell, float) and math.isnan(cell)), column
    elif isinstance(value, float):
        assert cell == pytest.approx(value, rel=1e-12), column
    else:
        assert cell == value, column


def test_parquet_reads_back_equal_to_results_jsonl(example_run: Path) -> None:
    records = read_records(example_run)
    table = pq.read_table(example_run / "results.parquet")
    columns = list(dict.fromkeys(key for record in records for key in record))
    assert table.column_names == columns
    assert table.num_rows == len(records) == 5
    for record, row in zip(records, table.to_pylist(), strict=True):
        for column in columns:
            _same(row[column], record.get(column), column)
    schema = table.schema
    assert schema.field("steps_score").type == pa.float64()
    assert schema.field("input_tokens").type == pa.int64()
    assert schema.field("question_id").type == pa.string()
    steps = schema.field("actual_steps")
    assert steps.type == pa.string() and steps.metadata[b"graphrag_eval.type"] == b"json"
    tokens = schema.field("input_tokens").metadata
    assert tokens[b"graphrag_eval.unit"] == b"tokens" and tokens[b"graphrag_eval.kind"] == b"usage"
    # The error response has no tokens: a null, not a 0.
    error_row = next(r for r in table.to_pylist() if r["status"] == "error")
    assert error_row["input_tokens"] is None and error_row["steps_score"] is not None


def test_csv_reads_back_equal_to_results_jsonl(example_run: Path) -> None:
    records = read_records(example_run)
    frame = pd.read_csv(example_run / "results.csv", keep_default_na=False, na_values=[""])
    columns = list(dict.fromkeys(key for record in records for key in record))
    assert list(frame.columns) == columns and len(frame) == 5
    assert frame["steps_score"].dtype == "float64"
    assert frame["input_tokens"].dtype == "float64"  # integers, with a null: pandas' float
    rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
    for record, row in zip(records, rows, strict=True):
        for column in columns:
            _same(row[column], record.get(column), column)


def test_report_exports_what_evaluate_wrote(example_run: Path, tmp_path: Path) -> None:
    """The table of a saved run (from its typed results) is the one evaluate wrote (from its
    records), byte for byte; ``-o`` named .csv chooses CSV."""
    target = tmp_path / "again.csv"
    assert main(["report", str(example_run), "-o", str(target)]) == 0
    assert target.read_bytes() == (example_run / "results.csv").read_bytes()


def _hostile_run(tmp_path: Path) -> Path:
    texts = ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "\tTAB", "\rCR", "plain"]
    reference = dataset(*(question(f"q{i}", answer="A") for i in range(len(texts))))
    reference += dataset(question("=cmd|' /C calc'!A0", answer="A"), template_id="=t2")
    (tmp_path / "reference.yaml").write_text(yaml.safe_dump(reference))
    lines = [response(f"q{i}", actual_answer=text) for i, text in enumerate(texts)]
    lines.append(response("=cmd|' /C calc'!A0", actual_answer="A"))
    (tmp_path / "responses.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "out"
    args = (tmp_path / "reference.yaml", tmp_path / "responses.jsonl", "-o", out, "-q")
    assert evaluate_cli(*args, "--format", "csv") == 0
    return out


def test_csv_neutralises_formulas(tmp_path: Path) -> None:
    out = _hostile_run(tmp_path)
    with (out / "results.csv").open(newline="", encoding="utf-8") as stream:
        rows = list(csv.DictReader(stream))
    answers = [row["actual_answer"] for row in rows]
    assert answers[:7] == [
        "'=HYPERLINK(\"http://x\")", "'+1+1", "'-2+3", "'@SUM(A1)", "'\tTAB", "'\rCR", "plain"
    ]  # fmt: skip
    assert rows[7]["question_id"] == "'=cmd|' /C calc'!A0" and rows[7]["template_id"] == "'=t2"
    for row in rows:  # no cell a spreadsheet would run
        assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in row.values())
    # Numbers are numbers, negative ones too (a text that looks like one is neutralised).
    write_table(out / "n.csv", lambda: [{"delta": -0.5, "text": "-0.5"}], "csv")
    assert (out / "n.csv").read_text().splitlines()[1] == "-0.5,'-0.5"
    # Parquet is no spreadsheet: the texts are kept as they are.
    write_table(out / "t.parquet", lambda: read_records(out), "parquet")
    parquet = pq.read_table(out / "t.parquet").to_pylist()
    assert [row["actual_answer"] for row in parquet][:2] == ['=HYPERLINK("http://x")', "+1+1"]


def test_spreadsheet_safe() -> None:
    assert spreadsheet_safe("=1+1") == "'=1+1"
    assert spreadsheet_safe("\rx") == "'\rx"
    assert spreadsheet_safe("'=1") == "'=1"  # already text
    assert spreadsheet_safe("a=1") == "a=1"
    assert spreadsheet_safe("") == ""


def test_column_types_and_batches(tmp_path: Path) -> None:
    """Types come from the values: a flag with nulls is a boolean, integers and floats a
    float, values of different types a JSON column; more rows than one batch are all
    written."""
    records: list[dict[str, Any]] = [
        {"question_id": f"q{i}", "n": i, "x": i if i % 2 else i + 0.5, "mixed": "a" if i else 1}
        for i in range(2500)
    ]
    records[3]["missing_response"] = True
    types = {column.name: column.type.value for column in table_columns(records)}
    assert types == {
        "question_id": "text", "n": "int", "x": "float", "mixed": "json",
        "missing_response": "bool",
    }  # fmt: skip
    path = tmp_path / "t.parquet"
    assert write_table(path, lambda: records, "parquet") == 2500
    rows = pq.read_table(path).to_pylist()
    assert len(rows) == 2500 and rows[2499]["n"] == 2499 and rows[0]["x"] == 0.5
    assert rows[3]["missing_response"] is True and rows[4]["missing_response"] is None
    assert [json.loads(row["mixed"]) for row in rows[:2]] == [1, "a"]
    assert write_table(tmp_path / "empty.parquet", lambda: [], "parquet") == 0
    assert pq.read_table(tmp_path / "empty.parquet").num_rows == 0


def test_parquet_without_pyarrow_is_one_line_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [name for name in sys.modules if name.split(".")[0] == "pyarrow"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    out = tmp_path / "out"
    assert evaluate_cli(*EXAMPLE_ARGS, "-o", out, "--format", "parquet") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'graphrag-eval[parquet]'" in err
    assert not out.exists()  # checked before anything was evaluated or written
    assert evaluate_cli(*EXAMPLE_ARGS, "-o", out) == 0
    assert main(["report", str(out), "-o", str(tmp_path / "r.parquet")]) == 2
    assert "graphrag-eval[parquet]" in capsys.readouterr().err
    assert not (tmp_path / "r.parquet").exists()


def test_overwrite_removes_the_tables_of_the_earlier_run(tmp_path: Path) -> None:
    """A table is one of the run's files: a directory holding only one is refused, and
    ``--overwrite`` removes it with the rest (none is left beside a run that wrote none)."""
    out = tmp_path / "out"
    assert evaluate_cli(*EXAMPLE_ARGS, "-o", out, "--format", "parquet") == 0
    assert (out / "results.parquet").is_file()
    for name in ("results.jsonl", "aggregates.yaml", "run.yaml", "checkpoint.json"):
        (out / name).unlink()
    assert evaluate_cli(*EXAMPLE_ARGS, "-o", out) == 2
    assert evaluate_cli(*EXAMPLE_ARGS, "-o", out, "--overwrite") == 0
    assert not (out / "results.parquet").exists() and (out / "results.jsonl").is_file()


def test_a_lone_surrogate_is_written_as_its_escape(tmp_path: Path) -> None:
    """JSON can hold a lone surrogate (``"\\ud800"``), UTF-8 cannot: a text cell and a JSON
    cell get the escape ``\\ud800`` (JSON reads it back as the same character),
    as in ``results.jsonl``, instead of a traceback after the run."""
    reference = tmp_path / "reference.json"
    reference.write_text(json.dumps(dataset(question("q1", answer="a"))))
    responses = tmp_path / "responses.jsonl"
    step = {"name": "search", "args": {"k": "\udc00"}, "output": "o", "status": "success"}
    given = response("q1", [step], actual_answer="a\ud800b")
    responses.write_text(json.dumps(given) + "\n")  # ASCII: the surrogates as escapes
    out = tmp_path / "out"
    assert evaluate_cli(reference, responses, "-o", out, "-q", "--format", "csv") == 0
    with (out / "results.csv").open(newline="", encoding="utf-8") as stream:
        (row,) = list(csv.DictReader(stream))
    assert row["actual_answer"] == "a\\ud800b"
    assert json.loads(row["actual_steps"])[0]["args"] == {"k": "\udc00"}
    assert main(["report", str(out), "--format", "parquet"]) == 0
    (cells,) = pq.read_table(out / "results.parquet").to_pylist()
    assert cells["actual_answer"] == "a\\ud800b"
    assert json.loads(cells["actual_steps"])[0]["args"] == {"k": "\udc00"}
