"""The eval assertions and cassette helpers on their own: matchers, trajectory orders,
JSON subsets, the judge's answer, a mismatch's named difference, redaction."""

from __future__ import annotations

import pytest

from infra.evals.assertions import Call, Outcome, check_all, is_subset
from infra.evals.cassettes import _redact_url, differences
from infra.evals.format import Expect
from infra.evals.judge import parse_grade


def _outcome(*calls: tuple[str, dict[str, object]]) -> Outcome:
    return Outcome(
        "succeeded",
        result={"status": "delivered", "items": [{"sku": "A", "qty": 2}]},
        trajectory=[Call("clerk", tool, dict(args), True) for tool, args in calls],
    )


def _failed(expect: dict[str, object], outcome: Outcome) -> dict[str, str]:
    checks = check_all(Expect.model_validate(expect), outcome)
    return {c.name: c.why for c in checks if not c.ok}


def test_json_subset_needs_each_key_and_each_list_item_but_not_the_rest() -> None:
    actual = {"a": 1, "b": {"c": [1, 2, 3], "d": "x"}}
    assert is_subset({"b": {"c": [3, 1]}}, actual)
    assert not is_subset({"b": {"c": [1, 1]}}, actual)  # distinct items
    assert not is_subset({"a": True}, {"a": 1})  # a boolean is not a number
    assert is_subset({"a": 1.0}, actual)
    assert not is_subset({"e": None}, actual)


def test_in_order_names_the_position_and_the_argument_that_differ() -> None:
    outcome = _outcome(("lookup", {"id": "A-1"}), ("refund", {"amount": 5}), ("note", {}))
    expect = {
        "tools": {
            "order": "in_order",
            "calls": [
                {"tool": "lookup", "args": {"id": {"regex": "^A-"}}},
                {"tool": "refund", "args": {"amount": {"equals": 50}}},
            ],
        }
    }
    assert _failed(expect, outcome) == {
        "expect.tools.calls[1].args.amount": "5 does not equal 50",
        "expect.tools.calls": "unexpected calls after the expected ones: note({})",
    }


def test_any_order_and_subset_match_distinct_calls() -> None:
    outcome = _outcome(("b", {"x": [1, 2]}), ("a", {}), ("c", {}))
    calls = [{"tool": "a"}, {"tool": "b", "args": {"x": {"subset": [2]}}}]
    assert _failed({"tools": {"order": "subset", "calls": calls}}, outcome) == {}
    assert _failed({"tools": {"order": "any_order", "calls": calls}}, outcome) == {
        "expect.tools.calls": "unexpected calls: c({})"
    }
    twice = [{"tool": "a"}, {"tool": "a"}]
    assert _failed({"tools": {"order": "subset", "calls": twice}}, outcome) == {
        "expect.tools.calls[1]": "no call of a (calls: b, a, c)"
    }


def test_answer_and_result_assertions() -> None:
    outcome = _outcome()
    expect = {
        "answer": {"contains": ["delivered", "late"], "not_contains": "sku", "matches": "qty.: 2"},
        "result": {
            "schema": {"type": "object", "required": ["eta"]},
            "subset": {"items": [{"qty": 2}]},
        },
    }
    assert _failed(expect, outcome) == {
        "expect.answer.contains[1]": "'late' not in the answer",
        "expect.answer.not_contains": "'sku' is in the answer",
        "expect.result.schema": "(root): 'eta' is a required property",
    }


def test_the_judge_answers_a_grade_from_0_to_1() -> None:
    assert parse_grade('Sure: {"grade": 0.5, "reasoning": "half"}') == (0.5, "half")
    for bad in ("no json", '{"grade": 7}', '{"grade": true}', '{"reasoning": "x"}'):
        with pytest.raises(ValueError):
            parse_grade(bad)


def test_a_mismatch_names_where_the_request_differs() -> None:
    recorded = {"body": {"messages": [{"content": "A"}, {"content": "B"}], "tools": []}}
    now = {"body": {"messages": [{"content": "A"}, {"content": "C"}], "tools": [{"n": 1}]}}
    assert differences(recorded, now) == [
        'body.messages[1].content: recorded "B", now "C"',
        'body.tools[0]: not recorded, now {"n": 1}',
    ]


def test_keys_in_a_query_string_are_redacted() -> None:
    url = "https://example.test/v1beta/models/m:generateContent?key=AIzaSECRET&alt=sse"
    assert _redact_url(url) == (
        "https://example.test/v1beta/models/m:generateContent?key=<redacted>&alt=sse"
    )
