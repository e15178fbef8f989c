"""How the command line presents what it shows (docs/report.md): every token count a whole
number with thousands separators, whatever table shows it; the help names every exit code,
every gate and every file a run writes."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from graphrag_eval.cli import main
from graphrag_eval.formatting import Unit, format_tokens, format_value
from graphrag_eval.llm.engine import CallStats
from graphrag_eval.report.console import print_llm_summary, print_summary
from graphrag_eval.results.read_run import load_run


def write_inputs(folder: Path) -> tuple[Path, Path]:
    """Three questions whose responses report token usage (means 840 and 344.33)."""
    usage = [(250, 10), (271, 1003), (1999, 20)]
    questions = [
        {"id": f"q{i}", "question_text": f"Which {i}?", "reference_answer": "A"}
        for i in range(len(usage))
    ]
    reference = folder / "reference.yaml"
    reference.write_text(yaml.safe_dump([{"template_id": "t", "questions": questions}]))
    responses = folder / "responses.jsonl"
    lines = [
        {"question_id": f"q{i}", "actual_answer": "A", "input_tokens": tokens_in,
         "output_tokens": tokens_out, "total_tokens": tokens_in + tokens_out}
        for i, (tokens_in, tokens_out) in enumerate(usage)
    ]  # fmt: skip
    responses.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return reference, responses


def test_token_counts_are_whole_numbers_in_the_summary_table(tmp_path: Path) -> None:
    reference, responses = write_inputs(tmp_path)
    out = tmp_path / "out"
    assert main(["evaluate", str(reference), str(responses), "-o", str(out), "-q"]) == 0
    console = Console(file=io.StringIO(), width=120, color_system=None)

    print_summary(console, load_run(out).aggregates)

    assert isinstance(console.file, io.StringIO)
    rows = {
        line.split()[0]: line.split()[1:]
        for line in console.file.getvalue().splitlines()
        if line.strip().endswith("3/3")
    }
    # mean, median, min, max, macro mean
    assert rows["input_tokens"][:5] == ["840", "271", "250", "1,999", "840"]
    assert rows["output_tokens"][:5] == ["344", "20", "10", "1,003", "344"]
    assert rows["total_tokens"][0] == "1,184"


def test_the_report_writes_a_questions_tokens_as_the_tables_do(tmp_path: Path) -> None:
    """The worst questions of the report on the example data: output_tokens 212, not 212.00
    (next to input_tokens 221,339)."""
    examples = Path(__file__).parents[2] / "examples"
    out = tmp_path / "out"
    inputs = [str(examples / "reference.yaml"), str(examples / "responses.jsonl")]
    assert main(["evaluate", *inputs, "-o", str(out), "-q"]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    shown = re.findall(r'<tr><td>(\w+_tokens)</td><td class="num">([^<]*)</td></tr>', page)
    assert ("output_tokens", "212") in shown
    assert ("input_tokens", "221,339") in shown
    assert not [value for _, value in shown if "." in value]


def test_the_judge_summary_writes_tokens_the_same_way() -> None:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    print_llm_summary(console, CallStats(calls=3, input_tokens=1002, output_tokens=260), None)
    assert isinstance(console.file, io.StringIO)
    assert "1,002 tokens in / 260 out" in console.file.getvalue()


@pytest.mark.parametrize(
    ("value", "text"),
    [(260.0, "260"), (1002, "1,002"), (344.333, "344"), (2_500_000.5, "2,500,000")],
)
def test_a_token_count_is_a_whole_number_with_separators(value: float, text: str) -> None:
    assert format_tokens(value) == text
    assert format_value(value, Unit.TOKENS) == text
    assert format_value(value, Unit.DOLLARS).startswith("$")


def _help(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main([*args, "--help"]) == 0
    return " ".join(capsys.readouterr().out.split())


def test_the_top_level_help_names_every_exit_code_and_gate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = _help(capsys)
    for code in ("0 ok", "1 a CI gate failed", "2 bad input", "3 evaluation incomplete"):
        assert code in text
    assert "130 interrupted (Ctrl-C)" in text
    assert "143 stopped (SIGTERM)" in text
    assert re.search(r"--fail-under, --fail-over, --fail-on-regression", text)


def test_the_out_dir_help_names_every_file_a_run_writes(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys, "evaluate")
    option = text[text.index("-o, --out-dir") :]
    described = option[: option.index("--format")]
    for name in ("results.jsonl", "aggregates.yaml", "run.yaml", "report.html"):
        assert name in described
