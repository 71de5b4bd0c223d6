"""How an MCP server's trouble is told: one readable line per failure, never a traceback.

A server that cannot be used never fails the run; it becomes an `McpFailure` (a warning in
the result, a `tools_unavailable` event, an entry in `list_tools_available`). A call that
fails becomes a ToolError the model reads. Both need the real cause: an HTTP 401 surfaces
from the SDK as "MCP error -32603", so the connection watches its responses and
`Rejected` says which server refused, with what status and `WWW-Authenticate` challenge.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class McpFailure:
    """A selected server (or tool) that is unavailable in this run, and why; the run goes on
    without it, and the error is worth logging and showing in `list_tools_available`."""

    server: str
    error: str


class Unavailable(Exception):
    """The server's connection failed (or was given up); the message says why."""


@dataclass(frozen=True)
class Rejected:
    """An HTTP MCP server refused a request as unauthenticated (401) or forbidden (403)."""

    status: int
    challenge: str | None  # the WWW-Authenticate header, as sent

    def describe(self) -> str:
        what = "authentication failed" if self.status == 401 else "access denied"
        line = f"{what}: HTTP {self.status}"
        if self.challenge:
            line += f", WWW-Authenticate: {self.challenge[:300]}"
        return line


class TokenRefused(Exception):
    """The OAuth token endpoint did not issue a token; the message says what it answered."""


def describe_error(exc: BaseException) -> str:
    """One readable line, found inside the exception groups the SDK's task groups raise."""
    from mcp.shared.exceptions import MCPError

    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TokenRefused | Unavailable):  # already described
        return str(exc)
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, TokenRefused):  # raised inside an HTTP auth flow, then wrapped
        return str(cause)
    if isinstance(exc, MCPError):
        return f"MCP error {exc.code}: {exc.message}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
