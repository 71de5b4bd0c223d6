"""Which open protocols serve an agent: A2A (`/a2a/{agent}`) and MCP (`/mcp`, one tool per
agent). Opt-in per agent (`agents.X.protocols`) or for all (`defaults.protocols`): each one
adds routes to the API, so a spec that uses neither deploys exactly as before."""

from pydantic import Field

from runtime.spec.models import SpecModel


class Protocols(SpecModel):
    a2a: bool | None = Field(
        None,
        description="Serve this agent over A2A 1.0: its card at "
        "/a2a/{agent}/.well-known/agent-card.json, JSON-RPC at /a2a/{agent}.",
    )
    mcp: bool | None = Field(
        None, description="List this agent as a tool of the MCP server at /mcp."
    )
