"""Usage errors and the hints a user needs (docs/report.md, "Command line"): every usage
error is one line, never click's usage block; a directory given for a file, a percentage as a
threshold and a question id off by a character say what was meant; ``validate --all`` lists
every problem; ``evaluate`` never writes over another run's results unless told to; the gate
options' help fits the command."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
import yaml

from graphrag_eval.cli import main
from graphrag_eval.cli.app import cli
from graphrag_eval.cli.commands import CONTEXT_SETTINGS, SUMMARIES, LazyCommands
from graphrag_eval.comparison.compare import (
    DEFAULT_CONFIDENCE,
    DEFAULT_ERROR_SAMPLES,
    DEFAULT_SEED,
    DEFAULT_TOP,
)


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write_inputs(folder: Path, unknown: int = 0) -> tuple[Path, Path]:
    """Questions tr-01 and tr-02 with reference answers; a response to tr-01, and
    ``unknown`` responses to questions the reference does not have."""
    questions = [
        {"id": "tr-01", "question_text": "Which?", "reference_answer": "A"},
        {"id": "tr-02", "question_text": "What?", "reference_answer": "B"},
    ]
    reference = folder / "reference.yaml"
    reference.write_text(yaml.safe_dump([{"template_id": "t", "questions": questions}]))
    responses = folder / "responses.jsonl"
    lines = [{"question_id": "tr-01", "actual_answer": "A"}]
    lines += [{"question_id": f"x{i}", "actual_answer": "A"} for i in range(unknown)]
    responses.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return reference, responses


EvaluateInto = tuple[Path, tuple[str | Path, ...]]


@pytest.fixture
def evaluate_into(tmp_path: Path) -> EvaluateInto:
    """A directory ``out`` and the arguments of a quiet ``evaluate`` of :func:`write_inputs`'
    files into it."""
    reference, responses = write_inputs(tmp_path)
    out = tmp_path / "out"
    return out, ("evaluate", reference, responses, "-o", out, "-q")


# ---------------------------------------------------------------- one line, with the hint


def test_a_directory_given_for_a_file_is_one_line_naming_the_file_in_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path)

    code, _, err = run(capsys, "evaluate", tmp_path, responses, "-o", tmp_path / "out")

    assert code == 2
    assert err == (
        f"graphrag-eval: error: REFERENCE: {str(tmp_path)!r} is a directory, not a file "
        f"(did you mean {reference}?)\n"
    )


def test_a_directory_given_for_an_output_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "report", tmp_path, "-o", tmp_path)

    assert code == 2
    assert err.startswith(f"graphrag-eval: error: --output: {str(tmp_path)!r} is a directory")
    assert err.endswith("; see 'graphrag-eval report --help'\n")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("threshold", "meant"),
    [("steps_score=50%", "steps_score=0.5"), ("ragas_score=80%", "ragas_score=80")],
)
def test_a_percentage_as_threshold_is_one_line_with_the_value_meant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], threshold: str, meant: str
) -> None:
    reference, responses = write_inputs(tmp_path)
    args = ("evaluate", reference, responses, "-o", tmp_path / "out", "--fail-under", threshold)

    code, _, err = run(capsys, *args)

    assert code == 2
    value = threshold.partition("=")[2]
    assert err == (
        f"graphrag-eval: error: --fail-under {threshold}: the threshold {value!r} is not a "
        f"number (did you mean {meant}?)\n"
    )
    assert not (tmp_path / "out").exists()


def test_a_missing_argument_is_one_line_pointing_to_the_help(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, _ = write_inputs(tmp_path)

    code, _, err = run(capsys, "evaluate", reference)

    assert code == 2
    assert err == (
        "graphrag-eval: error: Missing argument 'RESPONSES'; see 'graphrag-eval evaluate --help'\n"
    )


def test_an_unknown_option_is_one_line_with_clicks_suggestion(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "validate", "--strcit")

    assert code == 2
    assert err.startswith("graphrag-eval: error: No such option '--strcit'")
    assert "--strict" in err
    assert err.count("\n") == 1


def test_report_of_a_question_off_by_a_character_suggests_the_id(
    evaluate_into: EvaluateInto, capsys: pytest.CaptureFixture[str]
) -> None:
    out, args = evaluate_into
    assert run(capsys, *args)[0] == 0

    code, _, err = run(capsys, "report", out, "--question", "tr-0")

    assert code == 2
    assert err == (
        f"graphrag-eval: error: {out / 'results.jsonl'}: no question 'tr-0' in this run "
        "(did you mean tr-01 or tr-02?)\n"
    )
    code, _, err = run(capsys, "report", out, "--question", "zzz")
    assert err.endswith("no question 'zzz' in this run\n")


def test_report_of_a_long_id_cut_short_suggests_the_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The example data's ids are 32 hexadecimal digits: the first ones, as copied from a
    narrow table, name the question."""
    examples = Path(__file__).parents[2] / "examples"
    out = tmp_path / "out"
    responses = examples / "responses.jsonl"
    assert (
        main(["evaluate", str(examples / "reference.yaml"), str(responses), "-o", str(out), "-q"])
        == 0
    )

    code, _, err = run(capsys, "report", out, "--question", "c10bbc8")

    assert code == 2
    assert err.endswith(
        "no question 'c10bbc8' in this run (did you mean c10bbc8dce98a4b8832d125134a16153?)\n"
    )


