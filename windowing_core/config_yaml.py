"""Reading a configuration's YAML: ``safe_load``, but strict where YAML is silently lenient.

- A key given twice in one mapping, at any depth, is refused with both places. YAML's own
  spec forbids it, yet PyYAML keeps the last and drops the first without a word: two windows
  named ``w`` became one. Merge keys (``<<: *base``) may still be overridden, as YAML intends.
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
_MERGE = "tag:yaml.org,2002:merge"


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
        self._where: dict[int, str] = {}   # id(node) -> the path of fields that leads to it
        self._checked: set[int] = set()

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

    # Constructing: duplicate keys, with the path of fields for the message.
    def construct_document(self, node: Node) -> Any:
        self._where[id(node)] = ""
        return super().construct_document(node)

    def construct_mapping(self, node: Node, deep: bool = False) -> dict:
        if isinstance(node, MappingNode):
            self._refuse_duplicates(node)
            where = self._where.get(id(node))
            if where is not None:
                for key_node, value_node in node.value:
                    if key_node.tag != _MERGE and isinstance(key_node.value, str):
                        self._where.setdefault(id(value_node), f"{where}.{key_node.value}" if where
                                               else key_node.value)
        return super().construct_mapping(node, deep=deep)

    def construct_sequence(self, node: Node, deep: bool = False) -> list:
        where = self._where.get(id(node))
        if where is not None and isinstance(node, SequenceNode):
            for i, child in enumerate(node.value):
                self._where.setdefault(id(child), f"{where}[{i}]")
        return super().construct_sequence(node, deep=deep)

    def flatten_mapping(self, node: MappingNode) -> None:
        self._refuse_duplicates(node)  # also each mapping merged in, before its keys join another's
        super().flatten_mapping(node)

    def _refuse_duplicates(self, node: MappingNode) -> None:
        """The mapping's own keys, once, before merging (a key may override a merged one)."""
        if id(node) in self._checked:
            return
        self._checked.add(id(node))
        seen: dict[Any, Node] = {}
        for key_node, _ in node.value:
            # two merge keys: merge a list of mappings instead (`<<: [*a, *b]`)
            key = "<<" if key_node.tag == _MERGE else self.construct_object(key_node)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:  # a list or mapping as a key: PyYAML refuses it itself
                continue
            if first is not key_node:
                where = self._where.get(id(node))
                field = "the top level" if where == "" else where
                raise Refused(f"{field + ': ' if field else ''}key {key!r} is given twice "
                              f"({_at(first.start_mark)} and {_at(key_node.start_mark)}); "
                              "YAML would keep only the last, so give it once")
