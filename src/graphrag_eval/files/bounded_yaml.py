"""YAML documents read within the limits of :mod:`graphrag_eval.files.bounded` (docs/security.md,
"YAML and JSON bombs").

A document is composed into its node graph first (cheap: an alias is one more reference to a
node already built) and measured before anything is constructed: its nesting depth with
aliases followed, and what its aliases add to its expanded size (the text of each scalar
counted each time an alias repeats it, and :data:`~graphrag_eval.files.bounded.NODE_BYTES` for each
node), which must stay under :func:`~graphrag_eval.files.bounded.expanded_size_limit`.

A responses document is read item by item (``split_items``): an item over a limit, one
whose construction fails (a ``!!python/object`` tag), or one nested deeper than libyaml
reads (1,000 levels, where libyaml stops the whole document: :mod:`graphrag_eval.files.yaml_items`
then composes it item by item) becomes a :class:`Refused`, and the others are read. The
alias budget is shared by the whole file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

from graphrag_eval.files.bounded import (
    EXPANDED_SIZE_ENV,
    MAX_DEPTH,
    MAX_DOCUMENT_DEPTH,
    NODE_BYTES,
    Refused,
    expanded_size_limit,
    format_size,
    too_deep,
)
from graphrag_eval.files.yaml_items import LIBYAML_TOO_DEEP, compose_items

__all__ = ["load_yaml_bounded"]

_CONSTRUCTION_ERRORS = (
    yaml.YAMLError,
    ValueError,
    TypeError,
    AttributeError,
    OverflowError,
    RecursionError,
)


def _children(node: yaml.Node) -> Iterator[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        yield from node.value
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield key
            yield value


def _own_size(node: yaml.Node) -> int:
    return NODE_BYTES + (len(node.value) if isinstance(node, yaml.ScalarNode) else 0)


@dataclass(slots=True)
class _Measure:
    """Expanded sizes (bytes) and depths of the nodes of one document, by node identity."""

    size: dict[int, int] = field(default_factory=dict)
    depth: dict[int, int] = field(default_factory=dict)

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
                self.size[key] = _own_size(node) + sum(self.size[id(kid)] for kid in kids)
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


@dataclass(slots=True)
class _Budget:
    """What aliases may still add to the document being read: ``seen`` holds the nodes
    already counted once (an alias to them adds their whole size again)."""

    limit: int
    left: int
    seen: set[int] = field(default_factory=set)

    def spend(self, measure: _Measure, node: yaml.Node) -> str | None:
        """Count what ``node``'s aliases add; the message when that is over what is left."""
        added = measure.size[id(node)] - self._new(node)
        if added <= self.left:
            self.left -= added
            return None
        left = "" if self.left == self.limit else f" ({format_size(self.left)} of it left)"
        return (
            f"YAML aliases would expand it by {format_size(added)}, over the limit of "
            f"{format_size(self.limit)} for the file{left} (a YAML bomb?); if the file is "
            f"sound, raise the limit with --max-expanded-size or ${EXPANDED_SIZE_ENV}, or "
            "write the file without aliases (docs/inputs.md)"
        )

    def _new(self, root: yaml.Node) -> int:
        """The size of the nodes of ``root`` not counted before, each once; now counted."""
        total = 0
        stack = [root]
        while stack:
            node = stack.pop()
            if id(node) in self.seen:
                continue
            self.seen.add(id(node))
            total += _own_size(node)
            stack.extend(_children(node))
        return total


def _problem(measure: _Measure, node: yaml.Node, depth_limit: int, budget: _Budget) -> str | None:
    """What limit ``node`` breaks, if any (what its aliases add is spent from ``budget``)."""
    try:
        _, depth = measure.of(node)
    except ValueError as exc:
        return str(exc)
    if depth > depth_limit:
        field = None
        if isinstance(node, yaml.MappingNode):
            field = next(
                (k.value for k, v in node.value if measure.depth[id(v)] >= depth_limit), None
            )
        return too_deep(depth_limit, field if isinstance(field, str) else None)
    return budget.spend(measure, node)


