r"""`type: rule` hooks: conditions compiled once per engine and evaluated in process.

A rule hook does no I/O, so it is deterministic: its decision is not committed on its own
but evaluated again whenever it is needed (after a crash, after an approval), always to the
same answer. That keeps its cost per tool call to a few microseconds.

A rule whose `arg` is not in what it tests cannot be evaluated (RuleUnusable): treating the
absent value as "the condition is false" let a misspelt `arg` with `then: deny` pass every
call silently. The engine turns it into a failure of the hook, decided by `on_error`.

`matches` patterns are compiled with ASCII classes (`\d` is 0-9, not every Unicode digit)
and `$` anchored at the very end (`\Z`: Python's `$` also matches before a final newline,
so `^\d+$` accepted "5\n"), except in a pattern that turns on multi-line mode (`(?m)`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runtime.engine.hook_kinds import HookFailure
from runtime.spec.plain import HookRule, RuleHook
from runtime.spec.shared import compile_pattern

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


class RuleUnusable(HookFailure):
    """A rule cannot be evaluated: its `arg` is not in what it tests (the message says why)."""


def _test(op: str, expected: Any) -> Callable[[Any], bool]:
    """The positive form of an operator, as a function of the value found."""
    if op == "contains":
        needle = expected if isinstance(expected, str) else as_text(expected)
        return lambda v: (expected in v) if isinstance(v, list) else (needle in as_text(v))
    if op == "starts_with":
        return lambda v: as_text(v).startswith(expected)
    if op == "matches":
        pattern = compile_pattern(expected)
        return lambda v: pattern.search(as_text(v)) is not None
    if op == "in":
        return lambda v: v in expected
    return lambda v: v == expected  # equals


#: What a rule tests, per event, as its failures name it.
SUBJECTS = {"pre_tool_use": "the arguments", "pre_response": "the answer"}


@dataclass(frozen=True)
class CompiledRule:
    arg: str | None
    path: tuple[str | int, ...] | None
    test: Callable[[Any], bool]
    negated: bool
    deny_when: bool  # deny when the condition holds (`then`) or when it does not (`else`)
    reason: str

    def denies(self, subject: Any, what: str = "the value") -> bool:
        """Whether the rule denies `subject`; RuleUnusable when its `arg` is not there."""
        found = subject if self.path is None else lookup(subject, self.path)
        if found is _MISSING:
            if isinstance(subject, str):
                raise RuleUnusable(
                    f"`{self.arg}` cannot be read: {what} is a text, not a JSON object"
                )
            raise RuleUnusable(f"`{self.arg}` is not in {what}")
        holds = self.test(found)
        if self.negated:
            holds = not holds
        return holds is self.deny_when


def _compile(rule: HookRule) -> CompiledRule:
    negated = rule.op.startswith("not_")
    where = rule.arg or "the value"
    reason = rule.reason or f"{where} failed the rule: {rule.op} {rule.value!r}"
    return CompiledRule(
        arg=rule.arg,
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
        self.what = SUBJECTS.get(hook.event, "the input")

    def denial(self, subject: Any) -> str | None:
        """Why the subject is denied, or None when every rule lets it through. Raises
        RuleUnusable when a rule (before any denial) cannot be evaluated."""
        for number, rule in enumerate(self.rules, 1):
            try:
                if rule.denies(subject, self.what):
                    return rule.reason
            except RuleUnusable as exc:
                where = f"rule {number}: " if len(self.rules) > 1 else ""
                raise RuleUnusable(f"{where}{exc}") from None
        return None
