"""lambda hooks on the embedded AWS (moto): invokes are dispatched to in-process functions
through the engine's Lambda client, like Lambda tools."""

from __future__ import annotations

import asyncio
from typing import Any

from infra.local.aws import embedded_aws
from infra.local.local_lambda import register
from runtime.engine.loop import Engine
from runtime.spec import AgentfnSpec
from tests.runtime.engine.hook_kit import hook_events, hooked, results
from tests.runtime.engine.kit import CALLS, call

ARN = "arn:aws:lambda:us-east-1:123456789012:function:"


def _spec(hooks: list[dict[str, Any]]) -> AgentfnSpec:
    script = [
        {"tool_calls": [call("charge", {"amount": 5}, id="call-1")]},
        {"tool_calls": [call("echo", {"text": "pin 1234"}, id="call-2")]},
        {"text": "done"},
    ]
    return hooked(script, tools=["charge", "echo"], agent=hooks)


def lam(event: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"event": event, "type": "lambda", "function_arn": ARN + name, **fields}


def test_lambda_hooks_deny_modify_and_fire_and_forget() -> None:
    seen: list[dict[str, Any]] = []

    def guard(event: dict[str, Any], context: Any) -> dict[str, Any]:
        seen.append(event)
        if event["tool"]["name"] == "charge":
            return {"decision": "deny", "reason": f"{context.function_name} says no"}
        return {"decision": "allow"}

    def redact(event: dict[str, Any], context: Any) -> dict[str, Any]:
        seen.append(event)
        return {"decision": "modify", "result": event["result"]["content"].replace("1234", "****")}

    def notify(event: dict[str, Any], context: Any) -> None:
        seen.append(event)
        raise ValueError("mail server down")

    hooks = [
        lam("pre_tool_use", "guard"),
        lam("post_tool_use", "redact", match="echo"),
        lam("on_run_complete", "notify"),
    ]
    with embedded_aws() as clients:
        register("guard", guard)
        register("redact", redact)
        register("notify", notify)
        engine = Engine(_spec(hooks), clients.store(), lambda_client=lambda: clients.lambda_)
        CALLS.clear()
        head = asyncio.run(engine.run("a", "go"))
        head = engine.store.load_head(head.run_id)
        assert head.status == "succeeded"  # on_run_complete's failure does not fail it
        assert CALLS == [("echo", {"text": "pin 1234"})]
        charge, echo = results(engine, head.run_id)
        assert not charge.success and "guard says no" in charge.content
        assert echo.content == "echo: pin ****"
        assert [e["event"] for e in seen] == [
            "pre_tool_use",
            "pre_tool_use",
            "post_tool_use",
            "on_run_complete",
        ]
        assert seen[0]["run_id"] == head.run_id and seen[0]["tool"]["call_id"] == "call-1"
        decisions = [(e["event"], e["decision"]) for e in hook_events(engine, head.run_id)]
        assert decisions == [
            ("pre_tool_use", "deny"),
            ("pre_tool_use", "allow"),
            ("post_tool_use", "modify"),
            ("on_run_complete", "allow"),
        ]
        failed = hook_events(engine, head.run_id)[-1]
        assert "the function failed: ValueError: mail server down" in failed["error"]
        assert any("mail server down" in w for w in head.warnings)


def test_a_missing_function_fails_closed_when_told_to() -> None:
    with embedded_aws() as clients:
        hooks = [lam("pre_tool_use", "absent", match="charge", on_error="deny")]
        engine = Engine(_spec(hooks), clients.store(), lambda_client=lambda: clients.lambda_)
        CALLS.clear()
        head = asyncio.run(engine.run("a", "go"))
        assert head.status == "succeeded"
        charge, _ = results(engine, head.run_id)
        assert not charge.success and "could not invoke" in charge.content
        assert CALLS == [("echo", {"text": "pin 1234"})]
