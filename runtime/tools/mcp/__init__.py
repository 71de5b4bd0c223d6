"""MCP servers as tools: discover an agent's `mcp:` tools and call them over stdio or HTTP.

- `toolset`: `McpToolset`, one per run advance: discovery (cached per warm container),
  calls, and the failures that never fail a run.
- `connection`: one owner task per server; the transports, and the client agentfn presents
  (its name and version, the capabilities it really has).
- `auth`: OAuth 2 client credentials for hosted HTTP servers.
- `elicitation`: a server's request for input during a call is declined, and the model told.
- `output`: a `tools/call` result as text, images and the whole content for the cache.
- `names`: unique, provider-safe model-facing names; `limits`: the tool-count cap.
- `errors`: failures in one line (a 401 names the server, status and challenge).
- `live`: every open toolset of the process, so `agentfn dev` can close them on shutdown.

The `mcp` SDK (~0.8 s to import) is imported only inside functions, and `auth` (which needs
the SDK's HTTP client) only when a server with `oauth` connects.
"""

from runtime.tools.mcp.connection import stdio_command
from runtime.tools.mcp.errors import McpFailure, describe_error
from runtime.tools.mcp.limits import MAX_TOOLS
from runtime.tools.mcp.live import stop_all
from runtime.tools.mcp.names import tool_name
from runtime.tools.mcp.output import to_rich_output
from runtime.tools.mcp.toolset import LISTINGS, McpToolset, unusable_message

__all__ = [
    "LISTINGS",
    "MAX_TOOLS",
    "McpFailure",
    "McpToolset",
    "describe_error",
    "stdio_command",
    "stop_all",
    "to_rich_output",
    "tool_name",
    "unusable_message",
]
