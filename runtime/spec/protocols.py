"""Which open protocols serve an agent: A2A (`/a2a/{agent}`) and MCP (`/mcp`, one tool per
agent). Opt-in per agent (`agents.X.protocols`) or for all (`defaults.protocols`): each one
adds routes to the API, so a spec that uses neither deploys exactly as before."""

import re

from pydantic import Field, field_validator

from runtime.spec.models import SpecModel
from runtime.spec.types import Duration


class Protocols(SpecModel):
    a2a: bool | None = Field(
        None,
        description="Serve this agent over A2A 1.0: its card at "
        "/a2a/{agent}/.well-known/agent-card.json, JSON-RPC at /a2a/{agent}.",
    )
    mcp: bool | None = Field(
        None, description="List this agent as a tool of the MCP server at /mcp."
    )


class RemoteAuth(SpecModel):
    """How agentfn authenticates to a remote A2A agent: headers sent with every request
    (values may be `${secret:NAME}`, resolved at run time, never sent to another origin)."""

    headers: dict[str, str] = Field(
        default_factory=dict, examples=[{"Authorization": "Bearer ${secret:partner-token}"}]
    )


class RemoteAgent(SpecModel):
    """An agent served elsewhere over A2A, asked as a tool (`sub_agents: [{agent: NAME, as:
    tool}]` gives `ask_NAME(task)`): the call sends an A2A message and the run waits for the
    remote task as it waits for a child run; its `input-required` is the run's own question."""

    a2a: str = Field(
        min_length=1,
        description="The agent's A2A base URL; its card is at URL/.well-known/agent-card.json.",
        examples=["https://partner.example.com/a2a/orders"],
    )
    description: str | None = Field(
        None, description="What the ask tool tells the model (default: the card's)."
    )
    auth: RemoteAuth = Field(default_factory=RemoteAuth)
    allow_private: list[str] = Field(
        default_factory=list,
        description="Hosts or CIDRs exempt from the SSRF guard, as for HTTP tools.",
    )
    timeout: Duration = Field(20.0, gt=0, le=25, description="One request to the remote agent.")
    poll_interval: Duration = Field(
        10.0, ge=1, le=3600, description="How often the state machine looks at a remote task."
    )

    @field_validator("a2a")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if not re.match(r"^https?://[^/\s]+", url):
            raise ValueError(f"a2a must be an absolute http(s) URL, got {url!r}")
        return url.rstrip("/")
