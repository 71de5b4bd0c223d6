"""HTTP tools inside real runs, against a real loopback server (explicitly allowlisted)."""

from __future__ import annotations

import asyncio

from runtime.spec import AgentfnSpec
from runtime.structs import encode
from tests.runtime.engine.kit import new_engine
from tests.runtime.tools.local_http import serve


def test_an_http_tool_call_reaches_the_server_once_with_run_and_call_as_idempotency_key(
    monkeypatch,
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("AGENTFN_SECRET_CRM_TOKEN", "s3cret-value")
    with serve() as server:
        spec = AgentfnSpec.model_validate(
            {
                "version": 1,
                "secrets": {"crm-token": {}},
                "models": {
                    "m": {
                        "provider": "scripted",
                        "script": [
                            {
                                "tool_calls": [
                                    {
                                        "name": "account",
                                        "arguments": {"customer_id": "CUST 42", "verbose": True},
                                        "id": "call-X",
                                    }
                                ]
                            },
                            {"tool_calls": [{"name": "blocked", "arguments": {}}]},
                            {"text": "done"},
                        ],
                    }
                },
                "tools": {
                    "account": {
                        "type": "http",
                        "url": f"{server.url}/accounts/{{customer_id}}",
                        "description": "Look up an account.",
                        "effect": "read_only",
                        "headers": {"Authorization": "Bearer ${secret:crm-token}"},
                        "allow_private": ["127.0.0.1"],
                        "input_schema": {
                            "type": "object",
                            "properties": {
                                "customer_id": {"type": "string"},
                                "verbose": {"type": "boolean"},
                            },
                            "required": ["customer_id"],
                        },
                    },
                    "blocked": {
                        "type": "http",
                        "url": f"{server.url}/private",
                        "description": "No allowlist.",
                    },
                },
                "agents": {
                    "a": {"description": "d", "model": "m", "tools": ["account", "blocked"]}
                },
            }
        )
        engine = new_engine(spec)
        head = asyncio.run(engine.run("a", "look up CUST 42"))
        assert head.status == "succeeded"
        assert len(server.requests) == 1  # the guarded tool never reached the server
        sent = server.requests[0]
        assert sent.path == "/accounts/CUST%2042" and sent.query == {"verbose": ["true"]}
        assert sent.headers["idempotency-key"] == f"{head.run_id}:call-X"  # unique per run
        assert sent.headers["authorization"] == "Bearer s3cret-value"
        account, blocked = engine.result(head.run_id)["tool_calls"]
        assert account["success"] and account["output"]["status"] == 200
        assert account["output"]["body"]["path"] == "/accounts/CUST%2042"
        assert blocked["success"] is False and "refused" in blocked["output"]["error"]
        messages = engine.store.load_messages(head)
        assert all("s3cret-value" not in encode(m) for m in messages)
