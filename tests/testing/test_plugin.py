"""The pytest plugin (docs/integrations.md, "pytest"), run by pytest itself (``pytester``): a
test that passes, one that fails with the gates and the worst questions and no traceback of
the package, a callable agent asked concurrently whose exception stays on its question, the
regression gate against a baseline run, the output directory kept per test, the entry point
of pyproject.toml, and a session that does not use the plugin importing nothing of it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
import yaml

# Imported here, not first in an inner session: pytester drops the modules an in-process
# session imported when it ends, and pygal (the report's charts) dropped so leaves
# importlib.metadata unable to find any distribution (the next session's start fails).
import graphrag_eval.report.html  # noqa: F401
from graphrag_eval.cli import main

from builders import dataset, failing_metric, question, ref_step, response, step

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PLUGIN = "graphrag_eval.testing.plugin"


@pytest.fixture(autouse=True)
def _only_this_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    """The inner sessions load the plugin with ``-p`` whether or not the package's entry
    point is installed (both would register it twice)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


def inner_test(pytester: pytest.Pytester, source: str) -> None:
    """The test module of an inner session, with ``EXAMPLES`` and ``DATA`` (the folder of
    this test's own files) defined."""
    header = f"from pathlib import Path\nEXAMPLES = Path({str(EXAMPLES)!r})\n"
    header += f"DATA = Path({str(pytester.path / 'data')!r})\n"
    pytester.makepyfile(test_inner=header + textwrap.dedent(source))


def run_inner(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", PLUGIN, "-p", "no:cacheprovider", *args)


def write_steps_data(folder: Path, count: int = 12) -> Path:
    """``reference.yaml`` of ``count`` one-step questions (q0...), ``good.jsonl`` finding
    every step, ``bad.jsonl`` missing the steps of q0-q7; the reference's path."""
    folder.mkdir(exist_ok=True)
    questions = [
        question(f"q{i}", [[ref_step("autocomplete_search", f"IRI{i}", args={"query": f"S{i}"})]])
        for i in range(count)
    ]
    reference = folder / "reference.yaml"
    reference.write_text(yaml.safe_dump(dataset(*questions)))
    for name, missing in (("good", 0), ("bad", 8)):
        found = [
            response(
                f"q{i}",
                []
                if i < missing
                else [step("autocomplete_search", f"IRI{i}", args={"query": f"S{i}"})],
            )
            for i in range(count)
        ]
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(item) + "\n" for item in found))
    return reference


def test_a_passing_evaluation_keeps_its_run_in_the_tests_tmp_path(
    pytester: pytest.Pytester,
) -> None:
    inner_test(
        pytester,
        """
        def test_example(graphrag_eval, tmp_path):
            run = graphrag_eval.assert_passes(
                EXAMPLES / "reference.yaml",
                EXAMPLES / "responses.jsonl",
                config=EXAMPLES / "config.yaml",
                fail_under="steps_score=0.6",
            )
            assert run.passed
            assert run.mean("steps_score") == 0.6
            assert run.out_dir == tmp_path / "graphrag-eval"
            print("OUT_DIR", run.out_dir)
        """,
    )

    result = run_inner(pytester, "-s")

    result.assert_outcomes(passed=1)
    printed = next(line for line in result.outlines if "OUT_DIR " in line)
    out_dir = Path(printed.split("OUT_DIR ")[1].strip())
    assert out_dir.parent.name == "test_example0"  # the inner test's tmp_path
    for name in ("results.jsonl", "aggregates.yaml", "run.yaml", "report.html"):
        assert (out_dir / name).is_file()
    assert len((out_dir / "results.jsonl").read_text().splitlines()) == 5


def test_a_failed_gate_lists_the_gates_and_the_worst_questions(
    pytester: pytest.Pytester,
) -> None:
    inner_test(
        pytester,
        """
        def test_example(graphrag_eval):
            graphrag_eval.assert_passes(
                EXAMPLES / "reference.yaml",
                EXAMPLES / "responses.jsonl",
                config=EXAMPLES / "config.yaml",
                fail_under={"steps_score": 0.8},
                fail_over=["elapsed_sec=60"],
            )
        """,
    )

    result = run_inner(pytester)

    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: graphrag-eval: 1 check failed; the run is in "
            "*test_example0/graphrag-eval (report: *test_example0/graphrag-eval/report.html)",
            "E         FAIL steps_score: mean 0.6 is under 0.8",
            "E       worst questions on steps_score (lowest first):",
            "E         03d4283773b4387114342518176b128b (template "
            "list_all_substations_within_bidding_zone_REGION): error: Error: the agent exceeded "
            "its recursion limit",
            "E         d566b1e9da418ac83e520a66cc7af4d7 (template "
            "list_all_substations_within_bidding_zone_REGION): steps_score 0.000, "
            "elapsed_sec 8.886",
        ]
    )
    # Only the questions under the threshold, and no frame of the package in the traceback.
    assert "c10bbc8dce98a4b8832d125134a16153" not in output
    assert "graphrag_eval/" not in output
    assert "test_inner.py:6: AssertionError" in output  # the test's own line


