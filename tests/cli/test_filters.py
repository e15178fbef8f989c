"""``--question ID`` and ``--template ID`` on evaluate, report, compare and aggregate
(docs/outputs.md, "Restricting a run or a view"): a union of the ids given, an unknown id is
one line with the closest ids and exit 2, the filter of a run is in its run.yaml and
``--resume`` refuses another."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from graphrag_eval.cli import main

from builders import dataset, question, read_records, response


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    """Templates ta (a1, a2, a3) and tb (b1, b2); a response to each question but b2, and
    to four questions the reference does not have."""
    reference = dataset(*(question(f"a{i}", answer="A") for i in (1, 2, 3)), template_id="ta")
    reference += dataset(question("b1", answer="B"), question("b2"), template_id="tb")
    (tmp_path / "reference.yaml").write_text(yaml.safe_dump(reference))
    ids = ["a1", "a2", "a3", "b1", "x1", "x2", "x3", "x4"]
    lines = [json.dumps(response(id_, actual_answer="A")) + "\n" for id_ in ids]
    (tmp_path / "responses.jsonl").write_text("".join(lines))
    return tmp_path / "reference.yaml", tmp_path / "responses.jsonl"


def _evaluate(
    capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path], out: Path, *options: str
) -> tuple[int, str, str]:
    return run(capsys, "evaluate", *inputs, "-o", out, "-q", *options)


def _ids(out: Path) -> list[str]:
    return [record["question_id"] for record in read_records(out)]


def test_evaluate_scores_only_the_questions_selected(
    capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    out = tmp_path / "one"
    assert _evaluate(capsys, inputs, out, "--question", "a2")[0] == 0
    assert _ids(out) == ["a2"]
    info = yaml.safe_load((out / "run.yaml").read_text())
    assert info["filter"] == {"questions": ["a2"], "templates": []}
    assert info["questions"] == 1 and info["missing_responses"] == 0
    # The responses of the other questions (and of unknown ones) are ignored, not noticed.
    assert info["notices"] == [] and info["input_problems"] == {}
    # A union: template tb, and question a1 besides; b2 has no response: missing.
    out = tmp_path / "union"
    code, _, _ = _evaluate(capsys, inputs, out, "--template", "tb", "--question", "a1")
    assert code == 0 and _ids(out) == ["a1", "b1", "b2"]
    info = yaml.safe_load((out / "run.yaml").read_text())
    assert info["missing_responses"] == 1 and len(info["notices"]) == 1
    assert "b2" in info["notices"][0]
    # Without a filter: every question, and the unknown responses noticed; no filter key.
    out = tmp_path / "all"
    assert _evaluate(capsys, inputs, out)[0] == 0
    info = yaml.safe_load((out / "run.yaml").read_text())
    assert len(_ids(out)) == 5 and "filter" not in info and len(info["notices"]) == 5


@pytest.mark.parametrize(
    ("option", "given", "hint"),
    [
        ("--question", "a", " (did you mean a1 or a2 or a3?)"),
        ("--question", "b11", " (did you mean b1?)"),
        ("--question", "zzz", ""),
        ("--template", "t", " (did you mean ta or tb?)"),
    ],
)
def test_evaluate_refuses_an_unknown_id(
    capsys: pytest.CaptureFixture[str],
    inputs: tuple[Path, Path],
    tmp_path: Path,
    option: str,
    given: str,
    hint: str,
) -> None:
    out = tmp_path / "out"
    code, _, err = _evaluate(capsys, inputs, out, "--question", "a1", option, given)
    kind = option.removeprefix("--")
    assert code == 2
    assert err == (
        f"graphrag-eval: error: {inputs[0]}: no {kind} {given!r} in the reference dataset{hint}\n"
    )
    assert not out.exists()


@pytest.fixture
def saved(
    capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path], tmp_path: Path
) -> tuple[Path, Path]:
    """Two runs of the inputs: A of every question, B of every question with another
    config (error samples zero)."""
    run_a, run_b = tmp_path / "a", tmp_path / "b"
    assert _evaluate(capsys, inputs, run_a)[0] == 0
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"aggregation": {"error_samples": "zero"}}))
    assert _evaluate(capsys, inputs, run_b, "-c", str(config))[0] == 0
    return run_a, run_b


def test_report_restricted(capsys: pytest.CaptureFixture[str], saved: tuple[Path, Path]) -> None:
    run_a = saved[0]
    code, out, _ = run(capsys, "report", run_a, "--template", "ta", "-o", run_a / "ta.html")
    assert code == 0 and out.startswith("report of 3 questions in")
    code, out, _ = run(capsys, "report", run_a, "--question", "a1", "--question", "b2")
    assert code == 0 and out.startswith("report of 2 questions in")
    # One --question alone: that question's page, as before.
    code, out, _ = run(capsys, "report", run_a, "--question", "a3")
    assert (
        code == 0 and out.startswith("question 'a3' in") and (run_a / "question-a3.html").is_file()
    )
    code, out, _ = run(capsys, "report", run_a, "--template", "tb", "--format", "csv")
    assert code == 0 and out.startswith("2 questions in")
    assert (run_a / "results.csv").read_text().count("\n") == 3  # the header and two rows
    code, _, err = run(capsys, "report", run_a, "--template", "tbb")
    assert code == 2 and err.endswith("no template 'tbb' in this run (did you mean tb?)\n")


def test_compare_restricted(capsys: pytest.CaptureFixture[str], saved: tuple[Path, Path]) -> None:
    code, out, _ = run(capsys, "compare", *saved, "--template", "tb")
    assert code == 0 and "\n2 questions in both runs\n" in out
    code, out, _ = run(capsys, "compare", *saved, "--question", "a1", "--template", "tb")
    assert code == 0 and "\n3 questions in both runs\n" in out
    code, out, _ = run(capsys, "compare", *saved)
    assert code == 0 and "\n5 questions in both runs\n" in out
    code, _, err = run(capsys, "compare", *saved, "--question", "b")
    assert code == 2 and err.count("\n") == 1
    assert err.endswith("no question 'b' in either run (did you mean b1 or b2?)\n")


def test_compare_refuses_a_filter_that_selects_nothing_in_one_run(
    capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    """A template only A has (B's run restricted to tb): nothing would be paired, so the
    comparison, and its --fail-on-regression, would pass on nothing; one line and exit 2."""
    run_a, run_b = tmp_path / "a", tmp_path / "b"
    assert _evaluate(capsys, inputs, run_a)[0] == 0
    assert _evaluate(capsys, inputs, run_b, "--template", "tb")[0] == 0
    for a, b in ((run_a, run_b), (run_b, run_a)):
        code, out, err = run(capsys, "compare", a, b, "--template", "ta", "--fail-on-regression")
        assert (code, out, err.count("\n")) == (2, "", 1)
        assert err.endswith(
            f"{run_b / 'results.jsonl'}: --template ta selects no question of this run: "
            "nothing to compare\n"
        )
    code, out, _ = run(capsys, "compare", run_a, run_b, "--template", "ta", "--template", "tb")
    assert code == 0 and "\n2 questions in both runs, 3 only in A\n" in out


def test_an_id_in_another_unicode_form_is_named_with_its_escapes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``ü`` typed as ``u`` and a combining mark (NFD) is not the reference's ``ü`` (NFC):
    the hint shows both with escapes, not two ids that print alike."""
    reference = tmp_path / "reference.yaml"
    reference.write_text(yaml.safe_dump(dataset(question("q, \u00fcber", answer="A"))))
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps(response("q, \u00fcber", actual_answer="A")) + "\n")
    out = tmp_path / "out"
    code, _, err = run(
        capsys, "evaluate", reference, responses, "-o", out, "-q", "--question", "q, u\u0308ber"
    )
    assert code == 2 and err.count("\n") == 1
    assert err.endswith(
        "no question 'q, u\u0308ber' in the reference dataset (did you mean 'q, \\xfcber'? it "
        "differs only in its Unicode form from the 'q, u\\u0308ber' given)\n"
    )


