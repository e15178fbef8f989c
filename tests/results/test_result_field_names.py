"""A results file in YAML whose record has a field name that is not text (``1:``, ``true:``,
``null:`` unquoted): one line naming the file, the item and the field, never a traceback;
the other records are kept where problems are collected (docs/outputs.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphrag_eval.cli import main
from graphrag_eval.errors import InputError
from graphrag_eval.results.read_files import load_results

RECORDS = """\
- {question_id: a, template_id: t, status: success, answer_f1: 0.5}
- {question_id: b, template_id: t, status: success, answer_f1: 0.25, %s: 0.7}
"""


@pytest.mark.parametrize(
    ("key", "shown"),
    [("1", "1"), ("true", "True"), ("null", "None"), ("2.5", "2.5"), ("2026-11-26", "2026-11-26")],
)
@pytest.mark.parametrize("command", ["aggregate", "report", "compare"])
def test_a_field_name_that_is_not_text_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, shown: str, command: str
) -> None:
    """aggregate stops at a bad record (exit 2); report and compare skip it with a warning,
    as they do any bad record (the other question is reported)."""
    results = tmp_path / "results.yaml"
    results.write_text(RECORDS % key)
    args = [command, str(results), *([str(results)] if command == "compare" else [])]
    if command == "report":
        args += ["-o", str(tmp_path / "report.html")]
    code = main(args)
    err = capsys.readouterr().err
    line = f"{results}: results[1]: {shown}: a field name must be text (quote it in YAML)\n"
    assert "Traceback" not in err
    if command == "aggregate":
        assert (code, err) == (2, f"graphrag-eval: error: {line}")
    else:
        assert code == 0
        assert set(err.splitlines(keepends=True)) == {f"warning: skipped {line}"}


def test_the_other_records_are_kept_where_problems_are_collected(tmp_path: Path) -> None:
    results = tmp_path / "results.yaml"
    results.write_text(RECORDS % "1")
    problems: list[InputError] = []
    kept = load_results(results, problems)
    assert [record["question_id"] for record in kept] == ["a"]
    assert len(problems) == 1 and "results[1]" in str(problems[0])
