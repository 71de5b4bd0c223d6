"""`type: rule` hooks: conditions compiled once per engine and evaluated in process.

A rule hook does no I/O, so it is deterministic: its decision is not committed on its own
but evaluated again whenever it is needed (after a crash, after an approval), always to the
same answer. That keeps its cost per tool call to a few microseconds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runtime.spec.hooks import HookRule, RuleHook

_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_MISSING = object()


def parse_path(path: str) -> tuple[str | int, ...]:
    """`items[0].sku` → ('items', 0, 'sku')."""
    return tuple(int(index) if index else key for key, index in _PATH_PART.findall(path))


def lookup(value: Any, path: tuple[str | int, ...]) -> Any:
    """The value at `path`, or _MISSING when any step is absent."""
    for step in path:
        if isinstance(step, int):
            if not isinstance(value, list) or step >= len(value):
                return _MISSING
            value = value[step]
        else:
            if not isinstance(value, dict) or step not in value:
                return _MISSING
            value = value[step]
    return value


def as_text(value: Any) -> str:
    """What the text operators read: a string as it is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _test(op: str, expected: Any) -> Callable[[Any], bool]:
    """The positive form of an operator, as a function of the value found."""
    if op == "contains":
        needle = expected if isinstance(expected, str) else as_text(expected)
        return lambda v: (expected in v) if isinstance(v, list) else (needle in as_text(v))
    if op == "starts_with":
        return lambda v: as_text(v).startswith(expected)
    if op == "matches":
        pattern = re.compile(expected)
        return lambda v: pattern.search(as_text(v)) is not None
    if op == "in":
        return lambda v: v in expected
    return lambda v: v == expected  # equals


@dataclass(frozen=True)
class CompiledRule:
    path: tuple[str | int, ...] | None
    test: Callable[[Any], bool]
    negated: bool
    deny_when: bool  # deny when the condition holds (`then`) or when it does not (`else`)
    reason: str

    def denies(self, subject: Any) -> bool:
        found = subject if self.path is None else lookup(subject, self.path)
        holds = found is not _MISSING and self.test(found)
        if self.negated:
            holds = not holds
        return holds is self.deny_when


def _compile(rule: HookRule) -> CompiledRule:
    negated = rule.op.startswith("not_")
    where = rule.arg or "the value"
    reason = rule.reason or f"{where} failed the rule: {rule.op} {rule.value!r}"
    return CompiledRule(
        path=parse_path(rule.arg) if rule.arg is not None else None,
        test=_test(rule.op.removeprefix("not_"), rule.value),
        negated=negated,
        deny_when=rule.then is not None,
        reason=reason,
    )


class RuleSet:
    """A rule hook's rules, in order; the first one that denies decides."""

    def __init__(self, hook: RuleHook):
        self.rules = [_compile(rule) for rule in hook.rules]

    def denial(self, subject: Any) -> str | None:
        """Why the subject is denied, or None when every rule lets it through."""
        for rule in self.rules:
            if rule.denies(subject):
                return rule.reason
        return None
