"""What a case expects, checked against what its run did: each assertion one named `Check`.

A check's name is the key path in the eval file (`expect.tools.calls[1].args.order_id`),
so the table and the JUnit XML name exactly which assertion failed, and why.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from infra.evals.format import AnswerExpect, Expect, Match, ResultExpect, ToolCallExpect


@dataclass
class Call:
    """One tool call of the trajectory (the run's and its asked agents', in order)."""

    agent: str
    tool: str
    args: dict[str, Any]
    success: bool
    output: Any = None


@dataclass
class Outcome:
    """What a case's run did, as the assertions see it."""

    status: str
    result: Any = None
    error_code: str | None = None
    error_message: str | None = None
    turns: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    trajectory: list[Call] = field(default_factory=list)
    handoffs: list[str] = field(default_factory=list)
    approvals_asked: list[str] = field(default_factory=list)

    @property
    def answer_text(self) -> str:
        if self.result is None:
            return ""
        if isinstance(self.result, str):
            return self.result
        return json.dumps(self.result, ensure_ascii=False)


@dataclass
class Check:
    name: str
    ok: bool
    why: str = ""  # what failed, in words (empty when it held)
    expected: Any = None
    actual: Any = None


def check_all(expect: Expect, outcome: Outcome) -> list[Check]:
    """Every assertion of `expect` except the judge's (infra.evals.judge: it needs a model)."""
    checks: list[Check] = []
    if expect.status is not None:
        checks.append(_equal("expect.status", expect.status, outcome.status, outcome))
    if expect.error_code is not None:
        checks.append(_equal("expect.error_code", expect.error_code, outcome.error_code, outcome))
    for key, bound, actual in (
        ("max_turns", expect.max_turns, outcome.turns),
        ("max_tokens", expect.max_tokens, outcome.tokens),
        ("max_cost_usd", expect.max_cost_usd, outcome.cost_usd),
    ):
        if bound is not None:
            ok = actual <= bound
            why = "" if ok else f"{actual} > {bound}"
            checks.append(Check(f"expect.{key}", ok, why, f"≤ {bound}", actual))
    if expect.handoff is not None:
        ok = expect.handoff in outcome.handoffs
        why = (
            "" if ok else f"no handoff to {expect.handoff} (handoffs: {outcome.handoffs or 'none'})"
        )
        checks.append(Check("expect.handoff", ok, why, expect.handoff, outcome.handoffs))
    if expect.approval_asked is not None:
        ok = expect.approval_asked in outcome.approvals_asked
        asked = outcome.approvals_asked or "none"
        why = "" if ok else f"no approval asked for {expect.approval_asked} (asked: {asked})"
        checks.append(
            Check("expect.approval_asked", ok, why, expect.approval_asked, outcome.approvals_asked)
        )
    if expect.tools is not None:
        checks += _trajectory(expect.tools.order, expect.tools.calls, outcome.trajectory)
    if expect.answer is not None:
        checks += _answer(expect.answer, outcome)
    if expect.result is not None:
        checks += _result(expect.result, outcome.result)
    return checks


def _equal(name: str, expected: Any, actual: Any, outcome: Outcome) -> Check:
    if expected == actual:
        return Check(name, True, expected=expected, actual=actual)
    why = f"expected {expected!r}, got {actual!r}"
    if outcome.error_code and name == "expect.status":
        why += f" ({outcome.error_code}: {(outcome.error_message or '')[:160]})"
    return Check(name, False, why, expected, actual)


# -- argument matchers -------------------------------------------------------------------


def is_subset(expected: Any, actual: Any) -> bool:
    """JSON subset: each key of an expected object is in the actual one with a subset value;
    each item of an expected list matches a distinct item of the actual list; scalars equal."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and is_subset(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return False
        left = list(actual)
        for item in expected:
            hit = next((i for i, a in enumerate(left) if is_subset(item, a)), None)
            if hit is None:
                return False
            left.pop(hit)
        return True
    same = expected == actual and type(expected) is type(actual)
    return same or _numbers(expected, actual)


def _numbers(a: Any, b: Any) -> bool:
    kinds = (int, float)
    return (
        isinstance(a, kinds)
        and isinstance(b, kinds)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
        and a == b
    )


def matches(matcher: Any, actual: Any) -> str | None:
    """None when `actual` satisfies the matcher, else why not."""
    match = matcher if isinstance(matcher, Match) else Match(equals=matcher)
    kind, value = match.kind, match.value
    text = actual if isinstance(actual, str) else json.dumps(actual, ensure_ascii=False)
    if kind == "equals":
        ok = actual == value
        return None if ok else f"{actual!r} does not equal {value!r}"
    if kind == "contains":
        return None if value in text else f"{text!r} does not contain {value!r}"
    if kind == "regex":
        return None if re.search(value, text) else f"{text!r} does not match /{value}/"
    return None if is_subset(value, actual) else f"{actual!r} is not a superset of {value!r}"


def call_problems(expected: ToolCallExpect, call: Call) -> list[tuple[str, str]]:
    """(key, why) for each part of `expected` this call does not satisfy."""
    found: list[tuple[str, str]] = []
    if call.tool != expected.tool:
        found.append(("tool", f"called {call.tool}, not {expected.tool}"))
    if expected.agent is not None and call.agent != expected.agent:
        found.append(("agent", f"called by {call.agent}, not {expected.agent}"))
    for key, matcher in expected.args.items():
        if key not in call.args:
            found.append((f"args.{key}", f"no argument {key!r} (given: {sorted(call.args)})"))
            continue
        why = matches(matcher, call.args[key])
        if why is not None:
            found.append((f"args.{key}", why))
    if expected.success is not None and call.success != expected.success:
        found.append(("success", f"success was {call.success}"))
    return found


def _wanted(expected: ToolCallExpect) -> dict[str, Any]:
    """An expected call as the report's diff shows it (matchers as written)."""
    shown = expected.model_dump(mode="json", exclude_unset=True, exclude_none=True)
    shown["args"] = {
        k: m.model_dump(mode="json", exclude_unset=True) for k, m in expected.args.items()
    }
    shown["args"] = {
        k: v.get("equals", v) if list(v) == ["equals"] else v for k, v in shown["args"].items()
    }
    return shown