def test_a_callable_agent_is_asked_concurrently_and_its_exception_stays_on_its_question(
    pytester: pytest.Pytester,
) -> None:
    write_steps_data(pytester.path / "data", count=6)
    inner_test(
        pytester,
        """
        import asyncio, json, threading

        GOOD = {
            json.loads(line)["question_id"]: json.loads(line)
            for line in (DATA / "good.jsonl").read_text().splitlines()
        }
        both_in_flight = threading.Barrier(2, timeout=60)

        def sync_agent(question):
            if question.id in ("q0", "q1"):
                both_in_flight.wait()  # passes only if q0 and q1 are asked at the same time
            if question.id == "q3":
                raise RuntimeError("the tool server is down")
            return {**GOOD[question.id], "actual_answer": f"answer to {question}"}

        async def async_agent(question):
            await asyncio.sleep(0)
            return "just an answer" if question.template_id == "t1" else None

        def test_sync_agent(graphrag_eval):
            graphrag_eval.assert_passes(DATA / "reference.yaml", agent=sync_agent)

        def test_async_agent(graphrag_eval):
            run = graphrag_eval.assert_passes(
                DATA / "reference.yaml", agent=async_agent, concurrency=3
            )
            assert [record["actual_answer"] for record in run.records] == ["just an answer"] * 6
        """,
    )

    result = run_inner(pytester, "--graphrag-eval-dir", "runs")

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: graphrag-eval: 1 check failed; the run is in *",
            "E         FAIL agent: failed on 1 of 6 questions",
            "E       questions the agent failed on:",
            "E         q3 (template t1): RuntimeError: the tool server is down",
        ]
    )
    (kept,) = (pytester.path / "runs").glob("test_inner.py_test_sync_agent-*")
    out_dir = kept / "graphrag-eval"
    records = {
        record["question_id"]: record
        for record in map(json.loads, (out_dir / "results.jsonl").read_text().splitlines())
    }
    assert records["q3"]["status"] == "error"
    assert records["q3"]["error"] == "agent: RuntimeError: the tool server is down"
    assert {qid: records[qid]["steps_score"] for qid in ("q0", "q1", "q2", "q4", "q5")} == {
        "q0": 1.0,
        "q1": 1.0,
        "q2": 1.0,
        "q4": 1.0,
        "q5": 1.0,
    }
    assert records["q0"]["actual_answer"] == "answer to question q0?"
    asked = (out_dir / "responses.jsonl").read_text().splitlines()
    assert json.loads(asked[3]) == {
        "question_id": "q3",
        "status": "error",
        "error": "agent: RuntimeError: the tool server is down",
    }


