"""Limits on the documents graphrag-eval reads, so that a hostile or broken input file costs
an error, never the machine (docs/security.md, "YAML and JSON bombs").

A YAML document is composed into its node graph first (cheap: an alias is one more reference
to a node already built) and measured before anything is constructed: the nodes that alias
expansion adds, and the nesting depth with aliases followed, must stay under
:data:`MAX_ALIAS_NODES` and :data:`MAX_DEPTH`. A parsed JSON value is measured for depth.
The whole file must be under :data:`MAX_DOCUMENT_BYTES`.

The limits are generous for real datasets (an alias shared by a few templates, SPARQL results
a few levels deep) and stop the classic "billion laughs" (ten levels of nine aliases each)
before it takes memory or time.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "MAX_DOCUMENT_BYTES",
    "MAX_DOCUMENT_DEPTH",
    "MAX_LINE_BYTES",
    "Refused",
    "check_json_depth",
    "document_too_large",
    "json_depth",
    "load_yaml_bounded",
]

MAX_DOCUMENT_BYTES = 256 * 1024 * 1024
"""The largest YAML or JSON document read whole (JSON Lines are read line by line)."""
MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest JSON Lines line read (without its line end): a longer line is that line's
error, read no further than its first bytes, and the lines after it are read."""
MAX_DEPTH = 100
"""The deepest nesting of lists and mappings in one response (an item of a responses file,
or one JSON Lines record)."""
MAX_DOCUMENT_DEPTH = 200
"""The deepest nesting in a whole document (a config, a reference, saved results)."""
MAX_ALIAS_NODES = 100_000
"""How many nodes YAML aliases may add to a document (or to one item of a responses file)."""


@dataclass(frozen=True, slots=True)
class Refused:
    """An item of a document that was not read because it breaks a limit: ``message`` says
    which; ``question_id`` is the item's ``question_id`` when it still shows one."""

    message: str
    question_id: str | None = None


def document_too_large(size_bytes: int) -> str | None:
    """The message for a document of ``size_bytes``, or ``None`` when it is within the limit."""
    if size_bytes <= MAX_DOCUMENT_BYTES:
        return None
    return (
        f"the file is {size_bytes / 2**20:,.0f} MiB, over the limit of "
        f"{MAX_DOCUMENT_BYTES // 2**20} MiB for a YAML or JSON document"
    )


def json_depth(value: Any, stop_after: int = MAX_DOCUMENT_DEPTH) -> int:
    """The nesting depth of lists and mappings in ``value`` (a scalar is 0), without
    recursion; counting stops once it is over ``stop_after``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, Mapping):
            children: Any = current.values()
        elif isinstance(current, list | tuple):
            children = current
        else:
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if deepest > stop_after:
                break
        stack.extend((child, depth) for child in children)
    return deepest


def check_json_depth(value: Any, limit: int = MAX_DOCUMENT_DEPTH) -> str | None:
    """The message for a value nested deeper than ``limit``, else ``None``."""
    if json_depth(value, limit) > limit:
        return f"nested more than {limit} levels deep"
    return None


def _children(node: yaml.Node) -> Iterator[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        yield from node.value
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield key
            yield value


@dataclass(slots=True)
class _Measure:
    """Expanded sizes and depths of the nodes of one document, by node identity."""

    size: dict[int, int]
    depth: dict[int, int]

    def of(self, root: yaml.Node) -> tuple[int, int]:
        """(expanded size, depth) of ``root``; a ``ValueError`` for a recursive alias."""
        on_path: set[int] = set()
        stack: list[tuple[yaml.Node, bool]] = [(root, False)]
        while stack:
            node, finished = stack.pop()
            key = id(node)
            if finished:
                on_path.discard(key)
                kids = list(_children(node))
                self.size[key] = 1 + sum(self.size[id(kid)] for kid in kids)
                nested = isinstance(node, yaml.SequenceNode | yaml.MappingNode)
                self.depth[key] = nested + max((self.depth[id(kid)] for kid in kids), default=0)
                continue
            if key in self.size:
                continue
            if key in on_path:
                raise ValueError("a YAML alias refers to a node that contains it")
            on_path.add(key)
            stack.append((node, True))
            stack.extend((kid, False) for kid in _children(node) if id(kid) not in self.size)
        return self.size[id(root)], self.depth[id(root)]


def _distinct(root: yaml.Node) -> int:
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(_children(node))
    return len(seen)


def _problem(
    measure: _Measure, node: yaml.Node, depth_limit: int, alias_budget: int = MAX_ALIAS_NODES
) -> str | None:
    """What limit ``node`` breaks, if any; ``alias_budget`` is how many nodes its aliases may
    still add."""
    try:
        size, depth = measure.of(node)
    except ValueError as exc:
        return str(exc)
    if depth > depth_limit:
        return f"nested more than {depth_limit} levels deep (aliases followed)"
    added = size - _distinct(node)
    if added > alias_budget:
        return (
            f"YAML aliases would expand it by {added:,} nodes, over the limit of "
            f"{MAX_ALIAS_NODES:,} for the file (a YAML bomb?)"
        )
    return None


def _alias_cost(measure: _Measure, node: yaml.Node) -> int:
    return measure.size[id(node)] - _distinct(node)


def _construct(loader: Any, node: yaml.Node) -> Any:
    """Construct ``node``, keeping the objects built so far (anchors shared between items)."""
    data = loader.construct_object(node)
    while loader.state_generators:
        generators, loader.state_generators = loader.state_generators, []
        for generator in generators:
            for _ in generator:
                pass
    return data


def _question_id(node: yaml.Node) -> str | None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if (
                isinstance(key, yaml.ScalarNode)
                and key.value == "question_id"
                and isinstance(value, yaml.ScalarNode)
            ):
                return str(value.value)
    return None


def _split(loader: Any, root: yaml.Node, measure: _Measure) -> Any:
    """The top-level list or mapping of ``root``, each item that breaks a limit replaced by
    a :class:`Refused`."""

    budget = MAX_ALIAS_NODES  # for the whole file: each item spends what its aliases add

    def item(node: yaml.Node) -> Any:
        nonlocal budget
        problem = _problem(measure, node, MAX_DEPTH, budget)
        if problem is not None:
            return Refused(problem, _question_id(node))
        budget -= _alias_cost(measure, node)
        return _construct(loader, node)

    if isinstance(root, yaml.SequenceNode):
        return [item(child) for child in root.value]
    loader.flatten_mapping(root)
    result: dict[Any, Any] = {}
    for key, value in root.value:
        key_problem = _problem(measure, key, MAX_DEPTH)
        if key_problem is not None:
            raise ValueError(f"a key: {key_problem}")
        result[_construct(loader, key)] = item(value)
    return result


def load_yaml_bounded(text: str, loader_class: type[Any], *, split_items: bool = False) -> Any:
    """The YAML document ``text``, read with ``loader_class``. A document that breaks a limit
    is a ``ValueError``; with ``split_items``, only its top-level items that do are refused
    (each becomes a :class:`Refused`) and the others are read."""
    loader = loader_class(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        measure = _Measure({}, {})
        if split_items and isinstance(root, yaml.SequenceNode | yaml.MappingNode):
            return _split(loader, root, measure)
        problem = _problem(measure, root, MAX_DOCUMENT_DEPTH)
        if problem is not None:
            raise ValueError(problem)
        return _construct(loader, root)
    finally:
        loader.dispose()
