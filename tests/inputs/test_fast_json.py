"""JSON inputs are decoded by msgspec from the file's bytes (files/fast_json.py); what it
refuses goes to the json module, so every document reads as ``json.loads`` reads it and
every problem keeps its message. Saved records read back one at a time
(results/records_file.py) are what ``json.loads`` gives too."""

from __future__ import annotations

import codecs
import json
from array import array
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import pytest

from graphrag_eval.files.bounded import json_depth
from graphrag_eval.files.documents import iter_jsonl, read_document
from graphrag_eval.files.jsonl import BrokenLine
from graphrag_eval.results.records_file import RecordsFile

DOCUMENTS = {
    "plain": '[{"a": 1, "b": [1.5, -0.0, "é", null, true]}]',
    "nan": '[{"a": NaN, "b": Infinity}]',
    "huge_number": '[{"a": 1e400, "b": 123456789012345678901234567890}]',
    "lone_surrogate": '[{"a": "\\ud800 x"}]',
    "duplicate_key": '{"q1": {"a": 1, "a": 2}}',
}


@pytest.mark.parametrize("text", DOCUMENTS.values(), ids=list(DOCUMENTS))
@pytest.mark.parametrize("split_items", [False, True])
def test_a_json_document_reads_as_json_loads_reads_it(
    tmp_path: Path, text: str, split_items: bool
) -> None:
    path = tmp_path / "doc.json"
    path.write_text(text, encoding="utf-8")
    assert repr(read_document(path, split_items=split_items)) == repr(json.loads(text))
    path.write_bytes(codecs.BOM_UTF8 + text.encode())
    assert repr(read_document(path, split_items=split_items)) == repr(json.loads(text))


def test_json_lines_read_as_json_loads_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(DOCUMENTS.values()) + "\n", encoding="utf-8")
    values = [value for _, value in iter_jsonl(path)]
    assert repr(values) == repr([json.loads(text) for text in DOCUMENTS.values()])


def test_a_document_nested_too_deeply_keeps_its_message(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 300 + "]" * 300)
    with pytest.raises(ValueError) as caught:
        read_document(path)
    assert "nested" in str(caught.value)


def test_saved_records_read_one_at_a_time(tmp_path: Path) -> None:
    records = [json.loads(text) for text in DOCUMENTS.values()]
    records = [{"question_id": f"q{i}", "value": value} for i, value in enumerate(records)]
    path = tmp_path / "results.jsonl"
    offsets = array("q")
    with path.open("wb") as stream:
        for record in records:
            offsets.append(stream.tell())
            stream.write(
                (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")
            )
        end = stream.tell()
    saved = RecordsFile(path, offsets, end)
    assert len(saved) == len(records)
    assert repr(list(saved)) == repr(records)
    assert repr(saved[3]) == repr(records[3])
    assert repr(saved[-1]) == repr(records[-1])
    assert repr(saved[1:3]) == repr(records[1:3])


def test_a_line_is_refused_for_its_depth_only_when_its_values_nest_that_deep(
    tmp_path: Path,
) -> None:
    """Brackets inside strings do not count (a line is only walked for its depth when it has
    more brackets than the limit); lists and objects nested past it do."""
    path = tmp_path / "lines.jsonl"
    shallow = {"a": "[{" * 20, "b": [[1]]}  # 43 brackets, 3 levels
    deep: object = 1
    for _ in range(6):
        deep = [deep]
    path.write_text(json.dumps(shallow) + "\n" + json.dumps({"deep": deep}) + "\n")
    values = dict(iter_jsonl(path, max_depth=5))
    assert values[1] == shallow
    assert isinstance(values[2], BrokenLine)
    assert str(values[2]) == "JSON nested more than 5 levels deep (in the field 'deep')"


def _depth(value: object) -> int:
    """The nesting depth of lists, tuples and mappings, recursively (what json_depth counts)."""
    if isinstance(value, Mapping):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list | tuple):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


@pytest.mark.parametrize(
    "value",
    [
        "text",
        [],
        {},
        [1, "a", None, [2.5, {"k": [True]}], {}],
        {"a": ({"b": [()]},), "c": MappingProxyType({"d": [[["x"]]]})},
        [MappingProxyType({"e": (1, [2])}), ("t", {"u": []})],
    ],
)
def test_json_depth_counts_every_kind_of_container(value: object) -> None:
    # Plain dicts and lists are told apart by type, other mappings and tuples by isinstance.
    assert json_depth(value) == _depth(value)
    assert json_depth(value, stop_after=1) == min(_depth(value), 2)
