"""Limits on what an agents.yaml may make the loader do, so no file can make `validate` slow,
hungry or crash.

Without them a 471-byte file of nested YAML aliases ("billion laughs") expands to a billion
values, a few thousand `[` exhaust the recursion limit, and a 5,000-digit number trips
Python's integer-conversion limit. Every limit is checked while the document is composed,
before anything is expanded or converted, and reported at the line that crosses it:

- the file is at most `MAX_BYTES` and valid UTF-8;
- at most `MAX_VALUES` values once aliases are expanded (each alias counts the whole value
  it repeats, so the count is what later passes really walk), and no alias inside the
  value it names (a recursive structure);
- values nest at most `MAX_DEPTH` deep;
- a number has at most `MAX_NUMBER_CHARS` characters and is finite (`.inf`, `.nan` and
  `1e999` have no JSON form and no meaning as a duration, a size or a bound).

Events come from libyaml when it is installed (about five times faster than the pure-Python
scanner, which matters for the size a file may have) and are composed in Python, where the
counting happens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

MAX_BYTES = 1024 * 1024
MAX_VALUES = 50_000
MAX_DEPTH = 64
MAX_NUMBER_CHARS = 100

INT_TAG = "tag:yaml.org,2002:int"
FLOAT_TAG = "tag:yaml.org,2002:float"


class LimitError(Exception):
    """The document crosses one of the limits; `mark` is where (a yaml.Mark)."""

    def __init__(self, message: str, mark: Any):
        super().__init__(message)
        self.message = message
        self.mark = mark


class _BoundedComposer(Composer):
    """PyYAML's composer, counting values (aliases by the size of what they repeat) and depth.

    Composing keeps aliases as shared nodes, so it is cheap even for a billion laughs; the
    cost comes later, in every pass that walks the data. Counting here stops the document
    before any such pass.
    """

    peek_event: Any  # from the parser it is mixed with

    def __init__(self) -> None:
        super().__init__()
        self._values = 0
        self._depth = 0
        self._sizes: dict[int, int] = {}  # id(node) → values it stands for, once complete
        self._nodes: list[Any] = []  # keeps the ids above from being reused

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            target = self.anchors.get(event.anchor)
            if target is not None:  # an undefined alias is the composer's own error
                size = self._sizes.get(id(target))
                if size is None:
                    raise LimitError(
                        f"alias *{event.anchor} is used inside the value it names "
                        "(a recursive structure, which agents.yaml cannot hold)",
                        event.start_mark,
                    )
                self._count(size, event.start_mark)
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise LimitError(
                f"values are nested more than {MAX_DEPTH} levels deep", event.start_mark
            )
        before = self._values
        self._count(1, event.start_mark)
        node = super().compose_node(parent, index)
        self._depth -= 1
        if isinstance(node, yaml.ScalarNode) and node.tag in (INT_TAG, FLOAT_TAG):
            _check_number(node)
        self._sizes[id(node)] = self._values - before
        self._nodes.append(node)
        return node

    def _count(self, values: int, mark: Any) -> None:
        self._values += values
        if self._values > MAX_VALUES:
            raise LimitError(
                f"the document holds more than {MAX_VALUES:,} values once YAML aliases are "
                "expanded, the most agentfn reads (ten times what a spec using every feature "
                "needs); look for aliases that repeat large values",
                mark,
            )


def _check_number(node: yaml.ScalarNode) -> None:
    text = node.value
    if len(text) > MAX_NUMBER_CHARS:
        raise LimitError(
            f"a number of {len(text)} characters; numbers here have at most {MAX_NUMBER_CHARS}",
            node.start_mark,
        )
    if node.tag == FLOAT_TAG and not _finite(text):
        raise LimitError(
            f"{text} is not a finite number (it has no JSON form and means no duration, size "
            "or bound); write a finite number",
            node.start_mark,
        )


def _finite(text: str) -> bool:
    """Is a YAML 1.1 float (`1.5`, `1e3`, `.inf`, `.nan`, sexagesimal `1:30.5`) finite?"""
    lowered = text.lower()
    if "inf" in lowered or "nan" in lowered:
        return False
    if ":" in text:  # sexagesimal: as many digits as the length allows, always finite
        return True
    try:
        return math.isfinite(float(text.replace("_", "")))
    except ValueError:  # not a form Python reads; the constructor decides
        return True


try:
    from yaml._yaml import CParser as _Parser  # libyaml: the scanner and parser in C
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml.parser import Parser as _PyParser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Parser(Reader, Scanner, _PyParser):  # type: ignore[no-redef]
        def __init__(self, stream: str):
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            _PyParser.__init__(self)


class BoundedLoader(_BoundedComposer, _Parser, SafeConstructor, Resolver):
    """The safe loader (safe tags only) with the limits above. Raises yaml.YAMLError for
    syntax errors and LimitError for a crossed limit."""

    def __init__(self, text: str):
        _Parser.__init__(self, text)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        _BoundedComposer.__init__(self)


def decode(data: bytes) -> str | LimitError:
    """The text of a spec file, or where it stops being acceptable (too large, not UTF-8)."""
    if len(data) > MAX_BYTES:
        return LimitError(
            f"the file is larger than {MAX_BYTES // 1024} KiB; an agents.yaml this large is a "
            "mistake",
            _byte_mark(data, MAX_BYTES),
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return LimitError(
            f"the file is not UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start} "
            f"({exc.reason}); save it as UTF-8",
            _byte_mark(data, exc.start),
        )


@dataclass(frozen=True)
class Mark:
    """A place in the file, 0-based like PyYAML's marks."""

    line: int
    column: int


def _byte_mark(data: bytes, offset: int) -> Mark:
    """The line and column (in characters) of a byte offset, from the valid text before it."""
    before = data[:offset]
    line_start = before.rfind(b"\n") + 1
    column = len(before[line_start:].decode("utf-8", errors="replace"))
    return Mark(before.count(b"\n"), column)
