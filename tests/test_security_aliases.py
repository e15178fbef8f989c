"""YAML aliases bounded by the size they expand to, not only by their node count
(docs/security.md, "YAML and JSON bombs"): one large anchored string repeated by thousands of
aliases is refused in one line, at once and in little memory; what ``yaml.safe_dump`` writes
for a dataset that shares steps between questions is read; a refusal says how to go on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_eval.cli import answer_correctness_main, main
from graphrag_eval.errors import InputError
from graphrag_eval.files.bounded import (
    EXPANDED_SIZE_ENV,
    NODE_BYTES,
    expanded_size_limit,
    max_expanded_size,
    parse_size,
)
from graphrag_eval.inputs import load_reference
from test_security import (
    LOOKUP,
    read_results,
    response,
    run_bomb,
    write_reference,
    write_responses,
)

BIG = "x" * 1_000_000  # one megabyte, anchored once
ALIASES = 5_000  # 4.66 GiB once expanded (the bomb: 77 s, 9.9 GB, a 5 GB results file)
HOW_TO_GO_ON = f"raise the limit with --max-expanded-size or ${EXPANDED_SIZE_ENV}"


def large_scalar_bomb(aliases: int = ALIASES) -> str:
    """A reference of ``aliases`` questions whose reference answer is one anchored string."""
    lines = [
        "- template_id: t",
        "  questions:",
        f"  - {{id: q0, question_text: Q?, reference_answer: &big {BIG}}}",
    ]
    lines += [
        f"  - {{id: q{i}, question_text: Q?, reference_answer: *big}}" for i in range(1, aliases)
    ]
    return "\n".join(lines) + "\n"


def assert_refused_in_one_line(stderr: str, path: Path) -> None:
    assert stderr.count("\n") == 1, stderr
    assert stderr.startswith(
        f"graphrag-eval: error: {path}: YAML aliases would expand it by 4.66 GiB, over the "
        "limit of 64 MiB for the file (a YAML bomb?)"
    )
    assert HOW_TO_GO_ON in stderr
    assert "or write the file without aliases" in stderr


def test_a_large_string_repeated_by_aliases_in_the_reference_is_refused(tmp_path: Path) -> None:
    reference = tmp_path / "reference.yaml"
    reference.write_text(large_scalar_bomb())
    responses = write_responses(tmp_path, [response("q0")])
    out = tmp_path / "out"
    done = run_bomb("evaluate", reference, responses, "-o", out, folder=tmp_path)
    assert done.returncode == 2
    assert_refused_in_one_line(done.stderr, reference)
    assert not (out / "results.jsonl").exists()


def test_a_large_string_repeated_by_aliases_in_the_config_is_refused(tmp_path: Path) -> None:
    reference = write_reference(tmp_path)
    responses = write_responses(tmp_path, [response("q0")])
    config = tmp_path / "config.yaml"
    config.write_text(f"x-notes: &big {BIG}\nx-more: [{', '.join(['*big'] * ALIASES)}]\n")
    done = run_bomb(
        "evaluate", reference, responses, "-c", config, "-o", tmp_path / "out", folder=tmp_path
    )
    assert done.returncode == 2
    assert_refused_in_one_line(done.stderr, config)


def test_a_large_string_repeated_across_responses_costs_the_items_over_the_budget(
    tmp_path: Path,
) -> None:
    reference = write_reference(tmp_path)
    responses = tmp_path / "responses.yaml"
    # Each item aliases the string anchored in the first one: the file's budget is shared.
    items = [f"- {{question_id: x{i}, actual_answer: *big}}" for i in range(ALIASES)]
    responses.write_text(
        f"- {{question_id: q0, actual_answer: &big {BIG}}}\n"
        + "\n".join(items)
        + "\n"
        + yaml.safe_dump([response("q1"), response("q2")])
    )
    out = tmp_path / "out"
    done = run_bomb("evaluate", reference, responses, "-o", out, "-q", folder=tmp_path)
    assert done.returncode == 0, done.stderr
    results = read_results(out)
    assert results["q1"]["steps_score"] == pytest.approx(1.0)
    assert results["q2"]["steps_score"] == pytest.approx(1.0)
    summary = yaml.safe_load((out / "run.yaml").read_text())
    refused = [notice for notice in summary["notices"] if "YAML aliases would expand" in notice]
    # The first aliases of one megabyte (and 16 bytes for the node) fill the 64 MiB.
    assert len(refused) == ALIASES - (64 * 2**20) // (len(BIG) + NODE_BYTES)
    assert "of it left" in refused[0]


def shared_steps_reference(questions: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A dataset whose questions all use the same twenty step objects, as a script that builds
    a dataset writes it, and the responses that match it."""
    args = [{"n": i, **{f"option{k}": k for k in range(10)}} for i in range(20)]
    steps = [
        {
            "name": "lookup",
            "args": args[i],
            "output": LOOKUP,
            "output_media_type": "application/json",
        }
        for i in range(20)
    ]
    dataset = [
        {
            "template_id": "t",
            "questions": [
                {
                    "id": f"q{i}",
                    "question_text": f"Q{i}?",
                    "reference_answer": "a",
                    "reference_steps": [steps[:10], steps[10:]],
                }
                for i in range(questions)
            ],
        }
    ]
    actual = [
        {"name": "lookup", "status": "success", "args": dict(args[i]), "output": LOOKUP}
        for i in range(20)
    ]
    records = [
        {"question_id": f"q{i}", "actual_answer": "a", "actual_steps": actual}
        for i in range(questions)
    ]
    return dataset, records


