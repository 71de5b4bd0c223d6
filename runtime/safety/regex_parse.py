"""Regular expressions (Python's `re` syntax, which JSON Schema `pattern`s are run with) parsed
into the few shapes the backtracking analysis in runtime.safety.regex_safety needs.

Only what decides how a backtracking matcher can split a text is kept: single characters
(as sets), sequences, alternatives, repetitions (with their place in the pattern, to name
them in messages) and lookarounds. Anchors, word boundaries, flags and comments match no
character and become `Empty`. A backreference can match any text, so it stands for `.*`.

The caller compiles the pattern with `re` first, so this parser may assume valid syntax; it
raises RegexUnsupported for the constructs it cannot model (verbose mode).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass


class RegexUnsupported(ValueError):
    """A construct the analysis cannot model; the pattern is refused rather than trusted."""


@dataclass(frozen=True)
class CharSet:
    """One character: code point ranges and the classes `d w s D W S`, or, when `negated`,
    any character outside them."""

    ranges: tuple[tuple[int, int], ...] = ()
    classes: frozenset[str] = frozenset()
    negated: bool = False


ANY = CharSet(((10, 10),), negated=True)  # `.`: anything but a newline
EVERYTHING = CharSet(negated=True)  # `.` under DOTALL; what a backreference may match


@dataclass(frozen=True)
class Char:
    chars: CharSet


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    branches: tuple[Node, ...]


@dataclass(frozen=True)
class Repeat:
    body: Node
    low: int
    high: int | None  # None: unbounded
    span: tuple[int, int]  # where the repeated part and its quantifier are written


@dataclass(frozen=True)
class Look:
    """A lookahead or lookbehind: matches no character, but its body is matched too."""

    body: Node


@dataclass(frozen=True)
class Empty:
    pass


Node = Char | Seq | Alt | Repeat | Look | Empty

_COUNT = re.compile(r"\{(\d*)(?:(,)(\d*))?\}")
_FLAGS = re.compile(r"\?([aiLmsux]*)(?:-([imsx]*))?([:)])")
_SIMPLE_ESCAPES = {"n": 10, "t": 9, "r": 13, "f": 12, "v": 11, "a": 7}
_BACKREFERENCE = Repeat(Char(EVERYTHING), 0, None, (0, 0))


@dataclass
class Parsed:
    root: Node
    ignorecase: bool


def parse(pattern: str) -> Parsed:
    parser = _Parser(pattern)
    root = parser.alternation()
    if parser.i != len(pattern):
        raise RegexUnsupported(f"unbalanced ')' at position {parser.i}")
    return Parsed(root, parser.ignorecase)


class _Parser:
    def __init__(self, pattern: str):
        self.p = pattern
        self.i = 0
        self.ignorecase = False
        self.dotall = False

    def peek(self, offset: int = 0) -> str:
        index = self.i + offset
        return self.p[index] if index < len(self.p) else ""

    def alternation(self) -> Node:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.sequence())
        return branches[0] if len(branches) == 1 else Alt(tuple(branches))

    def sequence(self) -> Node:
        items: list[Node] = []
        while self.i < len(self.p) and self.peek() not in "|)":
            start = self.i
            items.append(self.quantified(self.atom(), start))
        return items[0] if len(items) == 1 else Seq(tuple(items))

    def quantified(self, atom: Node, start: int) -> Node:
        char = self.peek()
        if char in ("*", "+", "?"):
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[char]
            self.i += 1
        elif char == "{" and (count := _COUNT.match(self.p, self.i)) and (count[1] or count[2]):
            low = int(count[1] or 0)
            high = low if not count[2] else (int(count[3]) if count[3] else None)
            self.i = count.end()
        else:
            return atom
        if self.peek() in ("?", "+"):  # lazy or possessive: the same paths in another order
            self.i += 1
        return Repeat(atom, low, high, (start, self.i))

    def atom(self) -> Node:
        char = self.p[self.i]
        if char == "(":
            return self.group()
        if char == "[":
            return Char(self.char_class())
        if char == "\\":
            return self.escape()
        self.i += 1
        if char == ".":
            return Char(EVERYTHING if self.dotall else ANY)
        if char in "^$":
            return Empty()
        return _literal(ord(char))

    def group(self) -> Node:
        self.i += 1  # (
        rest = self.p[self.i : self.i + 3]
        body: Node
        if rest.startswith(("?:", "?>")):
            self.i += 2
        elif rest.startswith(("?=", "?!", "?<=", "?<!")):
            self.i += 3 if rest.startswith("?<") else 2
            body = self.alternation()
            self.close()
            return Look(body)
        elif rest.startswith(("?P<", "?<")):
            self.i = self.p.index(">", self.i) + 1
        elif rest.startswith(("?P=", "?#")):
            is_reference = rest.startswith("?P=")
            self.i = self.p.index(")", self.i) + 1
            return _BACKREFERENCE if is_reference else Empty()
        elif rest.startswith("?("):  # conditional (?(1)yes|no): either branch may match
            self.i = self.p.index(")", self.i) + 1
        elif rest.startswith("?"):
            flags = _FLAGS.match(self.p, self.i)
            if flags is None:
                raise RegexUnsupported(f"unknown group construct at position {self.i - 1}")
            if "x" in flags[1]:
                raise RegexUnsupported("verbose mode (?x) is not supported in patterns")
            self.ignorecase = self.ignorecase or "i" in flags[1]
            self.dotall = self.dotall or "s" in flags[1]
            self.i = flags.end()
            if flags[3] == ")":
                return Empty()
        body = self.alternation()
        self.close()
        return body

    def close(self) -> None:
        if self.peek() != ")":
            raise RegexUnsupported(f"missing ')' at position {self.i}")
        self.i += 1

    def escape(self) -> Node:
        self.i += 1  # the backslash
        char = self.peek()
        if char and char in "dDwWsS":
            self.i += 1
            return Char(CharSet(classes=frozenset(char)))
        if char and char in "bBAZz":
            self.i += 1
            return Empty()
        if char and char in "123456789":
            if len(self.p) > self.i + 2 and all(
                c in "01234567" for c in self.p[self.i : self.i + 3]
            ):
                return _literal(self.escaped())  # \123: an octal escape, not a group
            self.i += 2 if self.peek(1).isdigit() else 1
            return _BACKREFERENCE
        return _literal(self.escaped())

    def escaped(self) -> int:
        """The code point of the escape starting at `self.i` (just after the backslash)."""
        char = self.p[self.i]
        self.i += 1
        if char in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[char]
        if char in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[char]
            self.i += width
            return int(self.p[self.i - width : self.i], 16)
        if char == "N":  # \N{NAME}
            end = self.p.index("}", self.i)
            name, self.i = self.p[self.i + 1 : end], end + 1
            return ord(unicodedata.lookup(name))
        if char in "01234567":
            digits = char
            while len(digits) < 3 and self.peek() and self.peek() in "01234567":
                digits += self.peek()
                self.i += 1
            return int(digits, 8)
        return ord(char)

    def char_class(self) -> CharSet:
        self.i += 1  # [
        negated = self.peek() == "^"
        self.i += negated
        ranges: list[tuple[int, int]] = []
        classes: set[str] = set()
        first = True
        while first or self.peek() != "]":
            if not self.peek():
                raise RegexUnsupported("unterminated character set")
            first = False
            if self.peek() == "\\" and self.peek(1) in tuple("dDwWsS"):
                classes.add(self.peek(1))
                self.i += 2
                continue
            low = self.class_member()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                ranges.append((low, self.class_member()))
            else:
                ranges.append((low, low))
        self.i += 1  # ]
        return CharSet(tuple(ranges), frozenset(classes), negated)

    def class_member(self) -> int:
        char = self.p[self.i]
        if char != "\\":
            self.i += 1
            return ord(char)
        self.i += 1
        if self.peek() == "b":  # inside a set, \b is a backspace
            self.i += 1
            return 8
        return self.escaped()


def _literal(code: int) -> Char:
    return Char(CharSet(((code, code),)))
