"""The workflow template language: references in braces, and conditions over them.

A template is text with references: `{ticket}` (a property of the workflow's input),
`{input}` (the whole input), `{classify}` (a step's result), `{classify.category}` (a path
into it; a number indexes a list), `{item}` (the element of a `map` step). `{{` and `}}` are
literal braces. A string value is inserted as it is; anything else as compact JSON; a
missing value (a skipped step, a path that is not there) as nothing.

A condition is `REF`, `not REF`, `REF OP LITERAL` (OP: `==`, `!=`, `<`, `<=`, `>`, `>=`),
joined with `and` / `or` (`and` binds tighter), where a literal is a quoted string, a
number, `true`, `false` or `null`. It is parsed by the small recursive descent below into
a tree that is only ever compared — no expression of the author's is ever executed — and
whose parentheses nest at most MAX_NESTING deep (a clear error, not a RecursionError).

Values compare as JSON values: `1 == true` and `0 == false` are false (a boolean equals
only a boolean), `1 == 1.0` is true (JSON has one number type), lists and objects compare
element by element by the same rule. A lone `REF` holds only when the value is `true`:
`"nope"`, `"yes"`, `1`, a non-empty list are not `true` (compare them: `{n} > 0`,
`{answer} == 'yes'`), and `not REF` holds exactly when `REF` does not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

REF_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*)\}")
_TOKEN_RE = re.compile(
    r"""\s*(?:
        (?P<ref>\{[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*\})
      | (?P<op>==|!=|<=|>=|<|>)
      | (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
      | (?P<num>-?\d+(?:\.\d+)?)
      | (?P<word>[A-Za-z_]+)
      | (?P<paren>[()])
    )""",
    re.VERBOSE,
)
_WORDS = {"true": True, "false": False, "null": None}
#: How deep parentheses may nest in a condition.
MAX_NESTING = 20


class TemplateError(ValueError):
    """A template or condition that cannot be parsed (validation reports it at its key)."""


def references(template: str) -> list[str]:
    """Every reference of a template, as dotted paths (`classify.category`)."""
    return [m.group(1) for m in REF_RE.finditer(template.replace("{{", "").replace("}}", ""))]


def lookup(path: str, scope: dict[str, Any]) -> Any:
    """The value at a dotted path; None when any part is missing."""
    head, *rest = path.split(".")
    value = scope.get(head)
    for part in rest:
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def render(template: str, scope: dict[str, Any]) -> str:
    """The template with each reference replaced by its value's text."""
    out: list[str] = []
    for piece in re.split(r"(\{\{|\}\})", template):
        if piece in ("{{", "}}"):
            out.append(piece[0])
        else:
            out.append(REF_RE.sub(lambda m: as_text(lookup(m.group(1), scope)), piece))
    return "".join(out)


# ---- conditions -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Ref:
    path: str


@dataclass(frozen=True)
class Literal:
    value: Any


@dataclass(frozen=True)
class Compare:
    left: Ref
    op: str | None  # None: the reference's truth
    right: Literal | Ref | None = None
    negate: bool = False


@dataclass(frozen=True)
class Junction:
    op: str  # "and" | "or"
    parts: tuple[Any, ...]


def _tokens(text: str) -> Iterator[tuple[str, str]]:
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN_RE.match(text, position)
        if match is None or match.end() == position:
            raise TemplateError(f"cannot read the condition at {text[position:][:20]!r}")
        kind = match.lastgroup or ""
        yield kind, match.group(kind)
        position = match.end()


class _Parser:
    def __init__(self, text: str):
        self.tokens = list(_tokens(text))
        self.at = 0
        self.depth = 0
        if not self.tokens:
            raise TemplateError("the condition is empty")

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise TemplateError("the condition ends too early")
        self.at += 1
        return token

    def parse(self) -> Any:
        tree = self.disjunction()
        if self.peek() is not None:
            raise TemplateError(f"unexpected {self.peek()[1]!r} in the condition")  # type: ignore[index]
        return tree

    def disjunction(self) -> Any:
        parts = [self.conjunction()]
        while self.peek() == ("word", "or"):
            self.take()
            parts.append(self.conjunction())
        return parts[0] if len(parts) == 1 else Junction("or", tuple(parts))

    def conjunction(self) -> Any:
        parts = [self.comparison()]
        while self.peek() == ("word", "and"):
            self.take()
            parts.append(self.comparison())
        return parts[0] if len(parts) == 1 else Junction("and", tuple(parts))

    def comparison(self) -> Any:
        if self.peek() == ("paren", "("):
            self.take()
            self.depth += 1
            if self.depth > MAX_NESTING:
                raise TemplateError(f"the condition nests parentheses more than {MAX_NESTING} deep")
            inner = self.disjunction()
            if self.take() != ("paren", ")"):
                raise TemplateError("a `(` is not closed")
            self.depth -= 1
            return inner
        negate = False
        if self.peek() == ("word", "not"):
            self.take()
            negate = True
        kind, text = self.take()
        if kind != "ref":
            raise TemplateError(
                f"a condition starts with a reference like {{step.key}}, not {text!r}"
            )
        left = Ref(text[1:-1])
        if self.peek() is None or self.peek()[0] != "op":  # type: ignore[index]
            return Compare(left, None, negate=negate)
        if negate:
            raise TemplateError("`not` goes with a lone reference; use `!=` to compare")
        op = self.take()[1]
        return Compare(left, op, self.operand())

    def operand(self) -> Literal | Ref:
        kind, text = self.take()
        if kind == "ref":
            return Ref(text[1:-1])
        if kind == "str":
            return Literal(re.sub(r"\\(.)", r"\1", text[1:-1]))
        if kind == "num":
            return Literal(float(text) if "." in text else int(text))
        if kind == "word" and text in _WORDS:
            return Literal(_WORDS[text])
        raise TemplateError(f"expected a value after the comparison, got {text!r}")


def parse_condition(text: str) -> Any:
    return _Parser(text).parse()


def condition_references(tree: Any) -> list[str]:
    if isinstance(tree, Junction):
        return [r for part in tree.parts for r in condition_references(part)]
    found = [tree.left.path]
    if isinstance(tree.right, Ref):
        found.append(tree.right.path)
    return found


def holds(condition: str, scope: dict[str, Any]) -> bool:
    """Whether the condition is true in `scope` (values compare as JSON values; an order
    comparison of unlike types is false)."""
    return _evaluate(parse_condition(condition), scope)


def _evaluate(tree: Any, scope: dict[str, Any]) -> bool:
    if isinstance(tree, Junction):
        results = (_evaluate(part, scope) for part in tree.parts)
        return all(results) if tree.op == "and" else any(results)
    left = lookup(tree.left.path, scope)
    if tree.op is None:
        return (left is not True) if tree.negate else (left is True)
    right = lookup(tree.right.path, scope) if isinstance(tree.right, Ref) else tree.right.value
    if tree.op == "==":
        return json_equal(left, right)
    if tree.op == "!=":
        return not json_equal(left, right)
    numbers = (int, float)
    comparable = (isinstance(left, numbers) and isinstance(right, numbers)) or (
        isinstance(left, str) and isinstance(right, str)
    )
    if not comparable or isinstance(left, bool) or isinstance(right, bool):
        return False
    return bool(
        {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[tree.op]
    )


def json_equal(left: Any, right: Any) -> bool:
    """Equality of JSON values: Python's `==` except that a boolean equals only a boolean
    (Python has `True == 1` and `False == 0`), all the way down lists and objects."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(json_equal, left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(v, right[k]) for k, v in left.items())
    return bool(left == right)