def _construct(loader: Any, node: yaml.Node) -> Any:
    """Construct ``node``, keeping the objects built so far (anchors shared between items)."""
    data = loader.construct_object(node)
    while loader.state_generators:
        generators, loader.state_generators = loader.state_generators, []
        for generator in generators:
            for _ in generator:
                pass
    return data


def _construct_item(loader: Any, node: yaml.Node) -> Any:
    """Construct one item; one that cannot be (an unknown tag) is refused, alone."""
    try:
        return _construct(loader, node)
    except _CONSTRUCTION_ERRORS as exc:
        loader.recursive_objects.clear()  # left by the construction that failed
        loader.state_generators = []
        mark = getattr(exc, "problem_mark", None) or node.start_mark
        problem = getattr(exc, "problem", None) or f"{type(exc).__name__}: {exc}"
        where = f"line {mark.line + 1}, column {mark.column + 1}: "
        return Refused(f"{where}cannot be read: {problem}", _question_id(node))


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


def _split(loader: Any, root: yaml.Node, budget: _Budget, refused: dict[int, str]) -> Any:
    """The top-level list or mapping of ``root``, each item that breaks a limit (or is in
    ``refused``, by node identity) replaced by a :class:`Refused`."""
    measure = _Measure()

    def item(node: yaml.Node) -> Any:
        problem = refused.get(id(node)) or _problem(measure, node, MAX_DEPTH, budget)
        if problem is not None:
            return Refused(problem, _question_id(node))
        return _construct_item(loader, node)

    if isinstance(root, yaml.SequenceNode):
        return [item(child) for child in root.value]
    loader.flatten_mapping(root)
    result: dict[Any, Any] = {}
    for key, value in root.value:
        key_problem = refused.get(id(key)) or _problem(measure, key, MAX_DEPTH, budget)
        if key_problem is not None:
            raise ValueError(f"a key: {key_problem}")
        result[_construct(loader, key)] = item(value)
    return result


def _compose(
    text: str, loader_class: type[Any], split_items: bool
) -> tuple[Any, Any, dict[int, str]]:
    """(loader, root node, refused items) of ``text``: libyaml composes it whole; a
    responses document it cannot read whole (an item nested past its 1,000 levels) is
    composed item by item (:mod:`graphrag_eval.files.yaml_items`)."""
    loader = loader_class(text)
    try:
        return loader, loader.get_single_node(), {}
    except (yaml.scanner.ScannerError, RecursionError) as exc:
        too_deep = isinstance(exc, RecursionError) or exc.problem == LIBYAML_TOO_DEEP
        if not (split_items and too_deep):
            loader.dispose()
            raise
    loader.dispose()
    root, refused = compose_items(text, MAX_DEPTH)
    return loader_class(""), root, refused


def load_yaml_bounded(
    text: str,
    loader_class: type[Any],
    *,
    split_items: bool = False,
    document_bytes: int | None = None,
) -> Any:
    """The YAML document ``text`` (``document_bytes`` long in its file), read with
    ``loader_class``. A document that breaks a limit is a ``ValueError``; with
    ``split_items``, only its top-level items that do are refused (each becomes a
    :class:`Refused`) and the others are read."""
    limit = expanded_size_limit(len(text) if document_bytes is None else document_bytes)
    budget = _Budget(limit, limit)
    loader, root, refused = _compose(text, loader_class, split_items)
    try:
        if root is None:
            return None
        if split_items and isinstance(root, yaml.SequenceNode | yaml.MappingNode):
            return _split(loader, root, budget, refused)
        problem = _problem(_Measure(), root, MAX_DOCUMENT_DEPTH, budget)
        if problem is not None:
            raise ValueError(problem)
        return _construct(loader, root)
    finally:
        loader.dispose()
