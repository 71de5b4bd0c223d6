"""What real MCP servers do that the demo server does not, against real stdio servers: ask for
input mid-call, offer only resources, offer 130 tools, share long name prefixes. And what
agentfn tells them about itself."""

from __future__ import annotations

import asyncio
import json
import sys
import tomllib
from collections.abc import Iterator
from typing import Any

import pytest

from runtime.spec import plain
from runtime.spec.tools import StdioMcpServer
from runtime.tools.base import ToolContext
from runtime.tools.mcp import LISTINGS, MAX_TOOLS, McpFailure, McpToolset
from runtime.tools.mcp.connection import VERSION, agentfn_version
from runtime.tools.mcp.names import MAX_NAME, assign_names, tool_name
from tests.helpers import ROOT

CTX = ToolContext(run_id="run-1", session_id="sess-1", agent="a", call_id="call-1")


def lab(*args: str) -> plain.StdioMcpServer:
    return StdioMcpServer.model_validate(
        {
            "transport": "stdio",
            "command": sys.executable,
            "args": ["-m", "tests.runtime.tools.lab_server", *args],
            "cwd": str(ROOT),
        }
    ).to_runtime()


def schemas(names: list[str]) -> plain.StdioMcpServer:
    """A stdio server offering exactly these tools (schema_server.py)."""
    tools = {name: {"type": "object"} for name in names}
    return StdioMcpServer.model_validate(
        {
            "transport": "stdio",
            "command": sys.executable,
            "args": ["-m", "tests.runtime.tools.schema_server", json.dumps(tools)],
            "cwd": str(ROOT),
        }
    ).to_runtime()


@pytest.fixture(autouse=True)
def fresh_listings() -> Iterator[None]:
    LISTINGS.clear()
    yield
    LISTINGS.clear()


async def _discover(
    servers: dict[str, Any], selection: list[str], **options: Any
) -> tuple[dict[str, Any], list[McpFailure], list[McpFailure]]:
    async with McpToolset(servers, selection, lambda text: text) as toolset:
        tools, failures = await toolset.discover(**options)
        return tools, failures, toolset.notes


def test_the_client_says_it_is_agentfn_and_declares_only_form_elicitation() -> None:
    async def scenario() -> Any:
        async with McpToolset({"lab": lab()}, ["mcp:lab/client"], lambda t: t) as toolset:
            tools, _ = await toolset.discover()
            return (await tools["mcp__lab__client"].call({}, CTX)).full["structuredContent"]

    declared = asyncio.run(scenario())
    assert declared == {
        "name": "agentfn",
        "version": agentfn_version(),
        "capabilities": {"elicitation": {"form": {}}},  # no URL mode, no sampling, no roots
    }
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert VERSION == pyproject["project"]["version"] == agentfn_version()


def test_a_servers_request_for_input_is_declined_and_the_model_told_what_was_asked() -> None:
    async def scenario() -> Any:
        async with McpToolset({"lab": lab()}, ["mcp:lab/book"], lambda t: t) as toolset:
            tools, _ = await toolset.discover()
            return await tools["mcp__lab__book"].call({"party": 2}, CTX)

    output = asyncio.run(scenario())
    server_said, note = output.text.split("\n", 1)
    assert server_said == "not booked: the client answered decline"  # a real decline
    assert not output.is_error  # the server's own verdict stands
    assert "MCP server 'lab' asked for input" in note
    assert '"Which date should the table be booked for?" (fields: date)' in note
    assert "agent_clarify" in note and "call the tool again" in note


def test_a_server_with_only_resources_and_prompts_is_reported_not_silently_empty() -> None:
    tools, failures, _ = asyncio.run(_discover({"docs": lab("--no-tools")}, ["mcp:docs"]))
    assert tools == {}
    assert failures == [
        McpFailure(
            "docs",
            "server docs offers no tools, only resources and prompts, which an agent cannot "
            "call; nothing of it is offered to the model",
        )
    ]


def test_servers_whose_names_share_a_long_prefix_keep_all_their_tools() -> None:
    prefix = "warehouse_inventory_management_system_for_the_region_of_"  # 56 characters
    servers = {f"{prefix}north": schemas(["lookup"]), f"{prefix}south": schemas(["lookup"])}
    tools, failures, notes = asyncio.run(_discover(servers, [f"mcp:{s}" for s in servers]))
    assert failures == [] and notes == []
    assert sorted(t.reference for t in tools.values()) == [
        f"mcp:{prefix}north/lookup",
        f"mcp:{prefix}south/lookup",
    ]
    assert all(len(name) <= MAX_NAME for name in tools)


def test_names_that_still_coincide_are_made_unique_and_the_collision_is_a_warning() -> None:
    servers = {"a": schemas(["b__c"]), "a__b": schemas(["c"])}
    tools, _, notes = asyncio.run(_discover(servers, ["mcp:a", "mcp:a__b"]))
    assert tools["mcp__a__b__c"].reference == "mcp:a/b__c"  # first in the agent's order
    renamed = tool_name("a__b", "c", hashed=True)
    assert tools[renamed].reference == "mcp:a__b/c"
    assert notes == [
        McpFailure(
            "a__b",
            f"tool 'c' is offered to the model as {renamed} because mcp__a__b__c is already "
            "the name of mcp:a/b__c",
        )
    ]
    # A declared tool's name is never taken either.
    names, collisions = assign_names([("x", "y")], taken=["mcp__x__y"])
    assert names[("x", "y")] != "mcp__x__y" and "another tool of this agent" in collisions[0][1]


def test_more_tools_than_a_model_request_may_carry_are_left_out_with_the_way_out() -> None:
    servers = {"big": schemas([f"t{n:03}" for n in range(130)]), "small": schemas(["a", "b"])}
    reserved = {"refund", "agent_clarify", "session_cache_get"}
    room = MAX_TOOLS - len(reserved)
    tools, failures, _ = asyncio.run(
        _discover(servers, ["mcp:big", "mcp:small/b"], limit=room, reserved=reserved)
    )
    assert len(tools) == room == 125
    assert "mcp__small__b" in tools  # selected by name: kept before whole servers' tools
    assert failures == [
        McpFailure(
            "big",
            "6 of its 130 tools were left out: with them the agent would offer 134 tools, "
            "more than the 128 a model request may carry (OpenAI's limit); select the tools "
            "it needs with mcp:big/TOOL",
        )
    ]
