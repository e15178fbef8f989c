"""The command line on transcripts and traces: ``import`` writes what ``evaluate`` reads,
``evaluate`` and ``validate`` take ``--responses-format`` or tell the format, and the
config's ``traces.tool_names`` maps the agent's tools to step names (docs/integrations.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from graphrag_eval.cli import main
from graphrag_eval.inputs import load_responses
from graphrag_eval.inputs.traces import Reading

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "traces"
REFERENCE = EXAMPLES / "reference.yaml"
CONFIG = EXAMPLES / "config.yaml"
FILES = {
    "openai-chat": "openai-chat.jsonl",
    "openai-responses": "openai-responses.jsonl",
    "langchain": "langchain.jsonl",
    "otlp": "otlp-openinference.json",
}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def results(out_dir: Path) -> list[dict[str, object]]:
    lines = (out_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("fmt", sorted(FILES))
def test_import_writes_responses_that_evaluate_reads(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fmt: str
) -> None:
    out = tmp_path / "responses.jsonl"
    code, stdout, stderr = run(
        capsys, "import", fmt, str(EXAMPLES / FILES[fmt]), "-c", str(CONFIG), "-o", str(out)
    )
    assert (code, stderr) == (0, "")
    assert f"2 responses ({fmt}) written to {out}" in stdout
    imported = load_responses(out, reading=Reading("native"))
    assert imported.notices == []
    steps = imported.responses["q1"].actual_steps or ()
    assert (steps[0].name, steps[0].status) == ("sparql_query", "success")
    code, _, _ = run(
        capsys, "evaluate", str(REFERENCE), str(out), "-o", str(tmp_path / "o"), "--no-report", "-q"
    )
    assert code == 0
    assert [r["steps_score"] for r in results(tmp_path / "o")] == [1.0, 1.0]


@pytest.mark.parametrize("name", ["otlp-genai.jsonl", "langchain-dumpd.jsonl", "openai-chat.jsonl"])
def test_evaluate_tells_the_format_and_maps_the_tool_names(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    args = ["evaluate", str(REFERENCE), str(EXAMPLES / name), "--no-report", "-q"]
    code, _, stderr = run(capsys, *args, "-c", str(CONFIG), "-o", str(tmp_path / "mapped"))
    assert (code, stderr) == (0, "")
    assert [r["steps_score"] for r in results(tmp_path / "mapped")] == [1.0, 1.0]
    # Without the mapping the agent's run_sparql is no sparql_query: nothing matches.
    code, _, _ = run(capsys, *args, "-o", str(tmp_path / "unmapped"))
    assert code == 0
    assert [r["steps_score"] for r in results(tmp_path / "unmapped")] == [0.0, 0.0]


def test_an_ambiguous_file_is_one_line_asking_for_the_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text('{"question_id": "q1", "messages": []}\n', encoding="utf-8")
    code, _, stderr = run(capsys, "validate", str(REFERENCE), str(path))
    assert code == 2
    assert stderr == (
        f"graphrag-eval: error: {path}: line 1 could be langchain or openai-chat; choose it "
        "with --responses-format (docs/integrations.md)\n"
    )
    code, stdout, _ = run(
        capsys, "validate", str(REFERENCE), str(path), "--responses-format", "langchain"
    )
    assert code == 0
    assert "question 'q2': no response for this question" in stdout


def test_validate_lists_the_problems_of_a_trace_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lines = (EXAMPLES / "otlp-genai.jsonl").read_text(encoding="utf-8").splitlines()
    path = tmp_path / "traces.jsonl"
    path.write_text(lines[0] + "\n{broken\n", encoding="utf-8")
    code, stdout, stderr = run(capsys, "validate", str(REFERENCE), str(path), "-c", str(CONFIG))
    assert (code, stderr) == (0, "")
    assert f"{path}: line 2: " in stdout
    assert "question 'q2': no response for this question" in stdout  # on the broken line


def test_import_of_our_own_format_says_there_is_nothing_to_import(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"question_id": "q1", "actual_answer": "a"}\n', encoding="utf-8")
    code, _, stderr = run(capsys, "import", "auto", str(path), "-o", str(tmp_path / "o.jsonl"))
    assert code == 2
    assert stderr == (
        f"graphrag-eval: error: {path}: the file is in graphrag-eval's own format (native): "
        "nothing to import\n"
    )
    assert not (tmp_path / "o.jsonl").exists()


def test_the_examples_are_what_the_fixture_script_makes(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(EXAMPLES / "make_examples.py"), str(tmp_path)], check=True)
    for name in sorted(p.name for p in tmp_path.iterdir()):
        made = load_responses(tmp_path / name).responses
        shipped = load_responses(EXAMPLES / name).responses
        assert list(made) == list(shipped)
        for qid, response in made.items():
            other = shipped[qid]
            assert response.actual_answer == other.actual_answer
            assert [(s.name, s.args, s.output, s.status) for s in response.actual_steps or ()] == [
                (s.name, s.args, s.output, s.status) for s in other.actual_steps or ()
            ]


def test_a_file_forced_into_the_wrong_format_is_not_evaluated_in_silence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LangChain messages read as OpenAI Chat (no message has a role): each message says
    it was not read, rather than two empty responses scored without a word."""
    code, out, _ = run(
        capsys, "validate", str(REFERENCE), str(EXAMPLES / FILES["langchain"]),
        "--responses-format", "openai-chat",
    )  # fmt: skip
    assert "no problems found" not in out
    assert "messages[0]: a message without a role (not OpenAI Chat Completions?); ignored" in (
        " ".join(out.split())
    )
    # Nothing of a document could be imported: exit 2, not a file of 0 responses and 0.
    target = tmp_path / "r.jsonl"
    code, out, err = run(capsys, "import", "otlp", str(REFERENCE), "-o", str(target))
    assert code == 2
    assert "no record could be converted" in err


def test_a_file_none_of_whose_documents_is_otlp_is_not_evaluated_as_all_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An OpenAI Chat file read as OTLP: no line is a trace. That is a run that would
    evaluate nothing (exit 2, the first problem named), as for a file of our own format
    none of whose records is usable, not every question scored as missing with exit 0."""
    code, _, err = run(
        capsys, "evaluate", str(REFERENCE), str(EXAMPLES / FILES["openai-chat"]),
        "--responses-format", "otlp", "-o", str(tmp_path / "out"), "-q",
    )  # fmt: skip
    assert code == 2
    assert "none of its 2 records is a usable response" in err
    assert "line 1: resourceSpans: expected a list, got nothing" in err
    assert not (tmp_path / "out" / "results.jsonl").exists()