def test_a_reference_that_safe_dump_wrote_with_shared_steps_is_read_and_evaluated(
    tmp_path: Path,
) -> None:
    dataset, records = shared_steps_reference(350)
    reference = tmp_path / "reference.yaml"
    reference.write_text(yaml.safe_dump(dataset))  # anchors each step, aliases it 349 times
    # 6,980 aliases of a step of 31 nodes: 216,380 nodes added (100,000 were refused before).
    assert reference.read_text().count("*id") == 6_980
    responses = write_responses(tmp_path, records)
    out = tmp_path / "out"
    assert main(["evaluate", str(reference), str(responses), "-o", str(out), "-q"]) == 0
    results = read_results(out)
    assert len(results) == 350
    assert all(result["steps_score"] == pytest.approx(1.0) for result in results.values())


def test_the_limit_is_relative_to_the_file_with_a_floor_and_a_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(EXPANDED_SIZE_ENV, raising=False)
    assert expanded_size_limit(1_000) == 64 * 2**20
    assert expanded_size_limit(20 * 2**20) == 200 * 2**20
    assert expanded_size_limit(200 * 2**20) == 512 * 2**20
    monkeypatch.setenv(EXPANDED_SIZE_ENV, "2G")
    assert expanded_size_limit(1_000) == 2 * 2**30
    with max_expanded_size(5_000):  # the command line's option wins
        assert expanded_size_limit(1_000) == 5_000
    assert expanded_size_limit(1_000) == 2 * 2**30


@pytest.mark.parametrize(
    ("text", "size"),
    [("123", 123), ("64K", 64 << 10), ("64kib", 64 << 10), ("1.5M", 3 << 19), ("2GB", 2 << 30)],
)
def test_sizes_are_read_with_binary_units(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "big", "-1", "0", "2X"])
def test_what_is_no_size_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="size"):
        parse_size(text)


def _aliased_notes(tmp_path: Path, aliases: int) -> Path:
    """A reference whose template carries ``aliases`` aliases of one megabyte in an unused
    key: 1 MB of file, ``aliases`` MB once expanded."""
    reference = tmp_path / "reference.yaml"
    step = {"name": "lookup", "args": {}, "output": LOOKUP}
    question = {
        "id": "q0",
        "question_text": "Q?",
        "reference_answer": "a",
        "reference_steps": [[step]],
    }
    reference.write_text(
        f"- template_id: t\n  x-notes: [&big {BIG}, {', '.join(['*big'] * aliases)}]\n"
        f"  questions: {json.dumps([question])}\n"
    )
    return reference


def test_the_limit_is_raised_on_the_command_line_or_in_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(EXPANDED_SIZE_ENV, raising=False)
    reference = _aliased_notes(tmp_path, 80)  # 80 MiB expanded: over the 64 MiB floor
    responses = write_responses(tmp_path, [response("q0")])
    args = ["validate", str(reference), str(responses)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "YAML aliases would expand it by 76.30 MiB, over the limit of 64 MiB" in err
    assert HOW_TO_GO_ON in err
    assert main([*args, "--max-expanded-size", "100M"]) == 0
    assert main(args) == 2  # the option held for that command only
    monkeypatch.setenv(EXPANDED_SIZE_ENV, "100M")
    capsys.readouterr()
    assert main(args) == 0
    assert load_reference(reference)[0]["x-notes"][80] == BIG


def test_an_unreadable_limit_in_the_environment_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = _aliased_notes(tmp_path, 1)
    monkeypatch.setenv(EXPANDED_SIZE_ENV, "lots")
    with pytest.raises(InputError, match=f"\\${EXPANDED_SIZE_ENV}: 'lots' is not a size"):
        load_reference(reference)


@pytest.mark.parametrize("command", ["answer-correctness", "report", "compare", "aggregate"])
def test_every_command_that_reads_a_config_takes_the_limit_its_refusal_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """The refusal says to raise the limit with --max-expanded-size: the commands that read a
    config (or saved YAML) took no such option ('No such option', exit 2)."""
    config = tmp_path / "config.yaml"
    config.write_text(f"x-notes: [&a {'x' * 2_000}, *a, *a]\n")
    reference = write_reference(tmp_path)
    responses = write_responses(tmp_path, [response("q0")])
    out = tmp_path / "out"
    assert main(["evaluate", str(reference), str(responses), "-o", str(out), "-q"]) == 0
    tsv = tmp_path / "in.tsv"
    tsv.write_text("Question\tReference answer\tActual answer\nQ?\tA\tA\n")
    args = {
        "answer-correctness": ["-i", str(tsv), "-o", str(tmp_path / "judged.tsv")],
        "report": ["report", str(out)],
        "compare": ["compare", str(out), str(out)],
        "aggregate": ["aggregate", str(out)],
    }[command]
    limited = [*args, "-c", str(config), "--max-expanded-size", "1K"]
    capsys.readouterr()
    code = answer_correctness_main(limited) if command == "answer-correctness" else main(limited)
    assert code == 2
    err = capsys.readouterr().err
    assert "YAML aliases would expand it by 3.94 KiB, over the limit of 1 KiB" in err, err
