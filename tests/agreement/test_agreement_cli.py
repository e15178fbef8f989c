"""``graphrag-eval agreement`` and the report's agreement section on a real judged run: the
judge is ``graphrag-eval evaluate`` against the test server (tests/judge_server.py), the
labels come from the reference's ``human_labels`` and from a labels file, and each statistic
printed is checked against the libraries on the pairs read back from ``results.jsonl``."""

from __future__ import annotations

import csv
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
import yaml
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from graphrag_eval.agreement import labels as labels_module
from graphrag_eval.agreement import statistics
from graphrag_eval.cli import main
from graphrag_eval.report.html import render_report
from graphrag_eval.results.read_run import load_run

from builders import evaluate_cli, read_results, write_judge_config
from judge_server import JudgeServer

QUESTIONS = 12
GRADES = "ABCDE"
CLASSES = ("CORRECT", "WRONG", "DON'T KNOW")


def _answer(i: int) -> str:
    """States ``i % 6`` of the five reference claims: every grade and both classes occur."""
    stated = [f"T{i}{letter}" for letter in "abcde"[: i % 6]]
    return "Substation S has " + (", ".join(stated) if stated else "no transformer") + "."


def _reference(folder: Path) -> Path:
    """Twelve questions; ``human_labels`` of answer_classification by two annotators on the
    first eight (ann agrees with the test judge, bob calls every answer with 4 claims
    CORRECT)."""
    questions = []
    for i in range(QUESTIONS):
        entry: dict[str, Any] = {
            "id": f"q{i}",
            "question_text": f"Which transformers are in substation S{i}?",
            "reference_answer": ", ".join(f"T{i}{letter}" for letter in "abcde"),
        }
        if i < 8:
            correct = i % 6 == 5
            entry["human_labels"] = [
                {
                    "metric": "answer_classification",
                    "value": "CORRECT" if correct else "WRONG",
                    "annotator": "ann",
                },
                {
                    "metric": "answer_classification",
                    "value": "correct" if correct or i % 6 == 4 else "wrong",
                    "annotator": "bob",
                },
            ]
        questions.append(entry)
    path = folder / "reference.yaml"
    path.write_text(yaml.safe_dump([{"template_id": "t", "questions": questions}]))
    return path


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The output directory of a real judged run (factual accuracy and answer
    classification), evaluated in a folder that is the current directory of every test."""
    folder = tmp_path_factory.mktemp("judged")
    _reference(folder)
    responses = folder / "responses.jsonl"
    responses.write_text(
        "".join(
            json.dumps({"question_id": f"q{i}", "actual_answer": _answer(i)}) + "\n"
            for i in range(QUESTIONS)
        )
    )
    with pytest.MonkeyPatch.context() as patch, JudgeServer() as server:
        patch.delenv("OPENAI_API_KEY", raising=False)
        patch.delenv("GRAPHRAG_EVAL_CACHE", raising=False)
        patch.chdir(folder)
        config = write_judge_config(
            folder,
            server.url,
            {"metrics": ["factual_accuracy", "answer_classification"]},
            embedding=None,
        )
        code = evaluate_cli("reference.yaml", responses, "-c", config, "-o", "out", "-q")
        assert code == 0
    yield folder / "out"


@pytest.fixture
def in_run_folder(judged: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(judged.parent)
    return judged


def judge_values(out: Path, key: str) -> dict[str, Any]:
    return {qid: record.get(key) for qid, record in read_results(out).items()}


def grade_labels(out: Path) -> list[dict[str, Any]]:
    """Two annotators' grades of every question: ann one grade better than the judge on
    even questions, bob the judge's grade; and scores: the judge's percentage plus 5."""
    grades = judge_values(out, "factual_accuracy_grade")
    percentages = judge_values(out, "factual_accuracy_percentage")
    rows = []
    for qid, grade in grades.items():
        index = GRADES.index(grade)
        better = GRADES[max(0, index - 1)] if int(qid[1:]) % 2 == 0 else grade
        rows.append(
            {
                "question_id": qid,
                "metric": "factual_accuracy_grade",
                "value": better,
                "annotator": "ann",
            }
        )
        rows.append(
            {
                "question_id": qid,
                "metric": "factual_accuracy_grade",
                "value": grade,
                "annotator": "bob",
            }
        )
        rows.append(
            {
                "question_id": qid,
                "metric": "factual_accuracy_percentage",
                "value": min(100, percentages[qid] + 5 * (int(qid[1:]) % 3)),
                "annotator": "ann",
            }
        )
    return rows


def write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=["question_id", "metric", "value", "annotator"])
        writer.writeheader()
        writer.writerows(rows)
    return path


def agreement_json(capsys: pytest.CaptureFixture[str], *args: str | Path) -> dict[str, Any]:
    code = main(["agreement", *map(str, args), "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)["agreement"]


def test_the_judge_gives_every_grade(in_run_folder: Path) -> None:
    """The run the other tests read: a real judged run with mixed values."""
    # Four grades: the test judge's consistency is always 100, so no answer gets an E.
    assert set(judge_values(in_run_folder, "factual_accuracy_grade").values()) == set("ABCD")
    classes = set(judge_values(in_run_folder, "answer_classification").values())
    assert classes == {"CORRECT", "WRONG"}


def test_grades_from_a_labels_file_against_the_libraries(
    in_run_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = in_run_folder
    rows = grade_labels(out)
    labels = write_csv(out.parent / "labels.csv", rows)

    found = agreement_json(capsys, out, "--labels", labels)

    grades = judge_values(out, "factual_accuracy_grade")
    graded = [r for r in rows if r["metric"] == "factual_accuracy_grade"]
    human = [GRADES.index(r["value"]) for r in graded]
    judge = [GRADES.index(grades[r["question_id"]]) for r in graded]
    metric = found["metrics"]["factual_accuracy_grade"]
    assert metric["scale"] == "ordinal"
    assert metric["statistic"] == "weighted_kappa"
    assert (metric["questions"], metric["labels"]) == (QUESTIONS, 2 * QUESTIONS)
    assert metric["weighted_kappa"]["value"] == pytest.approx(
        cohen_kappa_score(human, judge, labels=range(5), weights="quadratic"), abs=1e-6
    )
    low, high = metric["weighted_kappa"]["ci_low"], metric["weighted_kappa"]["ci_high"]
    assert low <= metric["weighted_kappa"]["value"] <= high
    matrix = np.zeros((5, 5), dtype=int)
    for h, j in zip(human, judge, strict=True):
        matrix[h, j] += 1
    assert metric["confusion"] == {"labels": list(GRADES), "human_by_judge": matrix.tolist()}
    # alpha among ann and bob, and with the judge (bob's grades are the judge's).
    ann = [GRADES.index(r["value"]) for r in graded if r["annotator"] == "ann"]
    bob = [GRADES.index(r["value"]) for r in graded if r["annotator"] == "bob"]
    expected = krippendorff.alpha(
        reliability_data=[ann, bob], level_of_measurement="ordinal", value_domain=range(5)
    )
    assert metric["alpha_annotators"]["value"] == pytest.approx(expected, abs=1e-6)
    with_judge = krippendorff.alpha(
        reliability_data=[ann, bob, bob], level_of_measurement="ordinal", value_domain=range(5)
    )
    assert metric["alpha_with_judge"]["value"] == pytest.approx(with_judge, abs=1e-6)

    scores = found["metrics"]["factual_accuracy_percentage"]
    percentages = judge_values(out, "factual_accuracy_percentage")
    scored = [r for r in rows if r["metric"] == "factual_accuracy_percentage"]
    judged_scores = [percentages[r["question_id"]] for r in scored]
    human_scores = [r["value"] for r in scored]
    assert scores["scale"] == "score"
    assert scores["rho"]["value"] == pytest.approx(
        spearmanr(judged_scores, human_scores).statistic, abs=1e-6
    )
    assert scores["mean_offset"]["value"] == pytest.approx(
        float(np.mean(np.subtract(judged_scores, human_scores))), abs=1e-6
    )
    assert scores["mean_offset"]["value"] < 0  # the humans scored higher
    assert scores["alpha_annotators"]["note"] == "one annotator: alpha needs two"


def test_the_same_labels_give_the_same_intervals(
    in_run_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = write_csv(in_run_folder.parent / "labels.csv", grade_labels(in_run_folder))

    first = agreement_json(capsys, in_run_folder, "--labels", labels, "--resamples", "200")
    again = agreement_json(capsys, in_run_folder, "--labels", labels, "--resamples", "200")
    other = agreement_json(
        capsys, in_run_folder, "--labels", labels, "--resamples", "200", "--seed", "7"
    )

    assert first == again
    assert first["metrics"] != other["metrics"]


def test_labels_of_the_reference_are_read_without_a_file(
    in_run_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run names its reference (run.yaml); its human_labels are the labels, values
    matched to the metric's labels whatever their case (bob's ``correct``)."""
    found = agreement_json(capsys, in_run_folder, "--resamples", "200")

    metric = found["metrics"]["answer_classification"]
    classes = judge_values(in_run_folder, "answer_classification")
    ann = ["CORRECT" if i % 6 == 5 else "WRONG" for i in range(8)]
    bob = ["CORRECT" if i % 6 in (4, 5) else "WRONG" for i in range(8)]
    judge = [classes[f"q{i}"] for i in range(8)]
    assert found["label_sources"] == ["reference.yaml"]
    assert metric["scale"] == "categorical"
    assert (metric["questions"], metric["labels"]) == (8, 16)
    assert metric["kappa"]["value"] == pytest.approx(
        cohen_kappa_score(ann + bob, judge + judge, labels=list(CLASSES)), abs=1e-6
    )
    assert metric["confusion"]["labels"] == list(CLASSES)
    assert sum(map(sum, metric["confusion"]["human_by_judge"])) == 16
    assert found["problems"] == []


