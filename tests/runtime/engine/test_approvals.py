"""Approval gates: pause before gated calls, then approve / reject / edit / time out."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from runtime.engine.approval import rule_for
from runtime.errors import InvalidRequest, WrongState
from runtime.tools.base import FunctionTool
from tests.runtime.engine.kit import CALLS, call, make_spec, new_engine

TWO_CHARGES = [
    {
        "tool_calls": [
            call("echo", {"text": "before"}, id="call-1-1"),
            call("charge", {"amount": 5}, id="call-1-2"),
            call("charge", {"amount": 7}, id="call-1-3"),
        ]
    },
    {"text": "done"},
]
RULE = [{"tools": ["charge"], "timeout": "30m", "decisions": ["approve", "reject", "edit"]}]


def _paused(
    script: list[dict[str, Any]] = TWO_CHARGES, rules: list[dict[str, Any]] = RULE
) -> tuple[Any, str]:
    engine = new_engine(make_spec(script, tools=["echo", "charge"], approval=rules))
    CALLS.clear()
    head = asyncio.run(engine.run("a", "charge twice"))
    return engine, head.run_id


def _finish(engine: Any, run_id: str) -> dict[str, Any]:
    asyncio.run(engine.advance(run_id))
    return engine.result(run_id)


def test_gated_calls_pause_the_run_together_after_ungated_ones_ran() -> None:
    engine, run_id = _paused()
    result = engine.result(run_id)
    assert result["status"] == "awaiting_approval"
    pending = result["pending_approval"]
    assert [(p["tool_name"], p["inputs"]) for p in pending] == [
        ("charge", {"amount": 5}),
        ("charge", {"amount": 7}),
    ]
    head = engine.store.load_head(run_id)
    assert all(p["expires_at"] == pytest.approx(head.updated_at + 1800, abs=1) for p in pending)
    assert [c[0] for c in CALLS] == ["echo"]  # nothing gated ran
    events = [e.type for e in engine.store.list_events(run_id)]
    assert events[-1] == "approval_requested"


def test_approve_all_runs_them_in_order() -> None:
    engine, run_id = _paused()
    engine.decide(run_id, approved=True)
    result = _finish(engine, run_id)
    assert result["status"] == "succeeded"
    assert CALLS == [
        ("echo", {"text": "before"}),
        ("charge", {"amount": 5}),
        ("charge", {"amount": 7}),
    ]


def test_decide_one_by_one_reject_tells_the_model_why() -> None:
    engine, run_id = _paused()
    head = engine.decide(run_id, approved=False, tool_call_id="call-1-2", reason="too much")
    assert head.status == "awaiting_approval" and len(head.pending_approval) == 1
    head = engine.decide(run_id, approved=True, tool_call_id="call-1-3")
    assert head.status == "running"
    result = _finish(engine, run_id)
    charges = [c for c in result["tool_calls"] if c["tool_name"] == "charge"]
    assert (
        charges[0]["success"] is False
        and "rejected this call: too much" in charges[0]["output"]["error"]
    )
    assert charges[1]["success"] is True
    assert [c for c in CALLS if c[0] == "charge"] == [("charge", {"amount": 7})]


def test_edit_runs_the_call_with_validated_new_inputs() -> None:
    engine, run_id = _paused()
    with pytest.raises(InvalidRequest) as bad:
        engine.decide(run_id, approved=True, tool_call_id="call-1-2", edited_inputs={"amount": -1})
    assert bad.value.field == "edited_inputs" and "amount" in str(bad.value)
    engine.decide(run_id, approved=True, tool_call_id="call-1-2", edited_inputs={"amount": 4})
    engine.decide(run_id, approved=True, tool_call_id="call-1-3")
    result = _finish(engine, run_id)
    assert [c for c in CALLS if c[0] == "charge"] == [
        ("charge", {"amount": 4}),
        ("charge", {"amount": 7}),
    ]
    assert result["tool_calls"][1]["inputs"] == {"amount": 4}


def test_edit_is_refused_when_the_rule_does_not_allow_it() -> None:
    engine, run_id = _paused(rules=[{"tools": ["charge"]}])  # default: approve, reject
    with pytest.raises(InvalidRequest, match="'edit' is not allowed"):
        engine.decide(run_id, approved=True, tool_call_id="call-1-2", edited_inputs={"amount": 1})


def test_a_timeout_blocks_the_calls_with_approval_timeout_and_the_run_carries_on() -> None:
    engine, run_id = _paused()
    engine.expire_approvals(run_id)
    result = _finish(engine, run_id)
    assert result["status"] == "succeeded"
    errors = [c["output"]["error"] for c in result["tool_calls"] if c["tool_name"] == "charge"]
    assert len(errors) == 2 and all(e.startswith("APPROVAL_TIMEOUT") for e in errors)
    assert not [c for c in CALLS if c[0] == "charge"]


def test_a_second_decision_or_a_decision_on_a_run_not_waiting_is_refused() -> None:
    engine, run_id = _paused()
    engine.decide(run_id, approved=True, tool_call_id="call-1-2")
    with pytest.raises(WrongState):
        engine.decide(run_id, approved=False, tool_call_id="call-1-2")
    with pytest.raises(InvalidRequest) as unknown:
        engine.decide(run_id, approved=True, tool_call_id="nope")
    assert unknown.value.not_found
    engine.decide(run_id, approved=True)
    _finish(engine, run_id)
    with pytest.raises(WrongState) as done:
        engine.decide(run_id, approved=True)
    assert done.value.status == "succeeded"
    assert [c for c in CALLS if c[0] == "charge"] == [
        ("charge", {"amount": 5}),
        ("charge", {"amount": 7}),
    ]


def test_decisions_do_not_accumulate_on_the_head() -> None:
    engine, run_id = _paused()
    engine.decide(run_id, approved=True)
    _finish(engine, run_id)
    assert engine.store.load_head(run_id).decisions == {}


def test_rules_match_globs_builtins_and_destructive_tools() -> None:
    spec = make_spec(
        [{"text": "x"}],
        tools=["echo", "charge", "builtin:get_time_date"],
        approval=[{"tools": ["ch*"]}, {"tools": ["builtin:get_time_date"]}, {"destructive": True}],
    )
    tools = new_engine(spec)._tools("a")
    assert rule_for(spec, "a", tools["charge"]) is spec.agents["a"].approval[0]
    assert rule_for(spec, "a", tools["get_time_date"]) is spec.agents["a"].approval[1]
    assert rule_for(spec, "a", tools["echo"]) is None
    assert rule_for(spec, "a", None) is None  # an unknown tool runs nothing
    wiper = FunctionTool(
        "mcp__db__wipe",
        "Wipe.",
        {"type": "object"},
        func=None,
        destructive=True,
        reference="mcp:db/wipe",
    )
    assert rule_for(spec, "a", wiper) is spec.agents["a"].approval[2]


def test_a_rule_without_a_matcher_gates_every_tool() -> None:
    """Seed 004 (issue 25): an approval rule with no `tools` (and no `destructive`) gates
    every tool; `destructive: true` alone still gates only destructive tools."""
    engine, run_id = _paused(rules=[{"timeout": "30m"}])
    pending = engine.result(run_id)["pending_approval"]
    assert [p["tool_name"] for p in pending] == ["echo", "charge", "charge"]
    assert CALLS == []  # not even the read-only echo ran
    spec = make_spec([{"text": "x"}], tools=["echo"], approval=[{"destructive": True}])
    echo = FunctionTool("echo", "e", {}, func=None, reference="echo")
    assert rule_for(spec, "a", echo) is None


def test_an_empty_tools_list_is_a_validation_error(tmp_path: Any) -> None:
    from infra.checks.validate import validate_file
    from tests.infra.checks.test_validate_bad import _write_project

    text = """\
version: 1
models:
  m: {provider: scripted, script: [{text: hi}]}
agents:
  a:
    description: d
    model: m
    approval:
      - tools: []  #!
"""
    spec, line = _write_project(tmp_path, text)
    result = validate_file(spec)
    issues = [i for i in result.issues if "omit `tools` to gate every tool" in i.message]
    assert issues and issues[0].line == line, [str(i) for i in result.issues]
