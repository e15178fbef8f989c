"""Composing a responses document item by item when libyaml cannot read it whole
(docs/security.md, "YAML and JSON bombs").

libyaml stops at 1,000 levels of nesting, and the whole document with it. One response
nested that deep must cost that response only, so the document is composed again from
parser events, without recursion, and what lies deeper than the limit in an item (a child of
the top-level list or mapping) is skipped and that item refused. Events come from libyaml
where it can go: when it stops inside an item of a top-level block collection, that item
alone is read with PyYAML's own parser (pure Python, many times slower), and libyaml goes on
from the next item's line. A document it cannot go through this way (a flow collection at the
top, ``%TAG`` directives) is read whole with PyYAML's parser.
"""

from __future__ import annotations

from typing import Any

import yaml

from graphrag_eval.files.bounded import too_deep

__all__ = ["LIBYAML_TOO_DEEP", "compose_items"]

LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"
"""The problem libyaml reports past 1,000 levels."""

_CLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _too_deep(exc: BaseException) -> bool:
    return isinstance(exc, yaml.scanner.ScannerError) and exc.problem == LIBYAML_TOO_DEEP


class _ItemComposer:
    """Builds the node graph of one document from the events of one or more parsers, each
    reading the text from an offset (the start of an item's line), into one root."""

    def __init__(self, depth_limit: int) -> None:
        self.depth_limit = depth_limit
        self.anchors: dict[str, yaml.Node] = {}
        self.refused: dict[int, str] = {}
        """Items refused while composing (too deep, an alias to no anchor), by identity."""
        self.open: list[list[Any]] = []  # [collection node, key waiting for its value]
        self.root: yaml.Node | None = None
        self.item_end = 0
        """Where (in the whole text) the last complete item of the root ends."""
        self.loader: Any = None  # the current parser (its event interface is untyped)
        self.offset = 0
        self.lines = 0  # the lines of the text before ``offset``

    def segment(
        self, loader: Any, offset: int = 0, lines: int = 0, *, one_item: bool = False
    ) -> int | None:
        """Compose the events of ``loader``, which reads the text from ``offset`` (after
        ``lines`` lines): to the end of the document, or (``one_item``) to the end of the
        root's next item, whose end is returned."""
        self.loader, self.offset, self.lines = loader, offset, lines
        loader.get_event()  # the stream's start
        if loader.check_event(yaml.StreamEndEvent):
            if self.open:  # nothing after the last item: the root ends
                self.open.pop()
            return None
        loader.get_event()  # the document's start
        if self.root is not None:  # a continuation: its top-level collection is the root
            self._continue_root(loader.get_event())
        count = self._complete_items()
        while self.root is None or self.open:
            event = loader.get_event()
            node = self._next(event)
            if self.root is None:
                self.root = node
                self.item_end = event.start_mark.index + offset
            elif len(self.open) == 1 and self._complete_items() > count:
                self.item_end = event.end_mark.index + offset
                count += 1
                if one_item:
                    return self.item_end
        end: Any = loader.get_event()  # the document's end
        if not loader.check_event(yaml.StreamEndEvent):
            raise yaml.composer.ComposerError(
                "expected a single document in the stream",
                None,
                "but found another document",
                end.end_mark,
            )
        return None

    def _continue_root(self, start: Any) -> None:
        kind: Any = yaml.SequenceStartEvent
        if isinstance(self.root, yaml.MappingNode):
            kind = yaml.MappingStartEvent
        if not isinstance(start, kind) or not self.open:
            raise yaml.composer.ComposerError(
                None, None, "the document does not go on as it started", start.start_mark
            )

    def _complete_items(self) -> int:
        """How many items of the root are complete (a mapping's: pairs with their value)."""
        if not isinstance(self.root, yaml.CollectionNode):
            return 0
        return len(self.root.value)

    def rewind(self) -> int | None:
        """Drop the item being read (libyaml stopped in it, or before its first event), so
        that it can be read again from the start of its line: the end of the last complete
        item, from where that line is found, is returned; ``None`` when the document cannot
        be read so (its top-level node is not a block collection)."""
        root = self.root
        if not isinstance(root, yaml.CollectionNode) or root.flow_style or not self.open:
            return None
        dropped: list[Any] = [entry[0] for entry in self.open[1:2]]
        if isinstance(root, yaml.MappingNode) and self.open[0][1] is not None:
            dropped.append(self.open[0][1])
            self.open[0][1] = None  # the key of the item: read again
        elif len(self.open) > 1:  # libyaml stopped inside the item (else before its start)
            last = root.value.pop()
            dropped += list(last) if isinstance(last, tuple) else [last]
        for node in dropped:
            self.refused.pop(id(node), None)
        del self.open[1:]
        return self.item_end

    def _next(self, event: Any) -> yaml.Node | None:
        """The node ``event`` starts or is (attached to its parent), or ``None``."""
        if isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
            self.open.pop()[0].end_mark = event.end_mark
            return None
        if isinstance(event, yaml.AliasEvent):
            return self._attach(self._alias(event))
        tag, start, end = event.tag, self._mark(event.start_mark), self._mark(event.end_mark)
        if isinstance(event, yaml.ScalarEvent):
            if tag is None or tag == "!":
                tag = self.loader.resolve(yaml.ScalarNode, event.value, event.implicit)
            node: yaml.Node = yaml.ScalarNode(tag, event.value, start, end, style=event.style)
        else:
            if len(self.open) > self.depth_limit:
                self._skip()
                return None
            kind: Any = yaml.MappingNode
            if isinstance(event, yaml.SequenceStartEvent):
                kind = yaml.SequenceNode
            if tag is None or tag == "!":
                tag = self.loader.resolve(kind, None, event.implicit)
            node = kind(tag, [], start, None, flow_style=event.flow_style)
        if event.anchor is not None:
            self.anchors[event.anchor] = node
        self._attach(node)
        if isinstance(node, yaml.CollectionNode):
            self.open.append([node, None])
        return node

    def _mark(self, mark: Any) -> Any:
        """``mark`` in the whole text (a parser reading from an offset counts from it)."""
        if not self.offset:
            return mark
        return yaml.error.Mark(
            mark.name, mark.index + self.offset, mark.line + self.lines, mark.column, None, 0
        )

    def _attach(self, node: yaml.Node) -> yaml.Node:
        if self.open:
            parent = self.open[-1]
            if isinstance(parent[0], yaml.SequenceNode):
                parent[0].value.append(node)
            elif parent[1] is None:
                parent[1] = node
            else:
                parent[0].value.append((parent[1], node))
                parent[1] = None
        return node

    def _alias(self, event: Any) -> yaml.Node:
        node = self.anchors.get(str(event.anchor))
        if node is not None:
            return node
        if not self.open:
            raise yaml.composer.ComposerError(
                None, None, f"found undefined alias {event.anchor!r}", event.start_mark
            )
        start = self._mark(event.start_mark)
        node = yaml.ScalarNode("tag:yaml.org,2002:null", "", start, start)
        item = self.open[1][0] if len(self.open) > 1 else node
        self.refused.setdefault(
            id(item),
            f"line {start.line + 1}: the alias *{event.anchor} refers to no anchor read before it",
        )
        return node

    def _skip(self) -> None:
        """Skip the collection just started, refusing its item as too deep (the limit is at
        least 1, so the item is open)."""
        item, field = self.open[1][0], None
        if isinstance(item, yaml.MappingNode) and len(self.open) > 2 and item.value:
            key, value = item.value[-1]
            if value is self.open[2][0] and isinstance(key, yaml.ScalarNode):
                field = key.value
        self.refused[id(item)] = too_deep(self.depth_limit, field)
        depth = 1
        while depth:
            event = self.loader.get_event()
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1


