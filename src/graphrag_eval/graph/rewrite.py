"""New outputs written into a reference file's own text (docs/knowledge-graph.md, "Refreshing
references: drift").

Each new output replaces the text of the old one, or is added as a new ``output`` key of its
step; everything else of the file is left byte for byte as it was: comments, key order,
quoting, indentation, line breaks, the other outputs. The text is not dumped again from the
parsed data (no YAML or JSON writer keeps a hand-written file's layout): the places of the
outputs are found in the text (by PyYAML's composer for YAML, by a scan with the ``json``
module's decoder for JSON), and the rewritten text is parsed again and checked to hold
exactly the old data with the new outputs, else nothing is written.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = ["RewriteError", "StepKey", "rewrite_outputs"]

StepKey = tuple[int, int, int, int]
"""A reference step's place in the file: its template's, question's, group's and own index."""

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_WRAP_WIDTH = 80


class RewriteError(ValueError):
    """The outputs could not be written into the text without changing anything else."""


@dataclass(frozen=True, slots=True)
class _Slot:
    """Where a step's output is in the text, or where a new one goes."""

    start: int
    end: int
    """The end of the old value (exclusive); ``start`` where there is none (an insertion)."""
    present: bool
    style: str
    """YAML: the old scalar's style (``'``, ``"``, ``|``, ``>``, ``""`` for plain) or
    ``block``/``flow`` for a collection; JSON: ``json``."""
    column: int
    """YAML: the column of the step's keys."""
    inline: bool
    """The step is written on one line (a YAML flow mapping, a JSON object on one line)."""
    multiline: bool
    """The old value spans several lines."""
    lead: str = ""
    """JSON: what comes before the key on its line (its indentation, tabs or spaces)."""


def rewrite_outputs(text: str, is_json: bool, data: Any, outputs: Mapping[StepKey, Any]) -> str:
    """``text`` (the file ``data`` was parsed from) with the output of each step of
    ``outputs`` replaced by its new value (a string or a mapping). Raises
    :class:`RewriteError` when the text cannot be rewritten so that it parses as ``data``
    with only those outputs changed."""
    if not outputs:
        return text
    try:
        slots = _json_slots(text) if is_json else _yaml_slots(text)
    except (ValueError, yaml.YAMLError, IndexError, RecursionError) as exc:
        raise RewriteError(f"cannot find the steps' places in the text: {exc}") from None
    newline = "\r\n" if "\r\n" in text else "\n"
    render = _JsonRender(text) if is_json else None
    edits: dict[tuple[int, int], str] = {}
    for key, value in outputs.items():
        slot = slots.get(key)
        if slot is None:
            raise RewriteError(f"step {_describe(key)} not found in the text")
        rendered = render.render(value, slot) if render else _yaml_render(text, value, slot)
        if not slot.present:
            rendered = (render.insertion if render else _yaml_insertion)(text, rendered, slot)
        place = (slot.start, slot.end)
        if edits.get(place, rendered) != rendered:  # one node shared by two steps (an alias)
            raise RewriteError(f"step {_describe(key)} shares its output with another step")
        edits[place] = rendered.replace("\n", newline)
    rewritten = _apply(text, edits)
    _check(rewritten, is_json, data, outputs)
    return rewritten


def _describe(key: StepKey) -> str:
    template, question, group, step = key
    return f"templates[{template}].questions[{question}].reference_steps[{group}][{step}]"


def _apply(text: str, edits: Mapping[tuple[int, int], str]) -> str:
    parts: list[str] = []
    position = 0
    for (start, end), replacement in sorted(edits.items()):
        if start < position:
            raise RewriteError("two outputs overlap in the text")
        parts += [text[position:start], replacement]
        position = end
    parts.append(text[position:])
    return "".join(parts)


def _check(rewritten: str, is_json: bool, data: Any, outputs: Mapping[StepKey, Any]) -> None:
    """The rewritten text parses as ``data`` with exactly the new outputs."""
    expected = copy.deepcopy(data)
    for (t, q, g, s), value in outputs.items():
        expected[t]["questions"][q]["reference_steps"][g][s]["output"] = value
    try:
        parsed = json.loads(rewritten) if is_json else yaml.load(rewritten, Loader=_Loader)
    except (ValueError, yaml.YAMLError) as exc:
        raise RewriteError(f"the rewritten text does not parse: {exc}") from None
    if parsed != expected:
        raise RewriteError("the rewritten text would change more than the outputs")