def test_aggregate_restricted(capsys: pytest.CaptureFixture[str], saved: tuple[Path, Path]) -> None:
    code, out, _ = run(capsys, "aggregate", saved[0], "--template", "tb", "--format", "json")
    aggregates = json.loads(out)
    assert code == 0 and list(aggregates["per_template"]) == ["tb"]
    assert aggregates["per_template"]["tb"]["number_of_missing_samples"] == 1
    code, out, _ = run(capsys, "aggregate", saved[0], "--question", "a1", "--question", "a2")
    counts = yaml.safe_load(out)["per_template"]["ta"]
    assert code == 0 and counts["number_of_success_samples"] == 2
    code, _, err = run(capsys, "aggregate", saved[0], "--question", "A1")
    assert code == 2 and err.endswith("no question 'A1' in this run (did you mean a1?)\n")


def test_resume_keeps_the_filter(
    capsys: pytest.CaptureFixture[str], inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert _evaluate(capsys, inputs, out, "--template", "ta")[0] == 0
    # An interrupted run: its last item not written yet.
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    (out / "results.jsonl").write_text("".join(lines[:2]))
    for other in ([], ["--template", "tb"], ["--template", "ta", "--question", "b1"]):
        code, _, err = _evaluate(capsys, inputs, out, "--resume", *other)
        assert code == 2 and err.count("\n") == 1
        assert "the earlier run in this directory was evaluated with --template ta:" in err
    assert len((out / "results.jsonl").read_text().splitlines()) == 2  # left as it was
    code, _, _ = _evaluate(capsys, inputs, out, "--resume", "--template", "ta")
    assert code == 0 and _ids(out) == ["a1", "a2", "a3"]
    info = yaml.safe_load((out / "run.yaml").read_text())
    assert info["resumed"] == {"kept": 2, "evaluated_again": 0}
    # A run without a filter, resumed with one, is refused too.
    out = tmp_path / "all"
    assert _evaluate(capsys, inputs, out)[0] == 0
    code, _, err = _evaluate(capsys, inputs, out, "--resume", "--question", "a1")
    assert code == 2 and "evaluated with no --question or --template:" in err
