"""MCP tools inside real runs: the shipped stdio server, and a server that is down."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from runtime.spec import AgentfnSpec
from tests.runtime.engine.kit import new_engine

ORDERS = {
    "transport": "stdio",
    "command": "python",
    "args": ["-m", "tools.mcp_servers.orders_server"],
    "timeout": 20,
}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spec(script: list[dict[str, Any]], tools: list[str], servers: dict[str, Any]) -> AgentfnSpec:
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "models": {"m": {"provider": "scripted", "script": script}},
            "mcp_servers": servers,
            "agents": {"a": {"description": "d", "model": "m", "tools": tools}},
        }
    )


def test_mcp_tools_are_called_cached_and_a_down_server_is_a_warning_not_a_failure() -> None:
    script = [
        {
            "tool_calls": [
                {"name": "mcp__orders__track_shipment", "arguments": {"order_id": "ORD-1001"}}
            ]
        },
        {
            "tool_calls": [
                {"name": "mcp__orders__track_shipment", "arguments": {"order_id": "ORD-404"}}
            ]
        },
        {"text": "done"},
    ]
    servers = {
        "orders": ORDERS,
        "crm": {"transport": "http", "url": f"http://127.0.0.1:{_closed_port()}/mcp", "timeout": 3},
    }
    engine = new_engine(_spec(script, ["mcp:orders", "mcp:crm"], servers))
    head = asyncio.run(engine.run("a", "where is it?"))
    assert head.status == "succeeded"
    result = engine.result(head.run_id)
    found, missing = result["tool_calls"]
    assert found["success"] and "ORD-1001" in str(found["output"])
    assert missing["success"] is False  # the server's isError result
    assert len(result["warnings"]) == 1 and result["warnings"][0].startswith("mcp:crm: ")
    events = [e for e in engine.store.list_events(head.run_id) if e.type == "tools_unavailable"]
    assert [e.data["server"] for e in events] == ["crm"]
    offered = {t.name for t in engine._model_cache["m"].requests[0].tools}
    assert {
        "mcp__orders__track_shipment",
        "mcp__orders__cancel_order",
        "mcp__orders__shipping_label",
    } <= offered
    messages = engine.store.load_messages(head)
    first_call = result["tool_calls"][0]["tool_call_id"]
    ref = next(m.full_output_ref for m in messages if getattr(m, "tool_call_id", "") == first_call)
    assert b"ORD-1001" in engine.store.blobs.get(ref)  # the whole output is in the cache


def test_destructive_mcp_tools_wait_for_approval() -> None:
    script = [
        {
            "tool_calls": [
                {
                    "name": "mcp__orders__cancel_order",
                    "arguments": {"order_id": "ORD-1002", "reason": "dup"},
                }
            ]
        },
        {"text": "ok"},
    ]
    spec = _spec(script, ["mcp:orders"], {"orders": ORDERS})
    data = spec.model_dump(mode="json", by_alias=True)
    data["agents"]["a"]["approval"] = [{"destructive": True}]
    engine = new_engine(AgentfnSpec.model_validate(data))
    head = asyncio.run(engine.run("a", "cancel it"))
    assert head.status == "awaiting_approval"
    assert [p.tool_name for p in head.pending_approval] == ["mcp__orders__cancel_order"]