def test_an_agent_that_hangs_exits_or_replies_garbage_fails_on_that_question_only(
    pytester: pytest.Pytester,
) -> None:
    """With ``timeout=``, a question the agent never answers fails after that long (the
    thread is left behind, not waited for); ``sys.exit`` in the agent and a reply with a
    field that is not as documented (``actual_steps`` not a list) fail their question; the
    others are scored."""
    write_steps_data(pytester.path / "data", count=6)
    inner_test(
        pytester,
        """
        import json, sys, threading

        GOOD = {
            json.loads(line)["question_id"]: json.loads(line)
            for line in (DATA / "good.jsonl").read_text().splitlines()
        }
        never = threading.Event()

        def agent(question):
            if question.id == "q0":
                never.wait()  # hangs until the test has its verdict
            if question.id == "q1":
                sys.exit(3)
            if question.id == "q2":
                return {"actual_answer": "a", "actual_steps": "not a list"}
            return GOOD[question.id]

        def test_agent(graphrag_eval):
            try:
                graphrag_eval.assert_passes(DATA / "reference.yaml", agent=agent, timeout=2)
            finally:
                never.set()
                run = graphrag_eval.runs[0]
                assert [r.get("steps_score") for r in run.records[3:]] == [1.0, 1.0, 1.0]
        """,
    )

    result = run_inner(pytester)

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E * AssertionError: graphrag-eval: 1 check failed; the run is in *",
            "E *   FAIL agent: failed on 3 of 6 questions",
            "E * questions the agent failed on:",
            "E *   q0 (template t1): no reply within 2 s (timeout=)",
            "E *   q1 (template t1): SystemExit: 3",
            "E *   q2 (template t1): returned a malformed response: actual_steps: input "
            "should be a valid list (got 'not a list')",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_tests_whose_ids_differ_only_in_replaced_characters_keep_their_own_runs(
    pytester: pytest.Pytester,
) -> None:
    """``t[a b]`` and ``t[a_b]`` (alike once the space is replaced), and two ids alike in
    their first 120 characters, each get their own directory under --graphrag-eval-dir: one
    test's run never replaces another's (nor, under pytest-xdist, runs into it)."""
    inner_test(
        pytester,
        """
        import pytest

        LONG = "x" * 130

        @pytest.mark.parametrize("name", ["a b", "a_b", LONG + "1", LONG + "2"], ids=str)
        def test_each(graphrag_eval, name):
            run = graphrag_eval.evaluate(
                EXAMPLES / "reference.yaml",
                EXAMPLES / "responses.jsonl",
                config=EXAMPLES / "config.yaml",
            )
            (run.out_dir / "name.txt").write_text(name)
        """,
    )

    result = run_inner(pytester, "--graphrag-eval-dir", "runs")

    result.assert_outcomes(passed=4)
    kept = sorted(path.name for path in (pytester.path / "runs").iterdir())
    assert len(kept) == 4 and all(name.startswith("test_inner.py_test_each_") for name in kept)
    names = {
        (pytester.path / "runs" / name / "graphrag-eval" / "name.txt").read_text() for name in kept
    }
    assert names == {"a b", "a_b", "x" * 130 + "1", "x" * 130 + "2"}


def test_the_regression_gate_against_a_baseline_run(pytester: pytest.Pytester) -> None:
    reference = write_steps_data(pytester.path / "data")
    baseline = pytester.path / "baseline"
    code = main(
        [
            "evaluate",
            str(reference),
            str(reference.parent / "good.jsonl"),
            "-o",
            str(baseline),
            "-q",
        ]
    )
    assert code == 0
    inner_test(
        pytester,
        f"""
        BASELINE = {str(baseline)!r}

        def test_same_as_baseline(graphrag_eval):
            graphrag_eval.assert_passes(
                DATA / "reference.yaml", DATA / "good.jsonl", baseline=BASELINE
            )

        def test_worse_than_baseline(graphrag_eval):
            graphrag_eval.assert_passes(
                DATA / "reference.yaml", DATA / "bad.jsonl", baseline=BASELINE, worst=2
            )

        def test_regression_not_gated(graphrag_eval):
            run = graphrag_eval.evaluate(
                DATA / "reference.yaml", DATA / "bad.jsonl", baseline=BASELINE,
                fail_on_regression=False,
            )
            assert run.passed
            assert run.comparison.overall["steps_score"].verdict == "worse"
        """,
    )

    result = run_inner(pytester)

    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: graphrag-eval: 1 check failed; the run is in *",
            "E         FAIL steps_score: significantly worse, 1 -> 0.3333 (-0.6667, 95% "
            "interval [[]-0.9167, -0.4167[]], 12 pairs)",
            f"E       questions worse on steps_score than in the baseline {baseline} "
            "(8 of 12; largest fall first):",
            "E         q0 (template t1): 1.000 -> 0.000",
            "E         q1 (template t1): 1.000 -> 0.000",
            "",
        ]
    )
    assert "q2 (template t1)" not in result.stdout.str()  # worst=2


