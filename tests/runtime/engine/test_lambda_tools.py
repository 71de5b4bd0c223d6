"""Lambda tools on the embedded AWS: invokes are dispatched to in-process functions."""

from __future__ import annotations

import asyncio
from typing import Any

from infra.local.aws import embedded_aws
from infra.local.local_lambda import register
from runtime.engine.loop import Engine
from runtime.spec import AgentfnSpec

ARN = "arn:aws:lambda:us-east-1:123456789012:function:"


def _spec(script: list[dict[str, Any]]) -> AgentfnSpec:
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "models": {"m": {"provider": "scripted", "script": script}},
            "tools": {
                "charge": {
                    "type": "lambda",
                    "function_arn": ARN + "charge",
                    "description": "Charge.",
                    "effect": "idempotent",
                },
                "broken": {
                    "type": "lambda",
                    "function_arn": ARN + "broken",
                    "description": "Fails.",
                },
                "missing": {
                    "type": "lambda",
                    "function_arn": ARN + "missing",
                    "description": "Absent.",
                },
            },
            "agents": {
                "a": {"description": "d", "model": "m", "tools": ["charge", "broken", "missing"]}
            },
        }
    )


def test_lambda_tools_get_the_payload_and_errors_become_tool_errors() -> None:
    seen: list[dict[str, Any]] = []

    def charge(event: dict[str, Any], context: Any) -> dict[str, Any]:
        seen.append(event)
        return {"charged": event["arguments"]["amount"], "by": context.function_name}

    def broken(event: dict[str, Any], context: Any) -> None:
        raise ValueError("card declined")

    script = [
        {
            "tool_calls": [
                {"name": "charge", "arguments": {"amount": 12.5}, "id": "call-A"},
                {"name": "broken", "arguments": {}},
                {"name": "missing", "arguments": {}},
            ]
        },
        {"text": "done"},
    ]
    with embedded_aws() as clients:
        register("charge", charge)
        register(ARN + "broken", broken)
        engine = Engine(_spec(script), clients.store(), lambda_client=lambda: clients.lambda_)
        head = asyncio.run(engine.run("a", "go"))
        assert head.status == "succeeded"
        records = engine.result(head.run_id)["tool_calls"]
        assert seen == [
            {
                "tool": "charge",
                "arguments": {"amount": 12.5},
                "idempotency_key": f"{head.run_id}:call-A",  # unique across runs
                "run_id": head.run_id,
            }
        ]
        assert records[0]["success"] and records[0]["output"] == {"charged": 12.5, "by": "charge"}
        assert records[1]["success"] is False
        assert (
            "ValueError: card declined"
            in records[1]["output"]["errorType"] + ": " + records[1]["output"]["errorMessage"]
        )
        assert (
            records[2]["success"] is False
            and "could not invoke missing" in records[2]["output"]["error"]
        )
        # Every Lambda output is kept whole in the session's cache.
        key = f"tool-cache/a/{head.session_id}/{head.run_id}/call-A"
        body = clients.s3.get_object(Bucket=clients.bucket, Key=key)["Body"].read()
        assert b'"charged": 12.5' in body
