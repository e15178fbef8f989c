"""Fresh outputs written into a reference file's own text: only the outputs change, whatever
the layout (docs/knowledge-graph.md, "Refreshing references: drift")."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest
import yaml

from graphrag_eval.graph.rewrite import RewriteError, rewrite_outputs

NEW = json.dumps(
    {
        "head": {"vars": ["t", "name"]},
        "results": {
            "bindings": [
                {
                    "t": {"type": "uri", "value": "http://example.com/t1"},
                    "name": {"type": "literal", "value": "OSLO    T1, it's"},
                }
            ]
        },
    }
)

YAML_TEXT = """\
# The reference of the demo graph: kept by hand.
- template_id: transformers   # one template
  questions:
  - id: q1
    question_text: "List the transformers"
    reference_steps:
    - - name: retrieval
        args: {query: transformers, k: 2}
        output: '[]'
      - name: sparql_query
        args:
          query: |2

            SELECT ?t ?name WHERE { ?t <http://example.com/name> ?name }
        output: '{"head": {"vars": ["t", "name"]}, "results":
          {"bindings": []}}'   # stale
        output_media_type: application/sparql-results+json
        required_columns:
          - t
  - id: q2
    question_text: List nothing
    reference_steps:
    - - {name: sparql_query, args: {query: "SELECT * {}"}}
  - id: q3
    question_text: Block output
    reference_steps:
    -   - name: sparql_query
          args: {query: "SELECT * {}"}
          output: |-
            {"head": {"vars": []},
             "results": {"bindings": []}}

          ordered: true
  - id: q4
    question_text: No output yet
    reference_steps:
    - - name: sparql_query
        args:
          query: SELECT * {}
