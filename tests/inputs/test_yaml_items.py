"""A responses document that libyaml cannot read whole (an item nested past its 1,000 levels)
is composed item by item (src/graphrag_eval/yaml_items.py): libyaml reads every other item,
PyYAML's own parser only the deep one, and the result is what PyYAML's parser alone composes
from the whole text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from graphrag_eval.files.documents import BrokenLine, read_document
from graphrag_eval.files.yaml_items import _ItemComposer, compose_items

DEEP_FLOW = "[" * 1_100 + "]" * 1_100


def _values(root: yaml.Node | None, refused: dict[int, str]) -> Any:
    """Each item constructed, or ``("refused", message)``."""
    loader = yaml.SafeLoader("")

    def item(node: yaml.Node) -> Any:
        if id(node) in refused:
            return ("refused", refused[id(node)])
        return loader.construct_object(node, deep=True)

    assert isinstance(root, yaml.CollectionNode)
    if isinstance(root, yaml.SequenceNode):
        return [item(child) for child in root.value]
    return {loader.construct_object(key, deep=True): item(value) for key, value in root.value}


def _python_only(text: str) -> Any:
    """What composing the whole text with PyYAML's parser alone gives."""
    composer = _ItemComposer(100)
    composer.segment(yaml.SafeLoader(text))
    return _values(composer.root, composer.refused)


SEQUENCE = f"""\
# responses, one of them nested too deeply
- question_id: q0
  actual_answer: &shared |
    a block scalar
    - that is no item
- {{question_id: q1, x: {DEEP_FLOW}}}

-   # a comment where the item starts
  question_id: q2
  actual_answer: *shared
- {{question_id: q3, y: {DEEP_FLOW}, z: &late [1, 2]}}
- {{question_id: q4, actual_answer: multi
   line}}
- {{question_id: q5, n: *late}}
- {{question_id: q6, n: *nowhere}}
"""

MAPPING = f"""\
  q0: {{question_id: q0, actual_answer: &a a}}
  q1:
    question_id: q1
    x: {DEEP_FLOW}
  # between
  q2: {{question_id: q2, actual_answer: *a}}
"""

FLOW_ROOT = f"[{{question_id: q0}}, {{question_id: q1, x: {DEEP_FLOW}}}, {{question_id: q2}}]\n"


@pytest.mark.parametrize("text", [SEQUENCE, MAPPING, FLOW_ROOT], ids=["list", "map", "flow"])
def test_items_read_around_a_deep_one_are_what_the_python_parser_reads(text: str) -> None:
    with pytest.raises(yaml.YAMLError, match="exceeded maximum nesting depth"):
        yaml.load(text, Loader=yaml.CSafeLoader)
    assert _values(*compose_items(text, 100)) == _python_only(text)


def test_the_deep_items_are_refused_and_the_others_read() -> None:
    values = _values(*compose_items(SEQUENCE, 100))
    refused = [isinstance(value, tuple) for value in values]
    assert refused == [False, True, False, True, False, False, True]
    assert values[1] == ("refused", "nested more than 100 levels deep (in the field 'x')")
    assert values[2]["actual_answer"] == "a block scalar\n- that is no item\n"
    assert values[4]["actual_answer"] == "multi line"
    assert values[5] == {"question_id": "q5", "n": [1, 2]}  # an anchor after the deep part
    assert values[6] == (
        "refused",
        "line 15: the alias *nowhere refers to no anchor read before it",
    )


def test_a_deep_item_in_block_style_is_refused(tmp_path: Path) -> None:
    deep = "".join(" " * (2 * level) + "a:\n" for level in range(1, 1_010))
    path = tmp_path / "responses.yaml"
    path.write_text(
        "- {question_id: q0}\n- question_id: q1\n  x:\n"
        + "\n".join("  " + line for line in deep.splitlines())
        + " 1\n- {question_id: q2, actual_answer: !!python/object:os.system x}\n"
        + "- {question_id: q3}\n"
    )
    items = read_document(path, split_items=True)
    assert items[0] == {"question_id": "q0"}
    assert isinstance(items[1], BrokenLine)
    assert str(items[1]) == "nested more than 100 levels deep (in the field 'x')"
    assert items[1].question_id == "q1"
    assert isinstance(items[2], BrokenLine)  # its line counts the lines of the deep item
    assert str(items[2]).startswith(f"line {1_013}, column 36: cannot be read: could not")
    assert items[3] == {"question_id": "q3"}
