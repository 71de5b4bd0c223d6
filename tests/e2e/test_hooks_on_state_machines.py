"""Hooks under the generated state machines (moto): the demo's billing agent with a Lambda
pre_tool_use hook and a rule. The hook is asked once, in the agent's own function, before
the run pauses; the approver sees its arguments, and the run resumed by another invocation
applies the committed decision without asking again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from infra.local.aws import embedded_aws
from infra.local.embedded_stack import EmbeddedStack
from infra.local.local_lambda import register
from runtime.spec import AgentfnSpec
from tests.e2e.test_state_machines import DEMO, _finished, _paused

GUARD = "arn:aws:lambda:us-east-1:123456789012:function:refund-guard"


def _with_hooks() -> AgentfnSpec:
    data = DEMO.to_compiled()
    data["agents"]["billing"]["hooks"] = [  # type: ignore[index]
        {
            "event": "pre_tool_use",
            "match": "issue_refund",
            "type": "rule",
            "rules": [{"arg": "order_id", "op": "matches", "value": "^ORD-\\d+$", "else": "deny"}],
        },
        {"event": "pre_tool_use", "match": "issue_refund", "type": "lambda", "function_arn": GUARD},
    ]
    return AgentfnSpec.model_validate(data)


@pytest.fixture
def hooked_stack() -> Iterator[EmbeddedStack]:
    with embedded_aws() as clients:
        yield EmbeddedStack(_with_hooks(), clients)


def test_a_lambda_hook_is_asked_once_across_the_approval_wait(hooked_stack: EmbeddedStack) -> None:
    asked: list[dict[str, Any]] = []

    def guard(event: dict[str, Any], context: Any) -> dict[str, Any]:
        asked.append(event)
        arguments = {**event["tool"]["arguments"], "amount": 100.0}
        return {"decision": "modify", "arguments": arguments, "reason": "capped at 100"}

    register(GUARD, guard)
    run_id = _paused(hooked_stack, "billing", "Refund ORD-1001, it broke", "awaiting_approval")
    pending = hooked_stack.service.get(run_id)["pending_approval"]
    assert [p["inputs"]["amount"] for p in pending] == [100.0]  # as the hook left them
    hooked_stack.service.approve(run_id, True)
    done = _finished(hooked_stack, run_id)
    assert done["execution"]["status"] == "SUCCEEDED"
    refund = done["result"]["tool_calls"][0]
    assert refund["success"] and refund["inputs"]["amount"] == 100.0
    assert refund["output"]["amount"] == 100.0
    assert len(asked) == 1 and asked[0]["agent"] == "billing"
    events = hooked_stack.service.engine.store.list_events(run_id, limit=1000)
    decisions = [(e.data["type"], e.data["decision"]) for e in events if e.type == "hook_decision"]
    assert decisions == [("rule", "allow"), ("lambda", "modify")]
