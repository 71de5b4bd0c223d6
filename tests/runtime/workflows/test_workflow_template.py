"""The workflow template language: references render, conditions compare, nothing runs."""

from __future__ import annotations

import pytest

from runtime.workflows.template import TemplateError, holds, parse_condition, references, render

SCOPE = {
    "ticket": "T-1",
    "input": {"ticket": "T-1"},
    "classify": {"category": "billing", "score": 0.8, "tags": ["a", "b"], "ok": True},
    "investigate": ["logs fine", None, {"refund": 5}],
    "empty": "",
    "no": "false",
}


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("Ticket {ticket}", "Ticket T-1"),
        ("{classify.category}/{classify.tags.1}", "billing/b"),
        ("{investigate}", '["logs fine",null,{"refund":5}]'),
        ("{investigate.2.refund} {investigate.1}", "5 "),
        ("{missing} {classify.nope} {classify.tags.9}", "  "),
        ("{{literal}} {{ticket}} {ticket}", "{literal} {ticket} T-1"),
        ("{input}", '{"ticket":"T-1"}'),
    ],
)
def test_render(template: str, expected: str) -> None:
    assert render(template, SCOPE) == expected


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("{classify.category} == 'billing'", True),
        ('{classify.category} != "billing"', False),
        ("{classify.ok}", True),
        ("not {classify.ok}", False),
        ("{empty}", False),
        ("{no}", False),  # a model's "false" is false
        ("{missing}", False),
        ("{classify.score} >= 0.5 and {classify.score} < 1", True),
        ("{classify.score} > 1 or {ticket} == 'T-1'", True),
        ("({classify.score} > 1 or {ticket} == 'T-2') and {classify.ok}", False),
        ("{classify.category} > 5", False),  # unlike types never compare
        ("{classify.ok} == true", True),
        ("{investigate.1} == null", True),
        ("{ticket} == {input.ticket}", True),
        ("{classify.category} == 'it\\'s'", False),
    ],
)
def test_conditions(condition: str, expected: bool) -> None:
    assert holds(condition, SCOPE) is expected


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "{a} ==",
        "{a} = 'x'",
        "'x' == {a}",
        "not {a} == 'x'",
        "({a}",
        "{a} 'x'",
        "__import__('os')",
        "{a.__class__}; 1",
    ],
)
def test_conditions_that_do_not_parse(bad: str) -> None:
    with pytest.raises(TemplateError):
        parse_condition(bad)


def test_references_skip_literal_braces() -> None:
    assert references("{a} {{b}} {c.d.0}") == ["a", "c.d.0"]