# -- YAML -------------------------------------------------------------------------------------


def _member(node: yaml.Node | None, key: str) -> yaml.Node | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    found = None
    for key_node, value in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            found = value  # the last one, as the loader keeps
    return found


def _items(node: yaml.Node | None) -> list[yaml.Node]:
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _yaml_slots(text: str) -> dict[StepKey, _Slot]:
    root = yaml.compose(text, Loader=_Loader)
    slots: dict[StepKey, _Slot] = {}
    for t, template in enumerate(_items(root)):
        for q, question in enumerate(_items(_member(template, "questions"))):
            for g, group in enumerate(_items(_member(question, "reference_steps"))):
                for s, step in enumerate(_items(group)):
                    if isinstance(step, yaml.MappingNode) and step.value:
                        slots[(t, q, g, s)] = _yaml_slot(text, step)
    return slots


def _yaml_slot(text: str, step: yaml.MappingNode) -> _Slot:
    """The place of ``step``'s output."""
    column = step.value[0][0].start_mark.column
    inline = bool(step.flow_style)
    output = _member(step, "output")
    if output is None:
        end = _yaml_end(text, step.value[-1][1])
        return _Slot(end, end, False, "", column, inline, False)
    if isinstance(output, yaml.ScalarNode) and output.value == "" and not output.style:
        # ``output:`` with nothing after it (the node's mark is the next token's): the new
        # value goes right after the colon.
        key = next(key for key, value in reversed(step.value) if value is output)
        colon = text.index(":", key.end_mark.index) + 1
        return _Slot(colon, colon, True, "empty", column, inline, False)
    if isinstance(output, yaml.CollectionNode):
        style = "flow" if output.flow_style else "block"
    else:
        style = getattr(output, "style", None) or ""
    start = output.start_mark.index
    end = _yaml_end(text, output)
    return _Slot(start, end, True, style, column, inline, "\n" in text[start:end].rstrip("\n"))


def _yaml_end(text: str, node: yaml.Node) -> int:
    """Where ``node``'s own text ends: a block collection's end mark is the next token (past
    blank lines and comments), a block scalar's the line after its trailing blank lines."""
    if isinstance(node, yaml.MappingNode | yaml.SequenceNode) and not node.flow_style:
        last = node.value[-1][1] if isinstance(node, yaml.MappingNode) else node.value[-1]
        return _yaml_end(text, last)
    end: int = node.end_mark.index
    if isinstance(node, yaml.ScalarNode) and node.style in ("|", ">"):
        content = text[node.start_mark.index : end].rstrip(" \t\r\n")
        line_end = text.find("\n", node.start_mark.index + len(content))
        end = len(text) if line_end < 0 else line_end + 1
    return end


def _yaml_render(text: str, value: Any, slot: _Slot) -> str:
    """The new value in YAML, at the slot's place: a mapping as a JSON flow mapping, a string
    in its old style (a block scalar stays one, quotes stay quotes, wrapped as it was)."""
    indent = " " * (slot.column + 2)
    if not isinstance(value, str):
        rendered = json.dumps(value, ensure_ascii=False)
    elif slot.style in ("|", ">"):
        lines = "\n".join(indent + line if line else "" for line in value.split("\n"))
        rendered = "|-\n" + lines + "\n"
    else:
        rendered = _quoted(value, '"' if slot.style == '"' else "'", slot.multiline, indent)
    if slot.style == "empty":
        return " " + rendered
    if slot.present and slot.end > 0 and text[slot.end - 1] == "\n" and not rendered.endswith("\n"):
        rendered += "\n"
    return rendered


def _quoted(value: str, quote: str, wrapped: bool, indent: str) -> str:
    dumped = yaml.dump(
        value,
        Dumper=_Dumper,
        default_style=quote,
        allow_unicode=True,
        width=_WRAP_WIDTH - len(indent) if wrapped else 1 << 30,
    )
    lines = dumped.removesuffix("\n").removesuffix("\n...").split("\n")
    return "\n".join([lines[0], *(indent + line.lstrip(" ") if line else "" for line in lines[1:])])


