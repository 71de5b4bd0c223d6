"""Resolve an agent's tool references into the Tool objects its runs use."""

from __future__ import annotations

from runtime.errors import NotImplementedYet
from runtime.spec import AgentfnSpec
from runtime.spec.tools import PythonTool
from runtime.tools.base import Tool
from runtime.tools.builtins import clarify_tool, list_tools_tool, time_date_tool
from runtime.tools.python_tool import python_tool


def build_toolset(spec: AgentfnSpec, agent: str) -> dict[str, Tool]:
    """Name → Tool for everything the agent may call; `agent_clarify` is always included."""
    tools: dict[str, Tool] = {}
    for ref in spec.agents[agent].tools:
        if ref.startswith("builtin:"):
            name = ref.removeprefix("builtin:")
            if name == "get_time_date":
                tools[name] = time_date_tool()
            elif name == "list_tools_available":
                tools[name] = list_tools_tool(lambda: tools)
            elif name != "agent_clarify":
                raise NotImplementedYet(f"built-in tool {name!r} is not available in this version")
        elif ref.startswith("mcp:"):
            raise NotImplementedYet(f"MCP tools ({ref}) are not available in this version")
        else:
            config = spec.tools[ref]
            if isinstance(config, PythonTool):
                tools[ref] = python_tool(ref, config, spec.tools_package)
            else:
                raise NotImplementedYet(
                    f"{config.type} tools ({ref}) are not available in this version"
                )
    tools["agent_clarify"] = clarify_tool()
    return tools
