"""Rule hooks on their own: every operator and its `not_` form, JSON paths, missing
arguments, `then` and `else`, the first denial winning; and the hook answer protocol."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.engine.hook_kinds import HookFailure, Verdict, parse_answer
from runtime.engine.hook_rules import RuleSet, RuleUnusable, parse_path
from runtime.spec.hooks import RuleHook

ARGS = {
    "order_id": "ORD-42",
    "note": "please refund",
    "amount": 12,
    "tags": ["vip", "eu"],
    "order": {"id": "ORD-7", "items": [{"sku": "A-1"}, {"sku": "B-2"}]},
}


def denies(rule: dict[str, Any], subject: Any = ARGS) -> str | None:
    hook = RuleHook.model_validate(
        {"event": "pre_tool_use", "type": "rule", "rules": [{"reason": "r", **rule}]}
    )
    return RuleSet(hook).denial(subject)


@pytest.mark.parametrize(
    ("arg", "op", "value", "holds"),
    [
        ("note", "contains", "refund", True),
        ("note", "contains", "cancel", False),
        ("tags", "contains", "vip", True),  # list membership
        ("tags", "contains", "v", False),
        ("amount", "contains", 2, True),  # as JSON text
        ("order_id", "starts_with", "ORD-", True),
        ("order_id", "starts_with", "INV-", False),
        ("order_id", "matches", r"^ORD-\d+$", True),
        ("order_id", "matches", r"^ORD-\d{3}$", False),
        ("amount", "in", [10, 12], True),
        ("amount", "in", [10, 11], False),
        ("amount", "equals", 12, True),
        ("amount", "equals", "12", False),
        ("order.id", "equals", "ORD-7", True),
        ("order.items[1].sku", "equals", "B-2", True),
        ("order.items[0].sku", "starts_with", "B", False),
        ("order", "contains", '"sku":"A-1"', True),  # an object as compact JSON text
    ],
)
def test_operators_and_their_negations(arg: str, op: str, value: Any, holds: bool) -> None:
    assert (denies({"arg": arg, "op": op, "value": value, "then": "deny"}) is not None) is holds
    assert (denies({"arg": arg, "op": op, "value": value, "else": "deny"}) is None) is holds
    negated = {"arg": arg, "op": f"not_{op}", "value": value, "then": "deny"}
    assert (denies(negated) is None) is holds


@pytest.mark.parametrize("arg", ["missing", "order.missing", "order.items[5].sku", "note.x"])
def test_a_missing_argument_cannot_be_evaluated_by_any_operator(arg: str) -> None:
    for rule in (
        {"arg": arg, "op": "equals", "value": None, "then": "deny"},
        {"arg": arg, "op": "matches", "value": ".*", "else": "deny"},
        {"arg": arg, "op": "not_contains", "value": "x", "else": "deny"},
    ):
        with pytest.raises(RuleUnusable, match="is not in the arguments"):
            denies(rule)


def test_without_arg_a_rule_reads_the_whole_value() -> None:
    assert denies({"op": "contains", "value": "DROP", "then": "deny"}, "x; DROP TABLE") == "r"
    assert denies({"op": "contains", "value": "refund", "then": "deny"}) == "r"  # JSON text


def test_the_first_rule_that_denies_wins_and_a_default_reason_names_it() -> None:
    hook = RuleHook.model_validate(
        {
            "event": "pre_tool_use",
            "type": "rule",
            "rules": [
                {"arg": "amount", "op": "in", "value": [12], "else": "deny", "reason": "first"},
                {"arg": "note", "op": "contains", "value": "refund", "then": "deny"},
                {"arg": "amount", "op": "equals", "value": 12, "then": "deny", "reason": "third"},
            ],
        }
    )
    assert RuleSet(hook).denial(ARGS) == "note failed the rule: contains 'refund'"


def test_paths() -> None:
    assert parse_path("order.items[0].sku") == ("order", "items", 0, "sku")
    assert parse_path("a-b.c_d[12]") == ("a-b", "c_d", 12)


@pytest.mark.parametrize(
    ("event", "answer", "verdict"),
    [
        ("pre_tool_use", None, Verdict("allow")),
        ("pre_tool_use", {"decision": "allow"}, Verdict("allow")),
        ("pre_tool_use", {"decision": "deny", "reason": "no"}, Verdict("deny", "no")),
        (
            "pre_tool_use",
            {"decision": "modify", "arguments": {"a": 1}, "extra": 1},
            Verdict("modify", None, {"a": 1}),
        ),
        ("post_tool_use", {"decision": "modify", "result": "x"}, Verdict("modify", None, "x")),
        (
            "pre_response",
            {"decision": "modify", "response": {"a": 1}},
            Verdict("modify", None, {"a": 1}),
        ),
        ("on_run_start", {"decision": "deny"}, Verdict("deny")),
    ],
)
def test_answers_in_the_protocol(event: str, answer: Any, verdict: Verdict) -> None:
    assert parse_answer(event, answer) == verdict


@pytest.mark.parametrize(
    ("event", "answer", "problem"),
    [
        ("pre_tool_use", [], "not a JSON object"),
        ("pre_tool_use", {}, "`decision` must be allow, deny or modify, got None"),
        ("post_tool_use", {"decision": "deny"}, "post_tool_use hooks cannot deny"),
        ("on_run_complete", {"decision": "deny"}, "on_run_complete hooks cannot deny"),
        ("on_run_start", {"decision": "modify", "input": "x"}, "on_run_start hooks cannot modify"),
        ("pre_response", {"decision": "modify", "result": "x"}, "needs `response`"),
        ("post_tool_use", {"decision": "modify"}, "needs `result`"),
    ],
)
def test_answers_outside_the_protocol(event: str, answer: Any, problem: str) -> None:
    with pytest.raises(HookFailure, match=problem):
        parse_answer(event, answer)


# ---- rules that cannot be evaluated, and what `matches` means (issue 22, point 7) --------


def test_a_rule_whose_arg_is_absent_is_a_failure_of_the_hook_not_a_pass() -> None:
    """`ammount` (a typo) never exists: the rule cannot be evaluated, whatever its phrasing,
    and says so instead of letting the call through as if the condition were false."""
    for action in ({"then": "deny"}, {"else": "deny"}):
        rule = {"arg": "ammount", "op": "in", "value": [1, 2, 3], **action}
        with pytest.raises(RuleUnusable, match="`ammount` is not in the arguments"):
            denies(rule, {"amount": 5000})
    with pytest.raises(RuleUnusable, match=r"`order.items\[5\].sku`"):
        denies({"arg": "order.items[5].sku", "op": "equals", "value": 1, "then": "deny"})


def test_a_rule_with_an_arg_on_a_text_answer_cannot_be_evaluated() -> None:
    with pytest.raises(RuleUnusable, match="a text"):
        denies({"arg": "secret", "op": "contains", "value": "x", "then": "deny"}, "plain text")


@pytest.mark.parametrize(
    ("pattern", "text", "holds"),
    [
        (r"^\d+$", "123", True),
        (r"^\d+$", "123\n", False),  # `$` is the very end: no trailing newline slips through
        (r"^\d+$", "\u0661\u0662\u0663", False),  # Arabic-Indic digits are not `\d`
        (r"^\w+$", "caf\u00e9", False),  # ASCII word characters only
        (r"^[$]\d$", "$5", True),  # a `$` inside a class is a character
        (r"^a\$$", "a$", True),  # an escaped `$` too
        (r"(?m)^ok$", "ok\nnext", True),  # with (?m), `$` ends each line, as documented
    ],
)
def test_matches_anchors_at_the_very_end_with_ascii_classes(
    pattern: str, text: str, holds: bool
) -> None:
    rule = {"arg": "v", "op": "matches", "value": pattern, "then": "deny"}
    assert (denies(rule, {"v": text}) is not None) is holds