def _yaml_insertion(text: str, rendered: str, slot: _Slot) -> str:
    if slot.inline:
        return f", output: {rendered}"
    entry = f"{' ' * slot.column}output: {rendered.removesuffix(chr(10))}"
    at_line_start = slot.start == 0 or text[slot.start - 1] == "\n"
    return entry + "\n" if at_line_start else "\n" + entry


# -- JSON -------------------------------------------------------------------------------------


class _JsonScan:
    """The members and items of JSON containers, with where each value starts and ends."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.decode = json.JSONDecoder().raw_decode

    def skip(self, position: int) -> int:
        match = _WHITESPACE.match(self.text, position)
        return match.end() if match else position

    def _value_end(self, position: int) -> int:
        _, end = self.decode(self.text, position)
        return int(end)

    def members(self, position: int) -> Iterator[tuple[str, int, int, int]]:
        """Each member of the object at ``position``: its key, where the key starts, where
        its value starts and ends."""
        if self.text[position] != "{":
            return
        position = self.skip(position + 1)
        while self.text[position] == '"':
            key, after = self.decode(self.text, position)
            start = self.skip(self.skip(after) + 1)  # past the colon
            end = self._value_end(start)
            yield key, position, start, end
            position = self.skip(end)
            if self.text[position] == ",":
                position = self.skip(position + 1)

    def items(self, position: int | None) -> Iterator[int]:
        """Where each item of the array at ``position`` starts."""
        if position is None or self.text[position] != "[":
            return
        position = self.skip(position + 1)
        while self.text[position] != "]":
            yield position
            position = self.skip(self._value_end(position))
            if self.text[position] == ",":
                position = self.skip(position + 1)

    def member(self, position: int, key: str) -> int | None:
        found = None
        for name, _, start, _ in self.members(position):
            if name == key:
                found = start
        return found


def _json_slots(text: str) -> dict[StepKey, _Slot]:
    scan = _JsonScan(text)
    slots: dict[StepKey, _Slot] = {}
    root = scan.skip(0)
    for t, template in enumerate(scan.items(root)):
        for q, question in enumerate(scan.items(scan.member(template, "questions"))):
            for g, group in enumerate(scan.items(scan.member(question, "reference_steps"))):
                for s, step in enumerate(scan.items(group)):
                    members = list(scan.members(step))
                    if members:
                        slots[(t, q, g, s)] = _json_slot(text, step, members)
    return slots


def _json_slot(text: str, step: int, members: list[tuple[str, int, int, int]]) -> _Slot:
    inline = "\n" not in text[step : members[-1][3]]
    output = [member for member in members if member[0] == "output"]
    if output:
        _, key_start, start, end = output[-1]
        lead = text[text.rfind("\n", 0, key_start) + 1 : key_start]
        return _Slot(start, end, True, "json", 0, inline, "\n" in text[start:end], lead)
    _, key_start, _, end = members[-1]
    lead = text[text.rfind("\n", 0, key_start) + 1 : key_start]
    return _Slot(end, end, False, "json", 0, inline, False, lead)


class _JsonRender:
    """New values written as the file writes its JSON: its indentation, its separators,
    non-ASCII characters as they are or escaped."""

    def __init__(self, text: str) -> None:
        indented = re.search(r"\n([ \t]+)\S", text)
        self.indent = indented.group(1) if indented else None
        self.separators = (", ", ": ") if re.search(r'":\s', text) else (",", ":")
        self.ascii = text.isascii()

    def render(self, value: Any, slot: _Slot) -> str:
        if isinstance(value, str) or self.indent is None:
            return json.dumps(value, ensure_ascii=self.ascii, separators=self.separators)
        dumped = json.dumps(value, ensure_ascii=self.ascii, indent=self.indent)
        return dumped.replace("\n", "\n" + slot.lead)

    def insertion(self, text: str, rendered: str, slot: _Slot) -> str:
        if slot.inline:
            return f'{self.separators[0]}"output"{self.separators[1]}{rendered}'
        return f',\n{slot.lead}"output"{self.separators[1]}{rendered}'