def test_bad_rows_are_one_located_line_each_and_the_rest_is_kept(
    in_run_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = grade_labels(in_run_folder)
    path = write_csv(in_run_folder.parent / "bad.csv", rows)
    with path.open("a") as stream:
        stream.write("q1,factual_accuracy_grade,,carl\n")  # line 38: no value
        stream.write("q1,factual_acuracy_grade,B,carl\n")  # a misspelt metric
        stream.write("q99,factual_accuracy_grade,B,carl\n")  # an unknown question
        stream.write("q2,factual_accuracy_grade,Z,carl\n")  # not a grade
        stream.write("q2,factual_accuracy_percentage,0.5,carl,extra\n")  # a cell too many
        stream.write("q3,factual_accuracy_grade,B,bob\n")  # bob's second grade of q3

    code = main(["agreement", str(in_run_folder), "--labels", str(path)])
    captured = capsys.readouterr()

    assert code == 0
    problems = [line.strip() for line in captured.err.splitlines() if "bad.csv" in line]
    assert problems == [
        f"{path}: line 38: value: missing: left out",
        f"{path}: line 42: more cells than the header's 4 columns: left out",
        f"{path}: line 43: a second label of factual_accuracy_grade on 'q3' by 'bob' (the "
        "first is on line 12): left out",
        f"{path}: line 39: metric: no question-level score or label 'factual_acuracy_grade' "
        "in the run (did you mean factual_accuracy_grade?): left out",
        f"{path}: line 40: question_id: no question 'q99' in the run (did you mean q9?): left out",
        f"{path}: line 41: value: 'Z' is not a label of factual_accuracy_grade (A, B, C, D, "
        "E): left out",
    ]
    assert "6 labels left out:" in captured.err
    assert "factual_accuracy_grade" in captured.out and "weighted kappa" in captured.out
    assert "Traceback" not in captured.err


def test_jsonl_labels_and_too_few_labels(
    in_run_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = in_run_folder.parent / "few.jsonl"
    lines = [
        json.dumps({"question_id": f"q{i}", "metric": "answer_classification", "value": "WRONG"})
        for i in range(3)
    ]
    path.write_text("\n".join([*lines, "{not json", "[1, 2]"]) + "\n")

    found = agreement_json(capsys, in_run_folder, "--labels", path)

    metric = found["metrics"]["answer_classification"]
    assert metric["annotators"] == ["human"]
    assert metric["kappa"] == {
        "value": None,
        "ci_low": None,
        "ci_high": None,
        "note": "too few labels: 3 judged questions (5 needed)",
    }
    assert [problem.split(": ")[1] for problem in found["problems"]] == ["line 4", "line 5"]


def test_the_gate_exits_1_naming_it_and_0_when_met(
    in_run_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = write_csv(in_run_folder.parent / "labels.csv", grade_labels(in_run_folder))
    args = ["agreement", str(in_run_folder), "--labels", str(labels), "--resamples", "100"]

    assert main([*args, "--fail-under", "agreement.factual_accuracy_grade=0.5"]) == 0
    code = main([*args, "--fail-under", "agreement.factual_accuracy_grade=0.99"])
    failed = capsys.readouterr().err
    assert code == 1
    assert "FAIL agreement.factual_accuracy_grade=0.99: weighted_kappa 0." in failed
    code = main([*args, "--fail-under", "agreement.answer_classification=0.5"])
    assert code == 1
    assert "no human label of answer_classification" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--fail-under", "agreement.factual_accuracy_grad=0.5"],
            "did you mean factual_accuracy_grade?",
        ),
        (["--fail-under", "factual_accuracy_grade=0.5"], "expected agreement.METRIC=VALUE"),
        (["--labels", "missing.csv"], "missing.csv: file not found"),
        (["--labels", "labels.txt"], "a labels file is .csv or .jsonl"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    in_run_folder: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    labels = write_csv(in_run_folder.parent / "labels.csv", grade_labels(in_run_folder))
    (in_run_folder.parent / "labels.txt").write_text("x")
    args = ["--labels", str(labels), *extra] if "--labels" not in extra else extra

    code = main(["agreement", str(in_run_folder), *args])
    err = capsys.readouterr().err

    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_the_report_has_the_section_with_labels(
    in_run_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """evaluate's report.html has it (the reference's labels); report --labels FILE too."""
    written = (in_run_folder / "report.html").read_text()
    assert '<h2 id="agreement">Agreement with human labels</h2>' in written
    assert "<td>answer_classification</td><td>categorical</td>" in written

    labels = write_csv(in_run_folder.parent / "labels.csv", grade_labels(in_run_folder))
    target = in_run_folder.parent / "with-labels.html"
    assert main(["report", str(in_run_folder), "--labels", str(labels), "-o", str(target)]) == 0
    page = target.read_text()
    assert '<a href="#agreement">Agreement</a>' in page
    assert "<td>factual_accuracy_grade</td><td>ordinal</td>" in page
    assert "factual_accuracy_grade: human \\ judge" in page
    assert "answer_classification</td><td>categorical" not in page


def _verdicts(body: dict[str, Any]) -> str | None:
    """The test judge of a custom evaluation: ``true`` for an answer that states at least
    three transformers."""
    task = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    if "Reply with exactly one line of" not in task:
        return None
    return "true" if len(re.findall(r"\bT\d+[a-e]\b", task)) >= 3 else "false"


def test_pass_fail_verdicts_of_a_real_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A custom evaluation's true/false output is pass/fail: kappa and a fail/pass matrix."""
    monkeypatch.chdir(tmp_path)
    _reference(tmp_path)
    responses = tmp_path / "responses.jsonl"
    responses.write_text(
        "".join(
            json.dumps({"question_id": f"q{i}", "actual_answer": _answer(i)}) + "\n"
            for i in range(QUESTIONS)
        )
    )
    review = {
        "name": "review",
        "inputs": ["actual_answer"],
        "instructions": "Does the answer name at least three transformers?",
        "outputs": {"names_three": "true or false"},
    }
    with JudgeServer(responder=_verdicts) as server:
        config = write_judge_config(
            tmp_path,
            server.url,
            {"metrics": ["review"], "custom_evaluations": [review]},
            embedding=None,
        )
        assert evaluate_cli("reference.yaml", responses, "-c", config, "-o", "out", "-q") == 0
    verdicts = judge_values(tmp_path / "out", "names_three")
    assert set(verdicts.values()) == {True, False}
    # ann agrees but on q3 and q4; a 'pass'/'fail' and 1/0 are read as true/false.
    human = {qid: (not v if qid in ("q3", "q4") else v) for qid, v in verdicts.items()}
    rows = [
        {
            "question_id": qid,
            "metric": "names_three",
            "value": ("pass" if v else 0),
            "annotator": "ann",
        }
        for qid, v in human.items()
    ]
    labels = write_csv(tmp_path / "labels.csv", rows)

    found = agreement_json(capsys, "out", "--labels", labels, "--resamples", "200")

    metric = found["metrics"]["names_three"]
    order = sorted(verdicts)
    assert metric["scale"] == "pass/fail"
    assert metric["kappa"]["value"] == pytest.approx(
        cohen_kappa_score([human[q] for q in order], [verdicts[q] for q in order]), abs=1e-6
    )
    passes = sum(verdicts.values())
    assert metric["confusion"]["labels"] == ["fail", "pass"]
    assert (
        sum(metric["confusion"]["human_by_judge"][0])
        + sum(metric["confusion"]["human_by_judge"][1])
        == QUESTIONS
    )
    assert sum(row[1] for row in metric["confusion"]["human_by_judge"]) == passes


def test_labels_none_of_which_fit_are_bad_input(
    in_run_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_csv(
        in_run_folder.parent / "other.csv",
        [{"question_id": "x1", "metric": "steps_score", "value": 1, "annotator": "a"}],
    )

    code = main(["agreement", str(in_run_folder), "--labels", str(path)])

    assert code == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(
            "none of the 1 human labels could be used; the first: "
            f"{path}: line 2: question_id: no question 'x1' in the run: left out"
        )
    )


def test_a_results_file_with_countless_labels_gets_no_matrix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hostile results file whose label metric has 250 labels: kappa, the confusion matrix
    and alpha (which grow with the labels' square) say so instead of being computed."""
    out = tmp_path / "out"
    out.mkdir()
    records = [
        {
            "template_id": "t",
            "question_id": f"q{i}",
            "question_text": "?",
            "status": "success",
            "answer_classification": f"L{i}",
        }
        for i in range(250)
    ]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    rows = [
        {
            "question_id": f"q{i}",
            "metric": "answer_classification",
            "value": f"L{(i + 1) % 250}",
            "annotator": "ann",
        }
        for i in range(250)
    ]
    labels = write_csv(tmp_path / "labels.csv", rows)

    found = agreement_json(capsys, out, "--labels", labels, "--resamples", "100")

    metric = found["metrics"]["answer_classification"]
    assert metric["kappa"]["note"] == "253 distinct labels: at most 200"
    assert "confusion" not in metric
    assert metric["alpha_with_judge"]["note"] == (
        "alpha over 253 labels needs fewer questions or labels"
    )


def test_without_the_extra_the_section_says_how_to_install_it(
    in_run_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sklearn", None)  # as if not installed
    monkeypatch.setattr(statistics, "_loaded", [])

    page = render_report(load_run(in_run_folder))

    assert '<h2 id="agreement">Agreement with human labels</h2>' in page
    assert "pip install &#39;graphrag-eval[agreement]&#39;" in page


def test_many_annotators_are_counted_beyond_the_first_five_in_the_table_and_report(
    in_run_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    percentages = judge_values(in_run_folder, "factual_accuracy_percentage")
    rows = [
        {
            "question_id": qid,
            "metric": "factual_accuracy_percentage",
            "value": value,
            "annotator": f"a{number:03d}",
        }
        for number in range(40)
        for qid, value in percentages.items()
    ]
    labels = write_csv(in_run_folder.parent / "many.csv", rows)

    assert main(["agreement", str(in_run_folder), "--labels", str(labels)]) == 0
    printed = capsys.readouterr().out
    assert "a000, a001, a002, a003, a004 and 35 more" in " ".join(printed.split())
    assert "a039" not in printed
    target = in_run_folder.parent / "many.html"
    assert main(["report", str(in_run_folder), "--labels", str(labels), "-o", str(target)]) == 0
    assert "a000, a001, a002, a003, a004 and 35 more" in target.read_text()
    capsys.readouterr()
    assert (
        len(
            agreement_json(capsys, in_run_folder, "--labels", labels)["metrics"][
                "factual_accuracy_percentage"
            ]["annotators"]
        )
        == 40
    )  # the JSON lists every one


def test_labels_left_out_beyond_those_listed_are_counted(
    in_run_folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(labels_module, "MAX_PROBLEMS", 3)  # the lines kept of a file's rows
    rows = grade_labels(in_run_folder)
    bad = [{**rows[0], "value": "", "annotator": f"zed{n}"} for n in range(5)]  # no value
    labels = write_csv(in_run_folder.parent / "bad.csv", rows + bad)

    assert main(["agreement", str(in_run_folder), "--labels", str(labels)]) == 0
    assert "5 labels left out:" in capsys.readouterr().err  # not the 3 listed
    found = agreement_json(capsys, in_run_folder, "--labels", labels)
    assert len(found["problems"]) == 3
    assert found["problems_not_listed"] == 2
