"""Reading a configuration's YAML: ``safe_load``, but strict where YAML is silently lenient.

- Lists and mappings nested deeper than ``MAX_DEPTH`` are refused: PyYAML composes them
  recursively, and 5,000 brackets ended in a ``RecursionError`` instead of an error.
- A document whose aliases expand to more than ``MAX_VALUES`` values (a "billion laughs") or
  refer to a list or mapping that holds them is refused: every later step (a message naming
  the value, a comparison) would walk the expansion, and nine levels of nine aliases hung a
  job.

Imported only where a configuration file is read: executors never load PyYAML.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

MAX_DEPTH = 50
"""Nesting of lists and mappings: the deepest configuration field is four levels down."""
MAX_VALUES = 100_000
"""Values (scalars, lists and mappings) of the document with every alias expanded."""


class Refused(yaml.YAMLError):
    """YAML that parses but that a configuration may not be; the message is one line saying where."""


def load(text: str) -> Any:
    """``yaml.safe_load(text)`` with the refusals above (``Refused``); syntax errors are PyYAML's."""
    loader = _StrictLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _at(mark: yaml.Mark) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


class _StrictLoader(yaml.SafeLoader):
    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._values: dict[int, int] = {}  # id(node) -> its values with aliases expanded

    # Composing: depth, alias expansion, aliases to their own container.
    def compose_node(self, parent: Node | None, index: Any) -> Node:
        mark = self.peek_event().start_mark
        if self.check_event(yaml.AliasEvent):
            node = super().compose_node(parent, index)
            if id(node) not in self._values:  # its anchor's node is still being composed: an ancestor
                raise Refused(f"an alias refers to a list or mapping that holds it ({_at(mark)})")
            return node
        if self._depth >= MAX_DEPTH:
            raise Refused(f"nests lists and mappings more than {MAX_DEPTH} deep ({_at(mark)})")
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        children: list[Node] = []
        if isinstance(node, SequenceNode):
            children = node.value
        elif isinstance(node, MappingNode):
            children = [n for pair in node.value for n in pair]
        values = 1 + sum(self._values[id(child)] for child in children)
        if values > MAX_VALUES:
            raise Refused(f"its aliases expand to more than {MAX_VALUES} values ({_at(mark)})")
        self._values[id(node)] = values
        return node
