"""Under GitHub Actions no text from the inputs runs as a workflow command (docs/security.md,
"Workflow commands"): a template id or a question id with a line break, printed by
``evaluate``, ``compare`` or ``aggregate``, never starts a line the runner reads as ``::...``;
graphrag-eval's own annotations still do."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from graphrag_eval.cli import main
from graphrag_eval.cli.workflow_commands import CommandFilter, write_command

from builders import dataset, question, ref_step, response, step

HOSTILE_TEMPLATE = "t\n::error::from a template id"
HOSTILE_QUESTION = "q0\n::warning::from a question id %0A::add-mask::x"


def commands(text: str) -> list[str]:
    """The lines of ``text`` the runner would run (it ends a line at CR, LF or CR LF)."""
    return [
        line
        for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        if line.lstrip().startswith("::")
    ]


def write_run(folder: Path, found: bool) -> Path:
    ids = [HOSTILE_QUESTION, *(f"q{i}" for i in range(1, 4))]
    reference = folder / "reference.yaml"
    reference.write_text(
        yaml.safe_dump(
            dataset(
                *(question(qid, [[ref_step("autocomplete_search", "IRI")]]) for qid in ids),
                template_id=HOSTILE_TEMPLATE,
            )
        )
    )
    steps = [step("autocomplete_search", "IRI")] if found else []
    responses = folder / f"{found}.jsonl"
    responses.write_text("".join(json.dumps(response(qid, steps)) + "\n" for qid in ids))
    out = folder / f"run-{found}"
    assert main(["evaluate", str(reference), str(responses), "-o", str(out), "-q"]) == 0
    return out


def test_hostile_ids_start_no_workflow_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = write_run(tmp_path, True), write_run(tmp_path, False)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    reference, responses = tmp_path / "reference.yaml", tmp_path / "False.jsonl"
    capsys.readouterr()
    gate = ["--fail-under", "steps_score=0.5"]
    out = str(tmp_path / "again")
    assert main(["evaluate", str(reference), str(responses), "-o", out, *gate]) == 1
    printed = capsys.readouterr()
    assert "\\::error::from a template id" in printed.out  # shown, as text
    assert commands(printed.out) == [
        "::error title=graphrag-eval::gate failed: steps_score: mean 0 is under 0.5"
    ]
    assert commands(printed.err) == []
    for args in (
        ["compare", str(good), str(bad)],
        ["compare", str(good), str(bad), "--format", "yaml"],
        ["aggregate", str(bad)],
    ):
        assert main(args) == 0
        printed = capsys.readouterr()
        assert commands(printed.out + printed.err) == [], args
        assert "\\::error::from a template id" in printed.out, args
        if args[0] == "compare":
            assert "\\::warning::from a question id %0A::add-mask::x" in printed.out
    monkeypatch.delenv("GITHUB_ACTIONS")  # elsewhere the ids are printed as they are
    assert main(["compare", str(good), str(bad)]) == 0
    shown = commands(capsys.readouterr().out)
    assert shown[0].startswith("::warning::from a question id %0A::add-mask::x")


def test_the_filter_holds_a_line_start_until_it_cannot_begin_a_command() -> None:
    stream = io.StringIO()
    guarded = CommandFilter(stream)  # type: ignore[arg-type]
    for part in ("ok\n  ", ":", ":error::split\r", "::x::y\r\nmid ::a::b\n", "a", "::b\n"):
        guarded.write(part)
    guarded.write("no break")
    write_command(guarded, "::notice title=graphrag-eval::ours")
    guarded.write("  :")
    guarded.close()
    assert stream.getvalue() == (
        "ok\n  \\::error::split\r\\::x::y\r\nmid ::a::b\na::b\n"
        "no break\n::notice title=graphrag-eval::ours\n  :"
    )
    with pytest.raises(TypeError):
        guarded.write(b"")  # type: ignore[arg-type]
