"""The command line: outputs, exit codes, one-line errors (docs/report.md, README.md)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from graphrag_eval.cli import answer_correctness_main, main
from graphrag_eval.report.console import print_summary
from graphrag_eval.results.read_run import load_run

from builders import dataset, question, response, sparql, sparql_ref, step

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def small(tmp_path: Path) -> tuple[Path, Path]:
    reference = write(
        tmp_path / "ref.json",
        dataset(
            question("q1", [[sparql_ref(sparql(["a"], [["x"]]))]]),
            question("q2", [[sparql_ref(sparql(["a"], [["y"]]))]]),
        ),
    )
    responses = tmp_path / "responses.jsonl"
    responses.write_text(
        json.dumps(
            response("q1", [step("sparql_query", sparql(["a"], [["x"]]), "s")], input_tokens=5)
        )
        + "\n"
        + json.dumps(response("q2", [step("sparql_query", sparql(["a"], [["z"]]), "s")]))
        + "\n"
    )
    return reference, responses


def test_evaluate_writes_results_aggregates_and_run_summary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]
) -> None:
    out = tmp_path / "out"
    code, stdout, _ = run(capsys, "evaluate", str(small[0]), str(small[1]), "-o", str(out))
    assert code == 0
    lines = (out / "results.jsonl").read_text().splitlines()
    results = [json.loads(line) for line in lines]
    assert [r["question_id"] for r in results] == ["q1", "q2"]
    assert [r["steps_score"] for r in results] == [1.0, 0.0]
    aggregates = yaml.safe_load((out / "aggregates.yaml").read_text())
    assert aggregates["micro"]["steps_score"]["mean"] == 0.5
    summary = yaml.safe_load((out / "run.yaml").read_text())
    assert summary["questions"] == 2
    assert summary["config"]["steps"]["score_mode"] == "last_group"
    assert not (out / "results.yaml").exists()
    assert "steps_score" in stdout
    assert "2 questions evaluated" in stdout


def test_evaluate_yaml_on_request(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]
) -> None:
    out = tmp_path / "out"
    code, _, _ = run(capsys, "evaluate", *map(str, small), "-o", str(out), "--yaml", "-q")
    assert code == 0
    from_yaml = yaml.safe_load((out / "results.yaml").read_text())
    from_jsonl = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert from_yaml == from_jsonl


def test_evaluate_with_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("steps:\n  score_mode: all_groups\n")
    out = tmp_path / "out"
    code, _, _ = run(capsys, "evaluate", *map(str, small), "-c", str(config), "-o", str(out), "-q")
    assert code == 0
    assert (
        yaml.safe_load((out / "run.yaml").read_text())["config"]["steps"]["score_mode"]
        == "all_groups"
    )


def test_problems_are_summarised_and_recorded(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]
) -> None:
    responses = tmp_path / "partial.jsonl"
    responses.write_text(small[1].read_text().splitlines()[0] + "\n{broken\n")
    out = tmp_path / "out"
    code, stdout, _ = run(capsys, "evaluate", str(small[0]), str(responses), "-o", str(out))
    assert code == 0
    assert "2 input problem(s)" in stdout
    assert "malformed response: 1" in stdout and "missing response: 1" in stdout
    summary = yaml.safe_load((out / "run.yaml").read_text())
    assert summary["input_problems"] == {"malformed_response": 1, "missing_response": 1}
    assert summary["missing_responses"] == 1
    assert any("line 2: invalid JSON" in notice for notice in summary["notices"])


@pytest.mark.parametrize(
    ("make_reference", "expected"),
    [
        (lambda p: write(p, {"not": "a list"}), "expected a list of templates, got a mapping"),
        (
            lambda p: write(p, dataset({"id": "q1"})),
            "question 'q1': question_text: missing or not a non-empty string",
        ),
    ],
)
def test_bad_reference_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    small: tuple[Path, Path],
    make_reference: object,
    expected: str,
) -> None:
    reference = make_reference(tmp_path / "bad.json")  # type: ignore[operator]
    code, stdout, stderr = run(
        capsys, "evaluate", str(reference), str(small[1]), "-o", str(tmp_path / "out")
    )
    assert code == 2
    assert stderr == f"graphrag-eval: error: {reference}: {expected}\n"
    assert "Traceback" not in stderr
    assert stdout == ""


def test_bad_config_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("steps:\n  scoremode: all_groups\n")
    code, _, stderr = run(
        capsys, "evaluate", *map(str, small), "-c", str(config), "-o", str(tmp_path / "out")
    )
    assert code == 2
    assert stderr.startswith(f"graphrag-eval: error: {config}: steps.scoremode: unknown key")
    assert stderr.count("\n") == 1


def test_missing_file_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, stderr = run(
        capsys, "evaluate", str(tmp_path / "nope.yaml"), "r.jsonl", "-o", str(tmp_path / "out")
    )
    assert code == 2
    assert stderr == f"graphrag-eval: error: {tmp_path / 'nope.yaml'}: file not found\n"


def test_debug_shows_the_traceback(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, stderr = run(capsys, "--debug", "evaluate", str(tmp_path / "nope.yaml"), "r.jsonl")
    assert code == 2
    assert "Traceback" in stderr
    assert stderr.rstrip().endswith("file not found")


def test_usage_error_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, stderr = run(capsys, "evaluate", "only-one-argument.yaml")
    assert code == 2
    assert "Missing argument 'RESPONSES'" in stderr


def test_unwritable_output_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, stderr = run(capsys, "evaluate", *map(str, small), "-o", str(blocker / "out"))
    assert code == 2
    assert stderr.startswith("graphrag-eval: error: ")
    assert "Traceback" not in stderr


def test_aggregate_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]
) -> None:
    out = tmp_path / "out"
    assert run(capsys, "evaluate", *map(str, small), "-o", str(out), "-q")[0] == 0
    code, stdout, _ = run(capsys, "aggregate", str(out / "results.jsonl"))
    assert code == 0
    assert yaml.safe_load(stdout) == yaml.safe_load((out / "aggregates.yaml").read_text())
    code, stdout, _ = run(capsys, "aggregate", str(out / "results.jsonl"), "--format", "json")
    assert json.loads(stdout)["micro"]["steps_score"]["mean"] == 0.5
    target = tmp_path / "agg.yaml"
    assert run(capsys, "aggregate", str(out / "results.jsonl"), "-o", str(target))[0] == 0
    assert yaml.safe_load(target.read_text())["micro"]["number_of_success_samples"] == 2
    # -o FILE.json writes JSON (not YAML in a file named .json), unless --format says otherwise
    target = tmp_path / "agg.json"
    assert run(capsys, "aggregate", str(out / "results.jsonl"), "-o", str(target))[0] == 0
    assert json.loads(target.read_text())["micro"]["number_of_success_samples"] == 2
    options = ["-o", str(target), "--format", "yaml"]
    assert run(capsys, "aggregate", str(out / "results.jsonl"), *options)[0] == 0
    assert target.read_text().startswith("per_template:")


def test_aggregate_applies_the_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    results.write_text(
        json.dumps(
            {
                "template_id": "t",
                "question_id": "a",
                "status": "success",
                "steps_score": 1.0,
                "reference_steps": [[]],
            }
        )
        + "\n"
        + json.dumps(
            {
                "template_id": "t",
                "question_id": "b",
                "status": "error",
                "error": "x",
                "reference_steps": [[]],
            }
        )
        + "\n"
    )
    config = tmp_path / "config.yaml"
    config.write_text("aggregation:\n  error_samples: zero\n")
    code, stdout, _ = run(capsys, "aggregate", str(results), "-c", str(config))
    assert code == 0
    assert yaml.safe_load(stdout)["micro"]["steps_score"]["mean"] == 0.5


def test_aggregate_bad_results_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    results.write_text('{"question_id": "a"}\n')
    code, _, stderr = run(capsys, "aggregate", str(results))
    assert code == 2
    assert stderr == (
        f"graphrag-eval: error: {results}: line 1: template_id: missing (is this a results file?)\n"
    )


def test_validate_clean_inputs(
    capsys: pytest.CaptureFixture[str], small: tuple[Path, Path]
) -> None:
    code, stdout, _ = run(capsys, "validate", *map(str, small))
    assert code == 0
    assert "2 questions in 1 template\n" in stdout
    assert "2 responses, 2 for reference questions" in stdout
    assert "no problems found" in stdout


def test_validate_lists_response_problems_and_strict_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]
) -> None:
    responses = tmp_path / "r.jsonl"
    responses.write_text(
        json.dumps(response("q1", [{"name": "sparql_query"}]))
        + "\n"
        + json.dumps(response("q9"))
        + "\n"
    )
    code, stdout, _ = run(capsys, "validate", str(small[0]), str(responses))
    assert code == 0
    assert "actual_steps[0].status: missing" in stdout
    assert "question 'q9': response for a question not in the reference" in stdout
    assert "question 'q2': no response for this question" in stdout
    assert run(capsys, "validate", str(small[0]), str(responses), "--strict")[0] == 2


def test_validate_bad_reference_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]
) -> None:
    reference = write(tmp_path / "ref.json", dataset(question("q1"), question("q1")))
    code, _, stderr = run(capsys, "validate", str(reference), str(small[1]))
    assert code == 2
    assert "duplicate question id" in stderr


@pytest.mark.parametrize("command", ["evaluate", "aggregate", "validate"])
def test_every_command_has_help_with_an_example(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    code, stdout, _ = run(capsys, command, "--help")
    assert code == 0
    assert "Example:" in stdout
    assert f"graphrag-eval {command}" in stdout


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, _ = run(capsys, "--version")
    assert code == 0
    assert stdout.startswith("graphrag-eval, version ")


def test_answer_correctness_help_has_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert answer_correctness_main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "Usage: answer-correctness [OPTIONS]" in out
    assert "Example:" in out


def test_answer_correctness_missing_input_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = answer_correctness_main(["-i", "no-such.tsv", "-o", "out.tsv"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == "answer-correctness: error: no-such.tsv: file not found\n"


def test_console_script_end_to_end(tmp_path: Path) -> None:
    """The installed ``graphrag-eval`` entry point, as a user runs it."""
    executable = shutil.which("graphrag-eval", path=str(Path(sys.executable).parent))
    assert executable is not None, "the package must be installed (pip install -e .)"
    ok = subprocess.run(
        [
            executable,
            "evaluate",
            str(EXAMPLES / "reference.yaml"),
            str(EXAMPLES / "responses.jsonl"),
            "-o",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "out" / "aggregates.yaml").exists()
    bad = subprocess.run(
        [executable, "validate", str(tmp_path / "none.yaml"), "x.jsonl"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr == f"graphrag-eval: error: {tmp_path / 'none.yaml'}: file not found\n"


def printed_on_a_terminal(aggregates_path: Path, columns: int) -> str:
    """The summary tables as a terminal of ``columns`` columns shows them (no colours)."""
    console = Console(
        file=io.StringIO(), width=columns, force_terminal=True, color_system=None, markup=False
    )
    print_summary(console, load_run(aggregates_path.parent).aggregates)
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue()


def test_summary_tables_show_the_numbers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]
) -> None:
    code, _, _ = run(capsys, "evaluate", *map(str, small), "-o", str(tmp_path / "o"))
    assert code == 0
    stdout = printed_on_a_terminal(tmp_path / "o" / "aggregates.yaml", 100)  # mean, min, max
    rows = {line.split()[0]: line.split()[1:] for line in stdout.splitlines() if line.strip()}
    assert rows["metric"] == ["mean", "min", "max", "scored"]
    assert rows["steps_score"] == ["0.500", "0.000", "1.000", "2/2"]
    assert rows["input_tokens"] == ["5", "5", "5", "1/2"]  # a mean of tokens is whole too
    assert rows["t1"] == ["2", "0", "0", "0.500"]


def test_a_narrow_summary_keeps_metric_names_whole(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]
) -> None:
    code, _, _ = run(capsys, "evaluate", *map(str, small), "-o", str(tmp_path / "o"))
    assert code == 0
    stdout = printed_on_a_terminal(tmp_path / "o" / "aggregates.yaml", 60)
    rows = {line.split()[0]: line.split()[1:] for line in stdout.splitlines() if line.strip()}
    assert rows["metric"] == ["mean", "scored"]
    assert rows["steps_score"] == ["0.500", "2/2"]


def test_template_ids_are_shown_literally(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    reference = write(tmp_path / "ref.json", dataset(question("q1"), template_id="list[/bold] [x]"))
    responses = write(tmp_path / "r.json", [response("q1")])
    code, stdout, stderr = run(
        capsys, "evaluate", str(reference), str(responses), "-o", str(tmp_path / "o")
    )
    assert code == 0, stderr
    assert "list[/bold] [x]" in stdout


def test_debug_after_the_subcommand(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, stderr = run(capsys, "validate", str(tmp_path / "nope.yaml"), "r.jsonl", "--debug")
    assert code == 2
    assert "Traceback" in stderr


def test_forced_progress_in_a_log_is_plain_lines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, small: tuple[Path, Path]
) -> None:
    """Standard error is not a terminal here (a CI log): no redrawn bar, no control codes."""
    code, _, stderr = run(
        capsys, "evaluate", *map(str, small), "-o", str(tmp_path / "o"), "--progress", "-q"
    )
    assert code == 0
    assert stderr.startswith("scored 2/2 questions (100%), ")
    assert stderr.count("\n") == 1
    assert "\x1b" not in stderr


def test_example_config_is_valid_and_changes_the_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    code, _, stderr = run(
        capsys,
        "evaluate",
        str(EXAMPLES / "reference.yaml"),
        str(EXAMPLES / "responses.jsonl"),
        "-c",
        str(EXAMPLES / "config.yaml"),
        "-o",
        str(out),
        "-q",
    )
    assert code == 0, stderr
    summary = yaml.safe_load((out / "run.yaml").read_text())
    assert summary["config"]["steps"]["score_mode"] == "all_groups"
    aggregates = yaml.safe_load((out / "aggregates.yaml").read_text())
    # the error response now counts as 0 for steps_score: (1 + 1 + 0 + 0 + 1) / 5
    assert aggregates["micro"]["steps_score"]["mean"] == pytest.approx(0.6)


def test_resume_counts_the_problems_of_the_items_it_keeps(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An unreadable output found before the interruption is still counted after --resume."""
    turtle = "<urn:a> <urn:b> <urn:c> ."
    reference = write(
        tmp_path / "ref.json",
        dataset(*(question(f"q{i}", [[sparql_ref(sparql(["a"], [["x"]]))]]) for i in range(5))),
    )
    responses = tmp_path / "responses.jsonl"
    lines = [
        json.dumps(response("q0", [step("sparql_query", turtle, "s0")])),
        json.dumps(response("q1", [step("sparql_query", sparql(["a"], [["x"]]), "s1")])),
        "{broken",
        json.dumps(response("q3", [step("sparql_query", "Error: timed out", "s3")])),
    ]  # q2's line is malformed, q4 has no response
    responses.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    code, stdout, _ = run(capsys, "evaluate", str(reference), str(responses), "-o", str(out))
    assert code == 0
    complete = yaml.safe_load((out / "run.yaml").read_text())
    assert complete["input_problems"] == {
        "malformed_response": 1,
        "missing_response": 2,
        "unreadable_output": 2,
    }
    assert "5 input problem(s)" in stdout
    # The run as an interruption leaves it: q0 (an unreadable output) and q1 written, then
    # a line cut short.
    written = (out / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text(written[0] + "\n" + written[1] + "\n" + written[2][:30])
    code, stdout, _ = run(
        capsys, "evaluate", str(reference), str(responses), "-o", str(out), "--resume"
    )
    assert code == 0
    resumed = yaml.safe_load((out / "run.yaml").read_text())
    assert resumed["resumed"] == {"kept": 2, "evaluated_again": 0}
    assert resumed["input_problems"] == complete["input_problems"]
    assert sorted(resumed["notices"]) == sorted(complete["notices"])
    assert "5 input problem(s)" in stdout
    assert "unreadable output: 2" in stdout
    page = (out / "report.html").read_text()
    assert "5 problem(s) in the inputs" in page
    assert f"{responses}: question &#39;q0&#39;: actual_steps[0]: output is not SPARQL" in page


def test_aggregate_a_run_directory_with_the_runs_settings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    reference = write(
        tmp_path / "ref.json",
        dataset(
            question("q1", [[sparql_ref(sparql(["a"], [["x"]]))]]),
            question("q2", [[sparql_ref(sparql(["a"], [["y"]]))]]),
        ),
    )
    responses = write(
        tmp_path / "r.json",
        [
            response("q1", [step("sparql_query", sparql(["a"], [["x"]]), "s")]),
            response("q2", status="error", error="timed out"),
        ],
    )
    config = tmp_path / "config.yaml"
    config.write_text("aggregation:\n  error_samples: zero\n")
    out = tmp_path / "out"
    assert (
        run(
            capsys,
            "evaluate",
            str(reference),
            str(responses),
            "-c",
            str(config),
            "-o",
            str(out),
            "-q",
        )[0]
        == 0
    )
    saved = yaml.safe_load((out / "aggregates.yaml").read_text())
    assert saved["micro"]["steps_score"]["mean"] == pytest.approx(0.5)  # the error counts as 0
    for given in (out, out / "results.jsonl"):
        code, stdout, stderr = run(capsys, "aggregate", str(given))
        assert code == 0, stderr
        assert yaml.safe_load(stdout) == saved
    defaults = tmp_path / "defaults.yaml"
    defaults.write_text("aggregation:\n  error_samples: exclude\n")
    code, stdout, _ = run(capsys, "aggregate", str(out), "-c", str(defaults), "--format", "json")
    assert code == 0
    assert json.loads(stdout)["micro"]["steps_score"]["mean"] == pytest.approx(1.0)


def test_aggregate_a_directory_without_results(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, stdout, stderr = run(capsys, "aggregate", str(tmp_path))
    assert code == 2
    assert stdout == ""
    assert stderr == (
        f"graphrag-eval: error: {tmp_path}: no results.jsonl or results.json in this directory "
        "(is it the output directory of graphrag-eval evaluate?)\n"
    )


def test_one_question_is_singular(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    reference = write(tmp_path / "ref.json", dataset(question("q1")))
    responses = write(tmp_path / "r.json", [response("q1")])
    out = tmp_path / "out"
    code, stdout, _ = run(capsys, "evaluate", str(reference), str(responses), "-o", str(out))
    assert code == 0
    assert "1 question evaluated in " in stdout
    code, stdout, _ = run(capsys, "evaluate", str(reference), str(responses), "--dry-run")
    assert stdout.startswith("dry run: 1 question; ")
    code, stdout, _ = run(capsys, "report", str(out))
    assert stdout.startswith("report of 1 question in ")