def test_a_line_break_in_an_id_stays_inside_its_line_of_the_message(
    pytester: pytest.Pytester,
) -> None:
    """pytest prints the message as it is with ``--tb=native``: a question id or template id
    with a line break must not start a line of its own (under GitHub Actions a line
    beginning with ``::`` is a workflow command)."""
    inner_test(
        pytester,
        """
        HOSTILE = "q1\\n::error::from an id"
        REFERENCE = [{"template_id": "t\\n::warning::from a template", "questions": [
            {"id": HOSTILE, "question_text": "x", "reference_answer": "a",
             "reference_steps": [[{"name": "sparql_query", "args": {"query": "select 1"},
                                   "output": "x"}]]},
        ]}]

        def agent(question):
            raise RuntimeError("down\\n::error::from a reason")

        def test_hostile(graphrag_eval):
            graphrag_eval.assert_passes(REFERENCE, agent=agent)
        """,
    )

    result = run_inner(pytester, "--tb=native")

    result.assert_outcomes(failed=1)
    assert not [line for line in result.outlines if line.lstrip().startswith("::")]
    result.stdout.fnmatch_lines(
        ["  q1\\n::error::from an id (template t\\n::warning::from a template): RuntimeError: *"]
    )


def test_a_metric_that_could_not_be_computed_fails_the_test(pytester: pytest.Pytester) -> None:
    inner_test(
        pytester,
        """
        def test_example(graphrag_eval):
            graphrag_eval.assert_passes(
                EXAMPLES / "reference.yaml",
                EXAMPLES / "responses.jsonl",
                config={"metrics": ["broken"]},
                worst=1,
            )
        """,
    )

    with failing_metric("broken", "a bug"):  # registered in this process, where it runs
        result = run_inner(pytester)

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E         FAIL 4 metric values could not be computed, on 4 questions",
            "E       metrics that could not be computed:",
            "E         c10bbc8dce98a4b8832d125134a16153 (template "
            "list_all_transformers_within_Substation_SUBSTATION): broken: *a bug*",
            "E         ... and 3 more (see results.jsonl)",
        ]
    )


def test_unusable_gates_and_inputs_fail_in_one_line(pytester: pytest.Pytester) -> None:
    inner_test(
        pytester,
        """
        def test_misspelt_gate(graphrag_eval):
            graphrag_eval.evaluate(
                EXAMPLES / "reference.yaml",
                EXAMPLES / "responses.jsonl",
                fail_under="step_score=0.5",
            )

        def test_no_baseline(graphrag_eval):
            graphrag_eval.evaluate(
                EXAMPLES / "reference.yaml", EXAMPLES / "responses.jsonl", fail_on_regression=True
            )

        def test_missing_reference(graphrag_eval):
            graphrag_eval.evaluate(
                EXAMPLES / "no-such-reference.yaml", EXAMPLES / "responses.jsonl"
            )

        def test_no_time_at_all(graphrag_eval):
            graphrag_eval.evaluate(EXAMPLES / "reference.yaml", agent=str, timeout=0)
        """,
    )

    result = run_inner(pytester)

    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(
        [
            "*graphrag-eval: --fail-under: no metric writes 'step_score' "
            "(did you mean steps_score?)",
            "*graphrag-eval: fail_on_regression needs a baseline: the output directory of a run",
            "*graphrag-eval: *no-such-reference.yaml*",
            "*graphrag-eval: timeout=0: a number of seconds over 0 (or None: no limit)",
        ]
    )
    assert "graphrag_eval/" not in result.stdout.str()


def test_the_entry_point_in_pyproject_loads_the_plugin(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``pytest11`` entry point as pyproject.toml declares it, installed as a
    distribution's metadata on the path: pytest loads the plugin without ``-p``."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert declared["pytest11"] == {"graphrag_eval": PLUGIN}
    site = pytester.path / "site"
    dist = site / "graphrag_eval_entry_point_check-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: graphrag-eval-entry-point-check\nVersion: 0\n"
    )
    (dist / "entry_points.txt").write_text(
        "[pytest11]\n"
        + "".join(f"{name} = {value}\n" for name, value in declared["pytest11"].items())
    )
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    monkeypatch.setenv("PYTHONPATH", f"{site}{':'}{ROOT / 'src'}")
    inner_test(
        pytester,
        """
        def test_fixture(graphrag_eval, request):
            assert request.config.pluginmanager.has_plugin("graphrag_eval")
            assert graphrag_eval.runs == []
        """,
    )

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1)


def test_a_session_that_does_not_use_the_plugin_imports_nothing_of_the_package() -> None:
    code = (
        "import sys\n"
        f"import {PLUGIN}\n"
        "print(' '.join(sorted(name for name in sys.modules if name.startswith('graphrag_eval'))))"
    )
    printed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()

    assert printed == [
        "graphrag_eval",
        "graphrag_eval.errors",
        "graphrag_eval.testing",
        "graphrag_eval.testing.plugin",
        "graphrag_eval.version",
    ]