"""


def _output_lines(text: str) -> set[int]:
    """The lines of every step's output value (0-based), found by PyYAML's own marks, and
    the lines of a step written as a flow mapping (where an added output goes)."""
    lines: set[int] = set()
    for template in yaml.compose(text).value:
        questions = {k.value: v for k, v in template.value}["questions"]
        for question in questions.value:
            steps = {k.value: v for k, v in question.value}.get("reference_steps")
            for group in steps.value if steps else ():
                for step in group.value:
                    if step.flow_style:
                        lines.update(range(step.start_mark.line, step.end_mark.line + 1))
                    for key, value in step.value:
                        if key.value == "output":
                            last = value.end_mark.line - (value.end_mark.column == 0)
                            lines.update(range(key.start_mark.line, last + 1))
    return lines


def _assert_only_outputs_differ(before: str, after: str) -> None:
    old_lines, new_lines = before.splitlines(), after.splitlines()
    in_old, in_new = _output_lines(before), _output_lines(after)
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        assert set(range(a1, a2)) <= in_old, old_lines[a1:a2]
        assert set(range(b1, b2)) <= in_new, new_lines[b1:b2]


def test_yaml_outputs_replaced_and_added_without_touching_the_rest() -> None:
    data = yaml.safe_load(YAML_TEXT)
    outputs = {(0, 0, 0, 1): NEW, (0, 1, 0, 0): NEW, (0, 2, 0, 0): NEW, (0, 3, 0, 0): NEW}

    text = rewrite_outputs(YAML_TEXT, False, data, outputs)

    parsed = yaml.safe_load(text)
    steps = [question["reference_steps"][0] for question in parsed[0]["questions"]]
    assert [steps[0][1]["output"], steps[1][0]["output"], steps[2][0]["output"]] == [NEW] * 3
    assert steps[3][0]["output"] == NEW
    assert steps[0][0]["output"] == "[]"  # not asked: untouched
    assert "# The reference of the demo graph: kept by hand." in text
    assert "- template_id: transformers   # one template" in text
    assert '    question_text: "List the transformers"' in text
    assert "        required_columns:\n          - t\n" in text
    assert "          ordered: true\n" in text
    _assert_only_outputs_differ(YAML_TEXT, text)


def test_a_wrapped_quoted_output_stays_wrapped_and_quoted() -> None:
    data = yaml.safe_load(YAML_TEXT)
    text = rewrite_outputs(YAML_TEXT, False, data, {(0, 0, 0, 1): NEW * 3})

    line = next(line for line in text.splitlines() if "output: '{" in line)
    assert len(line) <= 100
    assert yaml.safe_load(text)[0]["questions"][0]["reference_steps"][0][1]["output"] == NEW * 3


def test_a_block_output_stays_a_block_scalar() -> None:
    data = yaml.safe_load(YAML_TEXT)
    pretty = json.dumps(json.loads(NEW), indent=2)

    text = rewrite_outputs(YAML_TEXT, False, data, {(0, 2, 0, 0): pretty})

    assert "          output: |-\n            {\n" in text
    assert yaml.safe_load(text)[0]["questions"][2]["reference_steps"][0][0]["output"] == pretty
    _assert_only_outputs_differ(YAML_TEXT, text)


def test_a_mapping_output_is_written_as_a_mapping() -> None:
    source = YAML_TEXT.replace(
        "        output: '[]'\n", "        output:\n          head: {vars: []}\n"
    )
    data = yaml.safe_load(source)
    new = json.loads(NEW)

    text = rewrite_outputs(source, False, data, {(0, 0, 0, 0): new})

    assert yaml.safe_load(text)[0]["questions"][0]["reference_steps"][0][0]["output"] == new


def test_windows_line_endings_are_kept() -> None:
    source = YAML_TEXT.replace("\n", "\r\n")
    data = yaml.safe_load(source)

    text = rewrite_outputs(source, False, data, {(0, 3, 0, 0): NEW, (0, 0, 0, 1): NEW})

    assert "\n" not in text.replace("\r\n", "")
    assert yaml.safe_load(text)[0]["questions"][3]["reference_steps"][0][0]["output"] == NEW


JSON_DATA = [
    {
        "template_id": "t",
        "questions": [
            {
                "id": "q1",
                "question_text": "Où?",
                "reference_steps": [
                    [
                        {"name": "sparql_query", "args": {"query": "SELECT * {}"}, "output": "x"},
                        {"name": "sparql_query", "args": {"query": "SELECT * {}"}},
                    ]
                ],
            }
        ],
    }
]


@pytest.mark.parametrize("indent", [None, 2, 4, "\t"])
def test_json_keeps_its_indentation_and_characters(indent: int | str | None) -> None:
    source = json.dumps(JSON_DATA, indent=indent, ensure_ascii=False)
    outputs = {(0, 0, 0, 0): NEW, (0, 0, 0, 1): {"head": {}, "boolean": True}}

    text = rewrite_outputs(source, True, JSON_DATA, outputs)

    parsed = json.loads(text)
    steps = parsed[0]["questions"][0]["reference_steps"][0]
    assert steps[0]["output"] == NEW
    assert steps[1]["output"] == {"head": {}, "boolean": True}
    assert '"Où?"' in text
    expected = json.loads(json.dumps(JSON_DATA))
    expected[0]["questions"][0]["reference_steps"][0][0]["output"] = NEW
    expected[0]["questions"][0]["reference_steps"][0][1]["output"] = {"head": {}, "boolean": True}
    assert text == json.dumps(expected, indent=indent, ensure_ascii=False)


def test_a_text_that_does_not_hold_the_data_is_refused() -> None:
    """The check after rewriting: nothing is written that differs elsewhere."""
    data = yaml.safe_load(YAML_TEXT)
    data[0]["questions"][0]["question_text"] = "something else"

    with pytest.raises(RewriteError, match="more than the outputs"):
        rewrite_outputs(YAML_TEXT, False, data, {(0, 0, 0, 1): NEW})


def test_an_unknown_step_is_refused(tmp_path: Path) -> None:
    data = yaml.safe_load(YAML_TEXT)

    with pytest.raises(RewriteError, match="not found"):
        rewrite_outputs(YAML_TEXT, False, data, {(0, 9, 0, 0): NEW})


def test_the_bundled_example_changes_only_in_its_outputs() -> None:
    """examples/reference.yaml mixes indentations, block and wrapped quoted scalars."""
    source = (Path(__file__).parents[2] / "examples" / "reference.yaml").read_text()
    data = yaml.safe_load(source)
    outputs = {
        (t, q, g, s): NEW
        for t, template in enumerate(data)
        for q, question in enumerate(template["questions"])
        for g, group in enumerate(question.get("reference_steps") or ())
        for s, step in enumerate(group)
        if step["name"] == "sparql_query"
    }

    text = rewrite_outputs(source, False, data, outputs)

    assert len(outputs) == 5
    _assert_only_outputs_differ(source, text)
    assert text.count(NEW.replace("'", "''")[:20]) == 5


@pytest.mark.parametrize("empty", ["output:", "output: null", "output: ~", "output:   # later"])
def test_an_empty_output_is_filled_in_place(empty: str) -> None:
    source = (
        "- template_id: t\n  questions:\n  - id: q\n    question_text: Q\n"
        "    reference_steps:\n    - - name: sparql_query\n        args: {query: x}\n"
        f"        {empty}\n        required_columns: [a]\n"
    )

    text = rewrite_outputs(source, False, yaml.safe_load(source), {(0, 0, 0, 0): NEW})

    assert yaml.safe_load(text)[0]["questions"][0]["reference_steps"][0][0]["output"] == NEW
    assert text.endswith("        required_columns: [a]\n")
    assert ("# later" in text) is ("# later" in empty)