# ---------------------------------------------------------------- validate --all


def test_validate_says_how_to_list_every_problem_and_all_lists_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference, responses = write_inputs(tmp_path, unknown=13)  # 14 problems: 10 shown

    code, out, _ = run(capsys, "validate", reference, responses)

    assert code == 0
    assert "  ... and 4 more (list them all with --all)" in out
    assert "'x12'" not in out

    code, out, _ = run(capsys, "validate", reference, responses, "--all")

    assert code == 0
    assert "more" not in out
    listed = [line for line in out.splitlines() if "not in the reference" in line]
    assert len(listed) == 13


# ---------------------------------------------------------------- evaluate into an earlier run


def test_evaluate_refuses_a_directory_holding_another_runs_results(
    evaluate_into: EvaluateInto, capsys: pytest.CaptureFixture[str]
) -> None:
    out, args = evaluate_into
    assert run(capsys, *args)[0] == 0
    (out / "results.jsonl").write_text("")  # any change would show
    before = {path.name: path.read_bytes() for path in out.iterdir()}

    code, _, err = run(capsys, *args)

    assert code == 2
    assert err.startswith(f"graphrag-eval: error: {out}: holds the results of an earlier run (")
    assert "add --overwrite to replace them, --resume to continue that run" in err
    assert err.count("\n") == 1
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before


def test_overwrite_replaces_the_earlier_run_and_leaves_none_of_its_files(
    evaluate_into: EvaluateInto, capsys: pytest.CaptureFixture[str]
) -> None:
    out, args = evaluate_into
    assert run(capsys, *args, "--format", "json")[0] == 0
    assert (out / "results.json").is_file()

    assert run(capsys, *args, "--overwrite", "--no-report")[0] == 0

    assert not (out / "results.json").exists()  # the earlier run's, not written this time
    assert not (out / "report.html").exists()
    assert (out / "results.jsonl").is_file()


def test_resume_of_the_same_run_is_allowed_and_not_with_overwrite(
    evaluate_into: EvaluateInto, capsys: pytest.CaptureFixture[str]
) -> None:
    _, args = evaluate_into
    assert run(capsys, *args)[0] == 0

    assert run(capsys, *args, "--resume")[0] == 0

    code, _, err = run(capsys, *args, "--resume", "--overwrite")
    assert code == 2
    assert err.startswith("graphrag-eval: error: --resume continues the run in OUT_DIR and ")
    assert err.count("\n") == 1


def test_a_directory_with_other_files_only_is_written(
    evaluate_into: EvaluateInto, capsys: pytest.CaptureFixture[str]
) -> None:
    out, args = evaluate_into
    out.mkdir()
    (out / "notes.txt").write_text("mine")

    assert run(capsys, *args)[0] == 0
    assert (out / "notes.txt").read_text() == "mine"


# ---------------------------------------------------------------- the gates' help


