"""A stdio MCP server whose tools carry exactly the input schemas it is given, hostile ones
included (the SDK's decorators would derive clean schemas from type hints).

    python -m tests.runtime.tools.schema_server '{"tool_name": {...inputSchema...}}'

Every call answers `{name} called`, so a test can tell a call that reached the server from
one that was refused before it.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

SCHEMAS: dict[str, dict[str, Any]] = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    tools = [types.Tool(name=name, input_schema=schema) for name, schema in SCHEMAS.items()]
    return types.ListToolsResult(tools=tools)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"{params.name} called")]
    )


server = Server("schemas", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
