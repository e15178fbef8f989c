"""The command line on inputs that are not UTF-8, runs that would evaluate nothing, and
validate finding what evaluate finds (docs/inputs.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_eval.cli import main

from builders import contexts, dataset, question, ref_step, response, sparql, sparql_ref, step
from judge_server import JudgeServer

GOOD_SPARQL = sparql(["a"], [["x"]])
TURTLE = "@prefix ex: <http://example.org/> .\nex:a ex:b ex:c ."
SWAP = "did you swap REFERENCE and RESPONSES?"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write_json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def assert_one_line_error(stderr: str, text: str) -> None:
    assert stderr.count("\n") == 1, stderr
    assert stderr.startswith("graphrag-eval: error: ")
    assert text in stderr
    assert "Traceback" not in stderr


@pytest.fixture
def reference(tmp_path: Path) -> Path:
    return write_json(
        tmp_path / "ref.json",
        dataset(*(question(qid, [[sparql_ref(GOOD_SPARQL)]]) for qid in ("q1", "q2", "q3"))),
    )


def _good(qid: str) -> dict[str, Any]:
    return response(qid, [step("sparql_query", GOOD_SPARQL, "s")])


# ---------------------------------------------------------------- point: a bad byte


def test_a_jsonl_line_that_is_not_utf8_costs_only_that_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reference: Path
) -> None:
    responses = tmp_path / "r.jsonl"
    responses.write_bytes(
        json.dumps(_good("q1")).encode()
        + b"\n"
        + b'{"question_id": "q2", "actual_answer": "caf\xe9"}\n'
        + json.dumps(_good("q3")).encode()
        + b"\n"
    )
    out = tmp_path / "out"
    code, _, stderr = run(capsys, "evaluate", str(reference), str(responses), "-o", str(out))
    assert code == 0, stderr
    lines = (out / "results.jsonl").read_text().splitlines()
    results = {r["question_id"]: r for r in map(json.loads, lines)}
    assert results["q1"]["steps_score"] == pytest.approx(1.0)
    assert results["q3"]["steps_score"] == pytest.approx(1.0)
    assert results["q2"]["status"] == "error"
    assert "line 2" in results["q2"]["error"]
    summary = yaml.safe_load((out / "run.yaml").read_text())
    assert summary["input_problems"] == {"malformed_response": 1}
    assert summary["notices"] == [
        f"{responses}: line 2 (question 'q2'): not UTF-8 text at column 44 (byte 0xe9); "
        "it looks like Windows-1252/Latin-1: re-save the file as UTF-8"
    ]


@pytest.mark.parametrize("command", ["evaluate", "validate"])
def test_a_reference_that_is_not_utf8_is_one_line_naming_line_and_column(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    reference = tmp_path / "ref.yaml"
    reference.write_bytes(
        b"- template_id: t1\n  questions:\n  - id: q1\n    question_text: \xff?\n"
    )
    responses = write_jsonl(tmp_path / "r.jsonl", [response("q1")])
    out = tmp_path / "out"
    args = ["-o", str(out)] if command == "evaluate" else []
    code, _, stderr = run(capsys, command, str(reference), str(responses), *args)
    assert code == 2
    assert_one_line_error(stderr, f"{reference}: line 4, column 20: not UTF-8 text (byte 0xff)")
    assert "codec" not in stderr
    assert not out.exists()


@pytest.mark.parametrize("command", ["evaluate", "validate"])
def test_a_config_that_is_not_utf8_is_one_line_naming_line_and_column(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reference: Path, command: str
) -> None:
    config = tmp_path / "config.yaml"
    config.write_bytes(b"# r\xe9glages\nsteps:\n  score_mode: all_groups\n")
    responses = write_jsonl(tmp_path / "r.jsonl", [_good("q1")])
    code, _, stderr = run(capsys, command, str(reference), str(responses), "-c", str(config))
    assert code == 2
    assert_one_line_error(stderr, f"{config}: line 1, column 4: not UTF-8 text (byte 0xe9)")


def test_json_responses_that_are_not_utf8_are_one_line_naming_line_and_column(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reference: Path
) -> None:
    responses = tmp_path / "r.json"
    responses.write_bytes(b'{"q1": {"actual_answer": "\xff"}}\n')
    code, _, stderr = run(capsys, "evaluate", str(reference), str(responses), "-o", str(tmp_path))
    assert code == 2
    assert_one_line_error(stderr, f"{responses}: line 1, column 27: not UTF-8 text (byte 0xff)")


# ---------------------------------------------------------------- point: runs that evaluate nothing


@pytest.mark.parametrize("command", ["evaluate", "validate"])
@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "the reference dataset is empty (no templates): nothing to evaluate"),
        (
            [{"template_id": "t1", "questions": []}],
            "the reference dataset has no questions (1 template, without questions)",
        ),
    ],
    ids=["no-templates", "no-questions"],
)
def test_an_empty_reference_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, data: Any, message: str
) -> None:
    reference = write_json(tmp_path / "ref.json", data)
    responses = write_jsonl(tmp_path / "r.jsonl", [_good("q1")])
    out = tmp_path / "out"
    args = ["-o", str(out)] if command == "evaluate" else []
    code, _, stderr = run(capsys, command, str(reference), str(responses), *args)
    assert code == 2
    assert_one_line_error(stderr, f"{reference}: {message}")
    assert not out.exists()


@pytest.mark.parametrize("command", ["evaluate", "validate"])
def test_responses_for_no_reference_question_are_an_error_with_the_swap_hint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reference: Path, command: str
) -> None:
    responses = write_jsonl(tmp_path / "r.jsonl", [_good("x1"), _good("x2")])
    out = tmp_path / "out"
    args = ["-o", str(out)] if command == "evaluate" else []
    code, _, stderr = run(capsys, command, str(reference), str(responses), *args)
    assert code == 2
    assert_one_line_error(
        stderr,
        f"{responses}: none of its 2 responses is for a question of the reference dataset, "
        f"so nothing would be evaluated ({SWAP})",
    )
    assert not out.exists()


@pytest.mark.parametrize("responses_name", ["r.jsonl", "r.json"])
def test_swapped_files_get_the_swap_hint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reference: Path, responses_name: str
) -> None:
    records = [_good("q1"), _good("q2")]
    responses = tmp_path / responses_name
    if responses_name.endswith(".jsonl"):
        write_jsonl(responses, records)
    else:
        write_json(responses, records)
    code, _, stderr = run(capsys, "evaluate", str(responses), str(reference), "-o", str(tmp_path))
    assert code == 2
    assert_one_line_error(stderr, f"graphrag-eval: error: {responses}: ")
    assert SWAP in stderr


def test_dry_run_also_refuses_a_run_that_evaluates_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reference: Path
) -> None:
    responses = write_jsonl(tmp_path / "r.jsonl", [_good("x1")])
    code, stdout, stderr = run(
        capsys, "evaluate", str(reference), str(responses), "--dry-run", "-o", str(tmp_path)
    )
    assert code == 2
    assert_one_line_error(stderr, SWAP)
    assert stdout == ""


def test_an_empty_responses_file_is_evaluated_as_all_missing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reference: Path
) -> None:
    responses = tmp_path / "r.jsonl"
    responses.write_text("")
    out = tmp_path / "out"
    code, _, stderr = run(capsys, "evaluate", str(reference), str(responses), "-o", str(out))
    assert code == 0, stderr
    summary = yaml.safe_load((out / "run.yaml").read_text())
    assert summary["missing_responses"] == 3
    assert summary["input_problems"] == {"missing_response": 3}


# ---------------------------------------------------------------- point: validate finds it all


def _validate_notices(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    code, stdout, _ = run(capsys, "validate", *args)
    return code, [line.strip() for line in stdout.splitlines() if line.startswith("  ")]


def test_validate_reports_what_evaluate_finds_at_scoring_time(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    reference = write_json(
        tmp_path / "ref.json",
        dataset(
            question("turtle_actual", [[sparql_ref(GOOD_SPARQL)]]),
            question("turtle_reference", [[sparql_ref(TURTLE)]]),
            question("bad_retrieval", [[ref_step("retrieval", contexts(("c1", "one")))]]),
            question("bad_k", [[ref_step("retrieval", contexts(("c1", "one")))]]),
            question("fine", [[sparql_ref(GOOD_SPARQL)]]),
        ),
    )
    responses = write_jsonl(
        tmp_path / "r.jsonl",
        [
            response("turtle_actual", [step("sparql_query", TURTLE, "s")]),
            response("turtle_reference", [step("sparql_query", GOOD_SPARQL, "s")]),
            response("bad_retrieval", [step("retrieval", "HTTP 500: upstream error", "r")]),
            response(
                "bad_k",
                [step("retrieval", contexts(("c1", "one")), "r", args={"query": "x", "k": "ten"})],
            ),
            response("fine", [step("sparql_query", GOOD_SPARQL, "s")]),
        ],
    )
    code, notices = _validate_notices(capsys, str(reference), str(responses))
    assert code == 0
    out = tmp_path / "out"
    assert main(["evaluate", str(reference), str(responses), "-o", str(out), "-q"]) == 0
    evaluated = yaml.safe_load((out / "run.yaml").read_text())["notices"]
    assert notices == evaluated
    located = [notice.split(": ", 3)[1:3] for notice in notices]
    assert located == [
        ["question 'turtle_reference'", "reference_steps[0][0]"],
        ["question 'turtle_actual'", "actual_steps[0]"],
        ["question 'bad_retrieval'", "actual_steps[0]"],
        ["question 'bad_k'", "actual_steps[0]"],
    ]
    assert "output is not SPARQL results JSON" in notices[1]
    assert "output is not a JSON list of contexts" in notices[2]
    assert "args.k is not a positive integer: 'ten'" in notices[3]
    assert run(capsys, "validate", str(reference), str(responses), "--strict")[0] == 2


def test_validate_reports_metrics_that_cannot_be_computed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    reference = write_json(
        tmp_path / "ref.json", dataset(question("q1", [[ref_step("retrieval", "[]")]]))
    )
    responses = write_jsonl(
        tmp_path / "r.jsonl", [response("q1", [step("retrieval", contexts(("c1", "x")), "r")])]
    )
    code, notices = _validate_notices(capsys, str(reference), str(responses))
    assert code == 0
    assert notices == [
        f"{responses}: question 'q1': actual_steps[0]: retrieval_context cannot be computed: "
        "the reference retrieval steps list no contexts"
    ]
    # evaluate shows the same failure as the metric's error
    out = tmp_path / "out"
    assert main(["evaluate", str(reference), str(responses), "-o", str(out), "-q"]) == 0
    [result] = map(json.loads, (out / "results.jsonl").read_text().splitlines())
    assert result["actual_steps"][0]["retrieval_context_recall_error"] == (
        "the reference retrieval steps list no contexts"
    )


def test_validate_calls_no_model_even_with_a_judge_configured(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    reference = write_json(
        tmp_path / "ref.json",
        dataset(question("q1", answer="T1, T2"), question("q2", answer="T3")),
    )
    responses = write_jsonl(
        tmp_path / "r.jsonl",
        [response("q1", actual_answer="T1 and T2"), response("q2", actual_answer="T3")],
    )
    with JudgeServer() as server:
        config = tmp_path / "config.yaml"
        endpoint = {"provider": "openai-compatible", "base_url": server.url}
        llm = {
            "generation": endpoint,
            "embedding": endpoint,
            "cache": {"path": str(tmp_path / "cache.sqlite3")},
        }
        config.write_text(yaml.safe_dump({"llm": llm}))
        code, stdout, stderr = run(
            capsys, "validate", str(reference), str(responses), "-c", str(config)
        )
        assert code == 0, stderr
        assert "no problems found" in stdout
        assert server.count() == 0
        # the same inputs and config do call the judge when evaluated
        out = tmp_path / "out"
        assert (
            main(
                [
                    "evaluate",
                    str(reference),
                    str(responses),
                    "-c",
                    str(config),
                    "-o",
                    str(out),
                    "-q",
                ]
            )
            == 0
        )
        assert server.count() > 0


def test_validate_says_which_rule_scores_each_step_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    reference = write_json(
        tmp_path / "ref.json",
        dataset(
            question("q1", [[sparql_ref(GOOD_SPARQL), ref_step("get_weather", "12 C")]]),
            question("q2", [[sparql_ref(GOOD_SPARQL), ref_step("lookup", "x")]]),
        ),
    )
    responses = write_jsonl(
        tmp_path / "r.jsonl",
        [
            response("q1", [step("sparql_query", GOOD_SPARQL, "s")]),
            response("q2", [step("lookup", "x", "l")]),
        ],
    )
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"steps": {"rules": {"get_weather": {"args": ["city"]}}}}))
    code, stdout, _ = run(capsys, "validate", str(reference), str(responses), "-c", str(config))
    assert code == 0
    lines = stdout.splitlines()
    start = lines.index("which rule scores each reference step:")
    assert [line.split() for line in lines[start + 1 : start + 5]] == [
        ["step", "name", "rule", "reference", "steps"],
        ["sparql_query", "sparql_results", "2"],
        ["get_weather", "config:get_weather", "1"],
        ["lookup", "identical_output", "1"],
    ]
    warnings = [line for line in lines if line.startswith("warning:")]
    assert warnings == [
        "warning: lookup steps are scored only by identical outputs (no rule for this name): "
        "add one under steps.rules in the config"
    ]
