"""MCP tools inside real runs: the shipped stdio server, the lab server (tests/runtime/tools/
lab_server.py), a 130-tool server, and servers that are down or offer no tools."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from runtime.messages import ToolResultMessage
from runtime.spec import AgentfnSpec
from runtime.tools.mcp import LISTINGS
from tests.helpers import ROOT
from tests.runtime.engine.kit import new_engine

ORDERS = {
    "transport": "stdio",
    "command": "python",
    "args": ["-m", "tools.mcp_servers.orders_server"],
    "timeout": 20,
}


@pytest.fixture(autouse=True)
def fresh_listings() -> Iterator[None]:
    LISTINGS.clear()  # the engine's clock is fake: listings would outlive their test
    yield
    LISTINGS.clear()


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


LAB = {
    "transport": "stdio",
    "command": "python",
    "args": ["-m", "tests.runtime.tools.lab_server"],
    "cwd": str(ROOT),
}


def _requests(engine: Any) -> list[Any]:
    return engine._model_cache["m"].requests


def _seen(engine: Any, request: int) -> list[ToolResultMessage]:
    """The tool results the model was sent in its `request`-th call."""
    return [m for m in _requests(engine)[request].messages if isinstance(m, ToolResultMessage)]


def test_an_mcp_call_is_bounded_by_the_agents_tool_timeout() -> None:
    script = [
        {"tool_calls": [{"name": "mcp__lab__work", "arguments": {"seconds": 20}}]},
        {"text": "gave up"},
    ]
    spec = _spec(script, ["mcp:lab"], {"lab": LAB})
    data = spec.model_dump(mode="json", by_alias=True)
    data["agents"]["a"]["tool_timeout"] = "1s"
    engine = new_engine(AgentfnSpec.model_validate(data))
    started = time.monotonic()
    head = asyncio.run(engine.run("a", "work"))
    assert time.monotonic() - started < 10  # not the server's 20 s of work, nor a 30 s default
    (record,) = engine.result(head.run_id)["tool_calls"]
    assert record["success"] is False
    assert record["output"] == {"error": "mcp__lab__work timed out after 1s"}


def test_a_declined_elicitation_lets_the_model_ask_the_user_instead() -> None:
    script = [
        {"tool_calls": [{"name": "mcp__lab__book", "arguments": {"party": 4}}]},
        {"tool_calls": [{"name": "agent_clarify", "arguments": {"question": "Which date?"}}]},
    ]
    engine = new_engine(_spec(script, ["mcp:lab"], {"lab": LAB}))
    head = asyncio.run(engine.run("a", "book a table for four"))
    assert head.status == "awaiting_input"
    assert head.clarification is not None and head.clarification.question == "Which date?"
    (booking,) = _seen(engine, 1)
    assert booking.content.startswith("not booked: the client answered decline\n")
    assert "asked for input" in booking.content and "agent_clarify" in booking.content


def test_list_tools_available_names_the_servers_that_are_unavailable() -> None:
    script = [{"tool_calls": [{"name": "list_tools_available", "arguments": {}}]}, {"text": "ok"}]
    servers = {
        "orders": ORDERS,
        "crm": {"transport": "http", "url": f"http://127.0.0.1:{_closed_port()}/mcp", "timeout": 3},
        "docs": {**LAB, "args": [*LAB["args"], "--no-tools"]},
    }
    tools = ["mcp:orders/track_shipment", "mcp:crm", "mcp:docs", "builtin:list_tools_available"]
    engine = new_engine(_spec(script, tools, servers))
    head = asyncio.run(engine.run("a", "what can you do?"))
    listing = engine.result(head.run_id)["tool_calls"][0]["output"]
    missing = {e["name"]: e["unavailable"] for e in listing if "unavailable" in e}
    assert set(missing) == {"mcp:crm", "mcp:docs"}
    assert missing["mcp:crm"].startswith("ConnectError")
    assert "offers no tools, only resources and prompts" in missing["mcp:docs"]
    assert "mcp__orders__track_shipment" in {e["name"] for e in listing}


def test_a_130_tool_server_is_cut_to_what_a_model_request_may_carry_with_a_warning() -> None:
    schemas = {f"t{n:03}": {"type": "object"} for n in range(130)}
    big = {
        "transport": "stdio",
        "command": "python",
        "args": ["-m", "tests.runtime.tools.schema_server", json.dumps(schemas)],
        "cwd": str(ROOT),
    }
    engine = new_engine(_spec([{"text": "ok"}], ["mcp:big"], {"big": big}))
    head = asyncio.run(engine.run("a", "hi"))
    assert head.status == "succeeded"
    offered = [t.name for t in _requests(engine)[0].tools]
    # At most 128 in any role the agent may play (a supervised one has 4 team tools more);
    # its own tools always stay.
    assert 120 <= len(offered) <= 128
    builtins = {"agent_clarify", "session_cache_list", "session_cache_get"}
    builtins |= {"get_time_date", "list_tools_available"}  # the default tools
    assert builtins <= set(offered)
    (warning,) = engine.result(head.run_id)["warnings"]
    left_out = 130 - (len(offered) - len(builtins))
    assert warning.startswith(f"mcp:big: {left_out} of its 130 tools were left out")
    assert "more than the 128 a model request may carry" in warning
    assert warning.endswith("select the tools it needs with mcp:big/TOOL")


def test_session_cache_get_continues_exactly_where_the_preview_of_an_mcp_output_ended() -> None:
    from tests.runtime.tools.lab_server import essay

    script = [
        {"tool_calls": [{"name": "mcp__lab__text", "arguments": {"size": 3000}, "id": "c1"}]},
        {"tool_calls": [{"name": "session_cache_get", "arguments": {"id": "c1", "offset": 100}}]},
        {"tool_calls": [{"name": "mcp__lab__broken", "arguments": {}}]},
        {"text": "read"},
    ]
    spec = _spec(script, ["mcp:lab"], {"lab": LAB})
    data = spec.model_dump(mode="json", by_alias=True)
    data["agents"]["a"]["tool_result_max_chars"] = 100
    engine = new_engine(AgentfnSpec.model_validate(data))
    head = asyncio.run(engine.run("a", "read it"))
    text = essay(3000)
    _, page, broken = engine.result(head.run_id)["tool_calls"]
    assert (page["output"]["offset"], page["output"]["total"]) == (100, 3000)
    assert page["output"]["content"] == text[100:3000]  # the same text, not its JSON form
    (preview,) = _seen(engine, 1)
    assert preview.content.startswith(text[:100] + "\n[output truncated: 100 of 3000 characters")
    assert "session_cache_get(id=" in preview.content and "offset=100" in preview.content
    assert broken["success"] is False  # an isError result stays a failure


def _both(turns: int) -> list[dict[str, Any]]:
    calls = [
        {"name": "mcp__lab__lookup", "arguments": {"key": "k"}},
        {"name": "mcp__lab__quote", "arguments": {"symbol": "X"}},
    ]
    return [*({"tool_calls": calls} for _ in range(turns)), {"text": "ok"}]


def test_open_world_mcp_tools_are_never_answered_from_the_cache_and_are_flagged() -> None:
    """With the server's cache_reuse, a repeated closed-world read is answered from the
    session cache (the server is not asked again); a repeated open-world one is asked again,
    and its tool_call events say open_world."""
    servers = {"lab": {**LAB, "cache_reuse": True}}
    engine = new_engine(_spec(_both(2), ["mcp:lab/lookup", "mcp:lab/quote"], servers))
    head = asyncio.run(engine.run("a", "twice"))
    assert head.status == "succeeded"
    outputs: dict[str, list[str]] = {}
    for call in engine.result(head.run_id)["tool_calls"]:
        outputs.setdefault(call["tool_name"], []).append(str(call["output"]))
    first, again = outputs["mcp__lab__lookup"]
    assert first == again  # reused: the server numbered one call
    quoted, requoted = outputs["mcp__lab__quote"]
    assert quoted != requoted  # asked twice
    flagged = {
        e.data["tool_name"]: e.data.get("open_world")
        for e in engine.store.list_events(head.run_id)
        if e.type == "tool_call"
    }
    assert flagged == {"mcp__lab__quote": True, "mcp__lab__lookup": None}


def test_an_open_world_approval_rule_gates_open_world_tools_only() -> None:
    spec = _spec(_both(1), ["mcp:lab/lookup", "mcp:lab/quote"], {"lab": LAB})
    data = spec.model_dump(mode="json", by_alias=True)
    data["agents"]["a"]["approval"] = [{"open_world": True}]
    engine = new_engine(AgentfnSpec.model_validate(data))
    head = asyncio.run(engine.run("a", "both"))
    assert head.status == "awaiting_approval"
    assert [p.tool_name for p in head.pending_approval] == ["mcp__lab__quote"]