def _option_help(text: str, option: str) -> str:
    """The help text of ``option`` in a command's --help, joined onto one line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(option))
    block = [lines[start].strip().removeprefix(option).strip()]
    for line in lines[start + 1 :]:
        if line.strip().startswith("-"):
            break
        block.append(line.strip())
    return " ".join(" ".join(block).split())


def test_the_gate_options_help_fits_each_command(capsys: pytest.CaptureFixture[str]) -> None:
    _, evaluate_help, _ = run(capsys, "evaluate", "--help")
    _, compare_help, _ = run(capsys, "compare", "--help")

    under = _option_help(compare_help, "--fail-under METRIC=VALUE")
    assert "run B" in under
    assert "significantly worse than in run A" in under
    assert "run B" in _option_help(compare_help, "--fail-over METRIC=VALUE")
    assert "run B" not in _option_help(evaluate_help, "--fail-under METRIC=VALUE")
    assert "mean of METRIC over all questions" in _option_help(
        evaluate_help, "--fail-under METRIC=VALUE"
    )


def test_compare_help_shows_the_defaults_of_its_settings_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """compare shows every default (one command setting): the bootstrap's and the listing's,
    none for a flag or an option without one."""
    _, out, _ = run(capsys, "compare", "--help")

    assert f"[default: {DEFAULT_SEED}]" in _option_help(out, "--seed INTEGER")
    confidence = _option_help(out, "--confidence FLOAT RANGE")
    assert f"[default: {DEFAULT_CONFIDENCE}; 0.5<=x<1]" in confidence
    assert f"[default: {DEFAULT_TOP}; x>=0]" in _option_help(out, "--top INTEGER RANGE")
    samples = _option_help(out, "--error-samples [zero|exclude]")
    assert f"[default: {DEFAULT_ERROR_SAMPLES}]" in samples
    for unset in ("--resamples", "--json", "--fail-on-regression", "--html", "--format"):
        assert "[default:" not in _option_help(out, unset)


def test_help_asked_in_place_of_a_threshold_is_the_commands_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "compare", "--fail-under", "--help")

    assert code == 0
    assert out.startswith("Usage: graphrag-eval compare")
    assert "run B" in _option_help(out, "--fail-under METRIC=VALUE")
    assert err == ""


def test_no_command_shows_the_help_not_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main([])
    captured = capsys.readouterr()
    shown = captured.out + captured.err
    assert code in (0, 2)  # click 8.1 exits 0 after the help, 8.2 and later 2
    assert shown.startswith("Usage: graphrag-eval [OPTIONS] COMMAND [ARGS]...\n")
    assert "error:" not in shown


@pytest.mark.parametrize("name", sorted(SUMMARIES))
def test_the_groups_help_summarises_each_command_as_its_help_does(name: str) -> None:
    """The group's help lists a command it has not imported by its summary in
    cli/commands.py: the same short help as the command's, at every width."""
    command = cli.commands[name]
    stand_in = LazyCommands().loaded(name)
    assert stand_in is not command and not command.hidden and not command.deprecated
    for limit in range(1, 400):
        assert stand_in.get_short_help_str(limit) == command.get_short_help_str(limit), limit


@pytest.mark.parametrize("width", [40, 80, 200])
def test_the_groups_help_is_the_same_with_its_commands_imported_or_not(
    monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    monkeypatch.setattr(cli, "commands", LazyCommands())
    settings = {**CONTEXT_SETTINGS, "terminal_width": width}
    without = cli.get_help(click.Context(cli, info_name="graphrag-eval", **settings))
    assert cli.commands._loaded == {}
    for name in list(cli.commands):
        cli.commands[name]
    with_them = cli.get_help(click.Context(cli, info_name="graphrag-eval", **settings))
    assert with_them == without
    assert sorted(cli.commands._loaded) == sorted(SUMMARIES)
    assert "Commands:\n  aggregate  " in without


def test_the_lazy_commands_are_a_mapping_of_the_commands() -> None:
    commands, extra = LazyCommands(), click.Command("extra")
    names = list(commands)
    assert commands["report"] is cli.commands["report"]
    assert list(commands) == names  # the order of the names, imported or not
    commands["extra"] = extra
    del commands["aggregate"], commands["report"]
    assert list(commands) == [name for name in names if name not in ("aggregate", "report")] + [
        "extra"
    ]
    assert len(commands) == len(names) - 1 and "aggregate" not in commands
    assert commands.get("aggregate") is None and commands["extra"] is extra