def _seen(call: Call) -> dict[str, Any]:
    return {"tool": call.tool, "agent": call.agent, "args": call.args, "success": call.success}


def _call_checks(name: str, want: ToolCallExpect, call: Call) -> list[Check]:
    """One failed check per unmet part of the call (`…calls[1].args.amount`), else one pass."""
    problems = call_problems(want, call)
    if not problems:
        return [Check(name, True, expected=want.tool, actual=call.tool)]
    return [Check(f"{name}.{key}", False, why, _wanted(want), _seen(call)) for key, why in problems]


def _trajectory(order: str, expected: list[ToolCallExpect], actual: list[Call]) -> list[Check]:
    shown = [f"{c.tool}({json.dumps(c.args, ensure_ascii=False)})" for c in actual]
    base = "expect.tools"
    checks: list[Check] = []
    if order == "in_order":
        for index, want in enumerate(expected):
            name = f"{base}.calls[{index}]"
            if index >= len(actual):
                why = f"no call #{index + 1} (expected {want.tool}); the run made {len(actual)}"
                checks.append(Check(name, False, why, _wanted(want), shown))
            else:
                checks += _call_checks(name, want, actual[index])
        if len(actual) > len(expected):
            extra = ", ".join(shown[len(expected) :])
            why = f"unexpected calls after the expected ones: {extra}"
            checks.append(Check(f"{base}.calls", False, why, [e.tool for e in expected], shown))
        return checks
    # any_order / subset: each expected call matched to a distinct actual call
    left = list(range(len(actual)))
    for index, want in enumerate(expected):
        name = f"{base}.calls[{index}]"
        hit = next((i for i in left if not call_problems(want, actual[i])), None)
        if hit is not None:
            left.remove(hit)
            checks.append(Check(name, True, expected=want.tool, actual=shown[hit]))
            continue
        near = [i for i in left if actual[i].tool == want.tool]
        if near:  # the same tool, called otherwise: say which part differs
            checks += _call_checks(name, want, actual[near[0]])
        else:
            why = f"no call of {want.tool} (calls: {', '.join(c.tool for c in actual) or 'none'})"
            checks.append(Check(name, False, why, _wanted(want), shown))
    if order == "any_order" and left:
        extra = ", ".join(shown[i] for i in left)
        checks.append(Check(f"{base}.calls", False, f"unexpected calls: {extra}", None, shown))
    return checks


def _many(value: str | list[str] | None) -> list[str]:
    return [] if value is None else [value] if isinstance(value, str) else list(value)


def _answer(expect: AnswerExpect, outcome: Outcome) -> list[Check]:
    text, checks = outcome.answer_text, []
    short = text if len(text) <= 200 else text[:200] + "…"
    for index, part in enumerate(_many(expect.contains)):
        name = "expect.answer.contains" + (
            f"[{index}]" if isinstance(expect.contains, list) else ""
        )
        ok = part in text
        checks.append(Check(name, ok, "" if ok else f"{part!r} not in the answer", part, short))
    for index, part in enumerate(_many(expect.not_contains)):
        suffix = f"[{index}]" if isinstance(expect.not_contains, list) else ""
        ok = part not in text
        why = "" if ok else f"{part!r} is in the answer"
        checks.append(Check("expect.answer.not_contains" + suffix, ok, why, part, short))
    if expect.matches is not None:
        ok = re.search(expect.matches, text) is not None
        why = "" if ok else f"the answer does not match /{expect.matches}/"
        checks.append(Check("expect.answer.matches", ok, why, expect.matches, short))
    if "equals" in expect.model_fields_set:
        ok = outcome.result == expect.equals
        why = "" if ok else "the answer differs"
        checks.append(Check("expect.answer.equals", ok, why, expect.equals, outcome.result))
    return checks


def _result(expect: ResultExpect, result: Any) -> list[Check]:
    checks = []
    if expect.json_schema is not None:
        from jsonschema import Draft202012Validator

        errors = sorted(Draft202012Validator(expect.json_schema).iter_errors(result), key=str)
        why = "; ".join(
            f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in errors[:3]
        )
        checks.append(Check("expect.result.schema", not errors, why, expect.json_schema, result))
    if "subset" in expect.model_fields_set:
        ok = is_subset(expect.subset, result)
        why = "" if ok else "the result does not contain the expected subset"
        checks.append(Check("expect.result.subset", ok, why, expect.subset, result))
    return checks
