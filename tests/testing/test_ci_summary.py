"""The CI report of ``evaluate`` and ``compare`` (docs/report.md, "CI summary"): the Markdown
summary appended to ``$GITHUB_STEP_SUMMARY`` and written by ``--summary-md``, from real runs
of the bundled example data and a comparison of two runs; the workflow annotations and their
escaping; a summary file that cannot be written; no secret in any of it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from graphrag_eval.cli import main
from graphrag_eval.cli.ci_summary import (
    SUMMARY_CHARS,
    annotation,
    escape_data,
    escape_property,
    summary_redactor,
    write_summary,
)
from graphrag_eval.metrics.loading import load_config
from graphrag_eval.report.markdown import md_text

from builders import dataset, failing_metric, question, ref_step, response, step

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_INPUTS = [
    str(EXAMPLES / "reference.yaml"),
    str(EXAMPLES / "responses.jsonl"),
    "-c",
    str(EXAMPLES / "config.yaml"),
]


def run(*args: str | Path) -> int:
    """``graphrag-eval ARGS`` in this process; its exit code."""
    return main([str(arg) for arg in args])


def write_steps_runs(folder: Path, fallen: int = 8, count: int = 12) -> tuple[Path, Path]:
    """Two evaluated runs of ``count`` one-step questions: A finds every step, B misses the
    steps of the first ``fallen`` questions (a significant fall of steps_score)."""
    questions = [
        question(f"q{i}", [[ref_step("autocomplete_search", f"IRI{i}", args={"query": f"S{i}"})]])
        for i in range(count)
    ]
    reference = folder / "reference.yaml"
    reference.write_text(yaml.safe_dump(dataset(*questions)))
    runs = []
    for name, missing in (("a", 0), ("b", fallen)):
        lines = [
            json.dumps(
                response(
                    f"q{i}",
                    []
                    if i < missing
                    else [step("autocomplete_search", f"IRI{i}", args={"query": f"S{i}"})],
                )
            )
            for i in range(count)
        ]
        responses = folder / f"{name}.jsonl"
        responses.write_text("\n".join(lines) + "\n")
        out = folder / name
        assert run("evaluate", str(reference), str(responses), "-o", str(out), "-q") == 0
        runs.append(out)
    return runs[0], runs[1]


def test_evaluate_appends_its_summary_to_the_job_summary_and_writes_summary_md(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    job_summary = tmp_path / "step_summary.md"
    job_summary.write_text("## an earlier step\n\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(job_summary))
    out, own = tmp_path / "out", tmp_path / "summary.md"

    code = run(
        "evaluate",
        *EXAMPLE_INPUTS,
        "-o",
        str(out),
        "-q",
        "--summary-md",
        str(own),
        "--fail-under",
        "steps_score=0.8",
        "--fail-under",
        "steps_score=0.5",
    )

    assert code == 1  # the gate's verdict, as without a summary
    text = job_summary.read_text()
    assert text.startswith("## an earlier step\n\n## graphrag-eval evaluate: ")
    assert text.removeprefix("## an earlier step\n\n") == own.read_text()
    assert "| steps_score | 0.600 | 1.000 | 0.000 | 1.000 | 0.667 | 5/5 |" in text
    assert "| input_tokens | 203,432 |" in text
    assert "| list_all_substations_within_bidding_zone_REGION | 1 | 1 | 0 | 0.000 |" in text
    assert "| **all** | 4 | 1 | 0 | 0.600 |" in text
    assert "### Gates: 1 of 2 gates failed" in text
    assert "| --fail-under steps_score=0.8 | ❌ FAIL | steps_score: mean 0.6 is under 0.8 |" in text
    assert "| --fail-under steps_score=0.5 | ✅ pass |  |" in text
    assert f"HTML report: {out}/report.html" in text
    assert (out / "report.html").is_file()
    # Not under GitHub Actions: no annotation on standard output.
    assert "::" not in capsys.readouterr().out


def test_compare_summary_lists_the_questions_that_got_worse_and_the_gates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = write_steps_runs(tmp_path)
    job_summary = tmp_path / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(job_summary))
    page = tmp_path / "comparison.html"

    code = run(
        "compare",
        str(a),
        str(b),
        "--fail-on-regression",
        "--html",
        str(page),
        "--fail-over",
        "elapsed_sec=100",
        "--top",
        "3",
    )

    assert code == 1
    text = job_summary.read_text()
    assert text.startswith(f"## graphrag-eval compare\n\nA: {a}<br>B: {b}\n\n")
    assert (
        "12 questions in both runs; scores: 0 significantly better, 1 significantly worse" in text
    )
    assert (
        "| steps_score | 12 | 1.000 | 0.333 | -0.667 | \\[-0.917, -0.417\\] | 🔴 worse | 0/8/4 |"
        in text
    )
    assert "### Questions that got worse" in text
    assert "| steps_score | q0 | t1 | 1.000 | 0.000 | response changed |" in text
    assert "| steps_score | q2 | t1 | 1.000 | 0.000 | response changed |" in text
    assert "| steps_score | q3 |" not in text  # --top 3
    assert "steps_score: 5 more (compare --top 0 lists them all)" in text
    assert "### Gates: 2 of 2 gates failed" in text
    assert (
        "| --fail-on-regression | ❌ FAIL | steps_score: significantly worse, 1 -&gt; 0.3333"
        in text
    )
    # elapsed_sec: no question of either run has one, so the gate cannot pass.
    assert "| --fail-over elapsed_sec=100 | ❌ FAIL | elapsed_sec: no question has a value" in text
    assert text.rstrip().endswith(f"HTML comparison: {page}")
    capsys.readouterr()


def test_annotations_under_github_actions_one_line_each_and_json_stays_parseable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = write_steps_runs(tmp_path)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")

    assert run("compare", str(a), str(b)) == 0  # no gate: a warning, exit 0
    out = capsys.readouterr().out
    warnings = [line for line in out.splitlines() if line.startswith("::")]
    assert warnings == [
        "::warning title=graphrag-eval::steps_score: significantly worse, 1 -> 0.3333 "
        "(-0.6667, 95%25 interval [-0.9167, -0.4167], 12 pairs)"
    ]

    assert run("compare", str(a), str(b), "--json", "--fail-on-regression") == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["metrics"]["steps_score"]["change"] == "worse"
    assert "::error title=graphrag-eval::gate failed: steps_score: significantly worse" in (
        captured.err
    )

    code = run(
        "evaluate",
        *EXAMPLE_INPUTS,
        "-o",
        str(tmp_path / "e"),
        "-q",
        "--fail-under",
        "steps_score=0.8",
    )
    assert code == 1
    assert capsys.readouterr().out.splitlines() == [
        "::error title=graphrag-eval::gate failed: steps_score: mean 0.6 is under 0.8"
    ]


def test_workflow_command_escaping() -> None:
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_property("a: b, c%\n") == "a%3A b%2C c%25%0A"
    # A message cannot end the command or start another one on a line of its own.
    line = annotation("error", "x\n::warning::injected", title="t: a, b")
    assert line == "::error title=t%3A a%2C b::x%0A::warning::injected"
    assert "\n" not in line


def test_markdown_cells_are_escaped() -> None:
    assert md_text("a|b") == "a\\|b"
    assert md_text("<img src=x onerror=alert(1)>") == "&lt;img src=x onerror=alert(1)&gt;"
    assert md_text("one\ntwo\r\nthree") == "one<br>two<br>three"
    assert md_text("[click](https://example.com) ![i](x)") == (
        "\\[click\\](https:\\//example.com) \\!\\[i\\](x)"
    )
    # GitHub links a bare URL, www. address or e-mail address by itself: not these.
    assert md_text("https://evil.example WWW.evil.example a@b.example 12:30") == (
        "https:\\//evil.example WWW\\.evil.example a\\@b.example 12:30"
    )
    assert md_text("*bold* `code` ~strike~ _em_") == ("\\*bold\\* \\`code\\` \\~strike\\~ \\_em\\_")
    assert md_text("steps_score & answer_f1") == "steps_score &amp; answer_f1"
    assert md_text("$0.002 and $0.003") == "\\$0.002 and \\$0.003"  # not math
    assert md_text("a\u202eb\x1b") == "a\\\\u202eb\\\\x1b"


def test_a_hostile_template_id_stays_in_its_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hostile = "t|x</td><script>alert(1)</script>\n| forged | row |"
    reference = tmp_path / "reference.yaml"
    reference.write_text(
        yaml.safe_dump(dataset(question("q1", [[ref_step("search", "o")]]), template_id=hostile))
    )
    responses = tmp_path / "responses.jsonl"
    responses.write_text(json.dumps(response("q1", [step("search", "o")])) + "\n")
    summary = tmp_path / "summary.md"

    code = run(
        "evaluate",
        str(reference),
        str(responses),
        "-o",
        str(tmp_path / "o"),
        "-q",
        "--summary-md",
        str(summary),
    )

    assert code == 0
    text = summary.read_text()
    row = (
        "| t\\|x&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;<br>\\| forged \\| row \\| "
        "| 1 | 0 | 0 | 1.000 |"
    )
    assert row in text.splitlines()
    assert "<script>" not in text
    assert not any(line.startswith("| forged") for line in text.splitlines())


def test_an_unwritable_summary_is_a_warning_and_keeps_the_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path))  # a directory
    for gate, expected in (("steps_score=0.5", 0), ("steps_score=0.8", 1)):
        out = tmp_path / f"out-{expected}"
        code = run(
            "evaluate",
            *EXAMPLE_INPUTS,
            "-o",
            str(out),
            "-q",
            "--fail-under",
            gate,
            "--summary-md",
            str(tmp_path / "no-such-dir" / "s.md"),
        )
        assert code == expected
        warnings = [
            line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")
        ]
        assert warnings == [
            f"warning: cannot write the CI summary to {tmp_path}: Is a directory",
            f"warning: cannot write the CI summary to {tmp_path / 'no-such-dir' / 's.md'}: "
            "No such file or directory",
        ]
        assert (out / "results.jsonl").is_file()


def test_a_job_summary_that_is_a_fifo_or_a_link_is_a_warning_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``$GITHUB_STEP_SUMMARY`` is appended to only when it is a regular file: a FIFO (which
    blocks a writer until someone reads it), a device or a symbolic link is a warning."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so that opening it cannot block
    target = tmp_path / "elsewhere.md"
    target.write_text("kept\n")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    try:
        for path, reason in ((fifo, "not a regular file"), (link, "a symbolic link")):
            monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(path))
            write_summary("## summary", None)
            warning = f"warning: cannot write the CI summary to {path}: {reason}\n"
            assert capsys.readouterr().err == warning
        assert os.read(reader, 100) == b""  # nothing was written into the FIFO
    finally:
        os.close(reader)
    assert target.read_text() == "kept\n"
    regular = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(regular))
    write_summary("## one", None)
    write_summary("## two", None)
    assert regular.read_text() == "## one\n\n## two\n\n"


def test_the_summary_stays_under_githubs_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """400 templates with ids of 3,000 characters (1.2 MB of ids): the table shows the
    first 100, each id cut to 200 characters, and counts the others; no summary is over
    SUMMARY_CHARS (GitHub drops a step's whole summary over 1 MiB)."""
    questions = [
        dataset(question(f"q{i}", answer="A"), template_id=f"{i:03d}" + "t" * 3000)
        for i in range(400)
    ]
    reference = tmp_path / "reference.json"
    reference.write_text(json.dumps([group for each in questions for group in each]))
    responses = tmp_path / "responses.jsonl"
    responses.write_text("".join(json.dumps(response(f"q{i}")) + "\n" for i in range(400)))
    summary = tmp_path / "summary.md"
    out = tmp_path / "out"
    assert run("evaluate", reference, responses, "-o", out, "-q", "--summary-md", summary) == 0
    text = summary.read_text()
    assert len(text) < 100_000
    assert "\n| 099" + "t" * 197 + "... |" in text and "| 100t" not in text
    assert "\n300 more templates in aggregates.yaml\n" in text
    long = "\n".join(f"| row {i} | " + "x" * 100 for i in range(5_000))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "step.md"))
    write_summary(long, None)
    kept = (tmp_path / "step.md").read_text()
    assert len(kept) < SUMMARY_CHARS + 200 and kept.endswith("the run's files)\n\n")
    last = kept.split("\n\n(summary cut at ")[0].splitlines()[-1]
    assert last.startswith("| row ") and last.endswith("x" * 100)  # whole lines only


