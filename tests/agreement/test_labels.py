"""Human labels as inputs (docs/inputs.md, ``human_labels``; docs/report.md): the reference's
key checked like every other, with a located one-line error; labels files read row by row;
and the statistics' extra named when it is missing."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from graphrag_eval.agreement import labels as labels_module
from graphrag_eval.agreement import statistics
from graphrag_eval.agreement.labels import (
    may_have_labels,
    read_labels_file,
    reference_labels,
    text_value,
)
from graphrag_eval.errors import GraphragEvalError, InputError
from graphrag_eval.inputs import Diagnostics, parse_reference
from graphrag_eval.inputs.human_labels import HumanLabel

from builders import dataset, question


def labelled(labels: Any) -> list[dict[str, Any]]:
    return dataset({**question("q1", answer="T1"), "human_labels": labels})


def test_human_labels_are_a_known_key_of_a_question() -> None:
    diagnostics = Diagnostics()

    parse_reference(
        labelled([{"metric": "answer_classification", "value": "CORRECT"}]),
        diagnostics=diagnostics,
    )

    assert diagnostics.notices == []  # not an unused field


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (
            "CORRECT",
            "question 'q1': human_labels: expected a list of {metric, value, annotator}, got a str",
        ),
        (
            [["x"]],
            "question 'q1': human_labels[0]: expected a mapping {metric, value, "
            "annotator}, got a list",
        ),
        ([{"metric": "m"}], "question 'q1': human_labels[0].value: missing"),
        ([{"value": 1}], "question 'q1': human_labels[0].metric: missing"),
        ([{"metric": "m", "value": " "}], "question 'q1': human_labels[0].value: empty"),
        (
            [{"metric": "m", "value": [1]}],
            "human_labels[0].value: expected a number, true/false or a label, got a list",
        ),
        ([{"metric": "m", "value": 1, "by": "x"}], "human_labels[0]: unknown key 'by'"),
        (
            [{"metric": "m", "value": 1}, {"metric": "m", "value": 0}],
            "human_labels[1].annotator: a second label of m by 'human' (the first is "
            "human_labels[0]); give each annotator a name",
        ),
    ],
)
def test_a_bad_label_in_the_reference_is_a_located_error(labels: Any, message: str) -> None:
    with pytest.raises(InputError) as raised:
        parse_reference(labelled(labels), source="ref.yaml")

    assert message in str(raised.value)
    assert str(raised.value).startswith("ref.yaml: question 'q1': human_labels")
    assert "\n" not in str(raised.value)


def test_reference_labels_are_read_with_where_they_are(tmp_path: Path) -> None:
    path = tmp_path / "ref.yaml"
    path.write_text(
        "- template_id: t\n  questions:\n  - id: q1\n    question_text: Q?\n    human_labels:\n"
        "    - {metric: steps_score, value: 0.5, annotator: ann}\n"
        "    - {metric: steps_score, value: true}\n"
    )

    found = reference_labels(path)

    assert found.labels == [
        HumanLabel("q1", "steps_score", 0.5, "ann", f"{path}: question 'q1': human_labels[0]"),
        HumanLabel("q1", "steps_score", True, "human", f"{path}: question 'q1': human_labels[1]"),
    ]


def test_csv_cells_are_read_as_booleans_numbers_or_labels() -> None:
    assert text_value("TRUE") is True
    assert text_value("0.25") == 0.25
    assert text_value("nan") == "nan"
    assert text_value("DON'T KNOW") == "DON'T KNOW"


def test_a_labels_file_that_cannot_be_read_is_one_error(tmp_path: Path) -> None:
    no_header = tmp_path / "labels.csv"
    no_header.write_text("q1,m,1\n")
    latin = tmp_path / "latin.csv"
    latin.write_bytes("question_id,metric,value\nq1,m,caf\xe9\n".encode("latin-1"))

    with pytest.raises(InputError, match=r"labels.csv: line 1: no column question_id, metric"):
        read_labels_file(no_header)
    with pytest.raises(InputError, match=r"latin.csv: line 2, column 9: not UTF-8 text"):
        read_labels_file(latin)


def test_jsonl_rows_each_their_own(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text(
        '{"question_id": "q1", "metric": "m", "value": "B", "annotator": "ann"}\n'
        '{"question_id": "q2", "metric": "m"}\n'
        "\n"
        '{"question_id": 3, "metric": "m", "value": false}\n'
    )

    found = read_labels_file(path)

    assert [(label.question_id, label.value, label.annotator) for label in found.labels] == [
        ("q1", "B", "ann"),
        ("3", False, "human"),
    ]
    assert found.problems == [f"{path}: line 2: value: missing: left out"]


def test_a_missing_statistics_library_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "krippendorff", None)  # as if not installed
    monkeypatch.setattr(statistics, "_loaded", [])

    with pytest.raises(GraphragEvalError) as raised:
        statistics.libraries()

    assert str(raised.value) == (
        "agreement statistics need the agreement extra (krippendorff is not installed): "
        "pip install 'graphrag-eval[agreement]'"
    )


@pytest.mark.parametrize("separator", [";", "\t"], ids=["semicolons", "tabs"])
def test_a_labels_csv_with_another_separator_says_so(tmp_path: Path, separator: str) -> None:
    # A spreadsheet in a comma-decimal locale exports semicolons.
    path = tmp_path / "labels.csv"
    path.write_text(separator.join(["question_id", "metric", "value"]) + "\nq1;m;0,5\n")

    with pytest.raises(InputError) as raised:
        read_labels_file(path)

    assert f"columns separated by {separator!r}, not commas" in str(raised.value)


def test_a_labels_file_over_the_limit_is_named_as_a_labels_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(labels_module, "MAX_LABELS_BYTES", 64)
    path = tmp_path / "labels.csv"
    path.write_text("question_id,metric,value\n" + "q1,m,1\n" * 20)

    with pytest.raises(InputError) as raised:
        read_labels_file(path)

    assert "over the limit of" in str(raised.value) and "labels file" in str(raised.value)
    assert "YAML" not in str(raised.value)


@pytest.mark.parametrize("offset", [0, 1, (1 << 20) - 12, (1 << 20) - 6, (1 << 20) - 1, 1 << 20])
def test_the_labels_scan_finds_the_key_wherever_it_is_a_chunk_boundary_included(
    tmp_path: Path, offset: int
) -> None:
    """The reference is scanned in chunks of 1 MiB for ``human_labels`` (not mapped whole,
    which counted its pages in the run's peak memory): a key cut by a chunk's end is found."""
    reference = tmp_path / "reference.json"
    reference.write_bytes(b" " * offset + b'"human_labels"' + b" " * 100)
    assert may_have_labels(reference)
    reference.write_bytes(b" " * offset + b'"human_label"' + b" " * (1 << 20))
    assert not may_have_labels(reference)


def test_the_labels_scan_neither_hangs_on_a_fifo_nor_reads_a_device(tmp_path: Path) -> None:
    fifo = tmp_path / "reference.json"
    os.mkfifo(fifo)  # opening it to read would wait for a writer
    assert not may_have_labels(fifo)
    assert not may_have_labels(Path("/dev/zero"))
    assert not may_have_labels(tmp_path / "missing.json")
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    assert not may_have_labels(empty)