def _line_after(text: str, pos: int) -> int:
    """The start of the first line at or after ``pos`` that holds more than blanks and a
    comment, with nothing of an earlier item on it (``pos`` itself only when its line is
    blank before it)."""
    start = text.rfind("\n", 0, pos) + 1
    if text[start:pos].strip():
        start = text.find("\n", pos) + 1 or len(text)
    while start < len(text):
        stop = text.find("\n", start)
        stop = len(text) if stop < 0 else stop
        line = text[start:stop].strip()
        if line and not line.startswith("#"):
            return start
        start = stop + 1
    return len(text)


def _compose_resuming(text: str, depth_limit: int) -> _ItemComposer | None:
    """The document composed with libyaml, each item it cannot read read with PyYAML's
    parser; ``None`` when the document cannot be read so."""
    composer = _ItemComposer(depth_limit)
    offset = lines = 0
    while True:
        loader = _CLoader(text[offset:])
        try:
            composer.segment(loader, offset, lines)
            return composer
        except yaml.YAMLError as exc:
            if not _too_deep(exc):
                return None
        finally:
            loader.dispose()
        item_end = composer.rewind()
        if item_end is None:
            return None
        start = _line_after(text, item_end)
        if start < offset:  # never back before where this pass started
            return None
        lines += text.count("\n", offset, start)
        slow = yaml.SafeLoader(text[start:])
        try:
            item_end = composer.segment(slow, start, lines, one_item=True) or len(text)
        except yaml.YAMLError:
            return None
        finally:
            slow.dispose()
        after = _line_after(text, item_end)
        if after <= start:  # no progress: never loop
            return None
        lines += text.count("\n", start, after)
        offset = after


def compose_items(text: str, depth_limit: int) -> tuple[yaml.Node | None, dict[int, str]]:
    """The root node of the YAML document ``text``, composed item by item (see the module's
    docstring), and the items refused, by node identity: those nested deeper than
    ``depth_limit``, and those with an alias to no anchor read before it."""
    composer = _compose_resuming(text, depth_limit)
    if composer is None:
        composer = _ItemComposer(depth_limit)
        loader = yaml.SafeLoader(text)
        try:
            composer.segment(loader, 0)
        finally:
            loader.dispose()
    return composer.root, composer.refused