def test_the_summary_redacts_the_configs_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_KEY_FOR_TEST", "s3cr3t-judge-key-value")
    config = load_config(
        {
            "llm": {
                "generation": {
                    "provider": "openai-compatible",
                    "base_url": "https://user:pa55word-in-url@judge.example/v1",
                    "api_key_env": "JUDGE_KEY_FOR_TEST",
                    "extra_headers": {"X-Api-Key": "header-secret-1234"},
                }
            }
        }
    )
    redact = summary_redactor([config, None])

    text = redact(
        "failed: s3cr3t-judge-key-value, pa55word-in-url, header-secret-1234, "
        "https://other:pw-of-another@x.example/"
    )

    for secret in ("s3cr3t-judge-key-value", "pa55word-in-url", "header-secret-1234", "pw-of"):
        assert secret not in text
    assert text.startswith("failed: ***, ***, ***, https://***@x.example/")


def test_an_incomplete_run_says_so_in_the_summary_and_an_annotation_and_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"metrics": ["broken"]}))
    summary = tmp_path / "summary.md"
    inputs = [str(EXAMPLES / "reference.yaml"), str(EXAMPLES / "responses.jsonl")]

    with failing_metric("broken", "a bug\n::error::forged"):
        code = run("evaluate", *inputs, "-c", config, "-o", tmp_path / "o", "-q")
        code_with_summary = run(
            "evaluate", *inputs, "-c", config, "-o", tmp_path / "p", "-q", "--summary-md", summary
        )

    assert code == code_with_summary == 3
    annotations = [line for line in capsys.readouterr().out.splitlines() if line.startswith("::")]
    assert len(annotations) == 2  # one a run, the message's line break escaped
    assert annotations[0].startswith(
        "::error title=graphrag-eval::evaluation incomplete: 4 metric values on 4 questions not "
        "computed (broken failed on every question (internal error in broken: RuntimeError('a "
        "bug\\n::error::forged')))"
    )
    text = summary.read_text()
    assert "| broken_score | - | - | - | - |  | 0/5 (4 failed) |" in text
    assert "4 metric values failed (each failed metric has its \\_error key in the results)" in text
    assert "evaluation incomplete: 4 metric values on 4 questions not computed" in text
