"""How many tools a model request may carry, and what is left out when MCP servers offer more.

OpenAI-style APIs refuse a request with more than 128 tools (the whole request, every turn),
so an agent that selects a 130-tool server with `mcp:SERVER` would fail on its first model
call. 128 is the smallest limit among the providers agentfn speaks, so it applies to every
agent: the declared tools always stay, then the MCP tools selected one by one
(`mcp:SERVER/TOOL`), then the rest in the agent's order; what does not fit is reported per
server, with the way out (select the tools the agent needs).
"""

from __future__ import annotations

from collections import Counter

from runtime.tools.base import Tool
from runtime.tools.mcp.errors import McpFailure

#: The most tools one model request may offer (OpenAI's limit, the lowest among providers).
MAX_TOOLS = 128


def fit(
    tools: dict[str, Tool], picked: set[str], room: int, total: int
) -> tuple[dict[str, Tool], list[McpFailure]]:
    """At most `room` of `tools` (MCP tools, name → tool, in the agent's order), those whose
    reference is in `picked` first; and a failure per server whose tools were left out.
    `total` is how many tools the agent would have offered with all of them."""
    if len(tools) <= room:
        return tools, []
    ranked = sorted(tools.items(), key=lambda item: item[1].reference not in picked)
    kept = dict(ranked[: max(room, 0)])
    left_out = Counter(server_of(tool) for name, tool in tools.items() if name not in kept)
    offered = Counter(server_of(tool) for tool in tools.values())
    failures = [
        McpFailure(
            server,
            f"{count} of its {offered[server]} tools were left out: with them the agent "
            f"would offer {total} tools, more than the {MAX_TOOLS} a model request may carry "
            f"(OpenAI's limit); select the tools it needs with mcp:{server}/TOOL",
        )
        for server, count in left_out.items()
    ]
    return {name: tool for name, tool in tools.items() if name in kept}, failures


def server_of(tool: Tool) -> str:
    """`mcp:orders/track` → `orders`."""
    return tool.reference.removeprefix("mcp:").partition("/")[0]
