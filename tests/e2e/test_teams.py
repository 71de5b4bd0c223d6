"""Teams under moto, as deployed: each agent's code runs in its own function (a handoff moves
the run to the next agent's function), a sub-agent asked as a tool is a run of its own with
its own execution, and the parent waits for it without polling. Approvals inside a child
surface on the parent; cancelling the parent cancels the child; depth is limited."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from infra.local.aws import embedded_aws
from infra.local.embedded_stack import EmbeddedStack
from runtime.spec import AgentfnSpec
from tests.helpers import wait_for
from tests.runtime.engine.kit import TOOLS


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def _team(**defaults: Any) -> AgentfnSpec:
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "tools_package": "engine_tools",
            "defaults": defaults,
            "models": {
                "desk": {
                    "provider": "scripted",
                    "script": [
                        {"tool_calls": [_call("transfer_to_refunds", reason="a refund")]},
                        {"tool_calls": [_call("ask_researcher", task="price of ORD-1")]},
                        {"text": "All sorted."},
                    ],
                },
                "refunds": {
                    "provider": "scripted",
                    "script": [
                        {"tool_calls": [_call("transfer_to_auditor")]},
                        {"tool_calls": [_call("request_help", reason="needs the price first")]},
                    ],
                },
                "researcher": {
                    "provider": "scripted",
                    "script": [
                        {"tool_calls": [_call("charge", amount=1)]},
                        {"text": "ORD-1 costs 42 EUR."},
                    ],
                },
                "auditor": {"provider": "scripted", "script": [{"text": "audited"}]},
            },
            "tools": {"charge": TOOLS["charge"]},
            "agents": {
                "desk": {
                    "description": "Front desk.",
                    "model": "desk",
                    "sub_agents": ["refunds", {"agent": "researcher", "as": "tool"}],
                },
                "refunds": {
                    "description": "Refunds.",
                    "model": "refunds",
                    "sub_agents": ["auditor"],
                },
                "researcher": {
                    "description": "Looks things up.",
                    "model": "researcher",
                    "tools": ["charge"],
                    "approval": [{"tools": ["charge"]}],
                },
                "auditor": {"description": "Audits.", "model": "auditor"},
            },
        }
    )


@pytest.fixture
def team() -> Iterator[EmbeddedStack]:
    with embedded_aws() as clients:
        yield EmbeddedStack(_team(max_depth=1), clients)


def _status(stack: EmbeddedStack, run_id: str) -> str:
    return stack.service.engine.store.load_head(run_id).status


def _children(stack: EmbeddedStack, run_id: str) -> list[dict[str, Any]]:
    return list(stack.service.get(run_id).get("children", []))


@pytest.mark.parametrize("through", ["parent", "child"])
def test_a_handoff_escalation_and_child_with_an_approval_run_in_their_own_functions(
    team: EmbeddedStack, through: str
) -> None:
    _code, body = team.service.start("desk", "Refund ORD-1 please", wait_seconds=0)
    run_id = body["run_id"]
    # desk hands off to refunds (whose function takes over), refunds' own handoff to auditor
    # is refused (max_depth 1), it asks desk for help, desk asks researcher as a tool.
    wait_for(
        lambda: (c := _children(team, run_id)) and c[0].get("pending_approval"),
        what="the child's approval to show on the parent",
    )
    parent = team.service.get(run_id)
    assert parent["status"] == "awaiting_children"
    (child,) = parent["children"]
    assert child["agent"] == "researcher" and child["status"] == "awaiting_approval"
    team.service.approve(run_id if through == "parent" else child["run_id"], True, by="alice")
    wait_for(lambda: _status(team, run_id) == "succeeded", what="the parent to finish")
    result = team.service.get(run_id)
    assert result["result"] == "All sorted."
    assert result["agent_path"] == ["desk", "refunds", "desk"]
    asked = next(c for c in result["tool_calls"] if c["tool_name"] == "ask_researcher")
    assert asked["success"] and asked["output"] == "ORD-1 costs 42 EUR."
    assert asked["child_run_id"] == child["run_id"]
    assert set(result["usage_by_agent"]) >= {"desk", "refunds", "researcher"}
    # Each agent's model was asked by its own function only.
    for agent, service in team.step_services.items():
        asked_models = set(service.engine._model_cache)
        assert asked_models <= {agent}, (agent, asked_models)
    kinds = [e["type"] for e in team.service.events_after(run_id, limit=500)["events"]]
    for kind in ("handoff", "escalation", "child_run_started", "child_run_finished"):
        assert kind in kinds, kind
    # its own execution, which ends a moment after its head commits
    child_execution = wait_for(
        lambda: (e := team.execution(child["run_id"]))["status"] != "RUNNING" and e,
        what="the child's execution to end",
    )
    assert child_execution["status"] == "SUCCEEDED"


def test_cancelling_a_parent_cancels_its_running_child(team: EmbeddedStack) -> None:
    _code, body = team.service.start("desk", "Refund ORD-1 please", wait_seconds=0)
    run_id = body["run_id"]
    wait_for(
        lambda: (c := _children(team, run_id)) and c[0].get("pending_approval"),
        what="the child to wait",
    )
    child_id = _children(team, run_id)[0]["run_id"]
    team.service.cancel(run_id, by="ops")
    assert _status(team, child_id) == "cancelled"
    wait_for(lambda: team.execution(child_id)["status"] != "RUNNING", what="the child's execution")
    wait_for(lambda: team.execution(run_id)["status"] != "RUNNING", what="the parent's")


def test_a_delegation_beyond_max_depth_is_refused_and_the_run_goes_on(
    team: EmbeddedStack,
) -> None:
    _code, body = team.service.start("desk", "Refund ORD-1 please", wait_seconds=0)
    run_id = body["run_id"]
    wait_for(lambda: _children(team, run_id), what="the run to get past the refusal")
    result = team.service.get(run_id)
    refused = next(c for c in result["tool_calls"] if c["tool_name"] == "transfer_to_auditor")
    assert refused["success"] is False and "max_depth (1)" in refused["output"]["error"]
